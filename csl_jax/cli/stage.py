"""What every stage command shares: timing, `summary.json`, clean errors."""

import argparse
import contextlib
import os
import sys
import time
from typing import Any, Dict, Iterator

from absl import logging

from csl_jax.errors import InputError
from csl_jax.files import atomic_write_json
from csl_jax import provenance
from csl_jax.pipeline import lock


class Summary(dict):
  """The stage's headline figures; written as DIR/summary.json."""


@contextlib.contextmanager
def stage(out_dir: str, command: str) -> Iterator[Summary]:
  """Runs a stage body; on success writes `out_dir/summary.json` with
  `command`, `seconds` and whatever the body put into the summary.

  One process at a time in `out_dir` (`lock.run_lock`): two `fit`s into
  one directory both exited 0, the second's summary describing the first's
  parameters, or the other way round."""
  with lock.run_lock(out_dir, wait_flag=False):
    provenance.write(out_dir)
    summary = Summary()
    start = time.time()
    yield summary
    record: Dict[str, Any] = {"command": command,
                              "seconds": round(time.time() - start, 3)}
    record.update(summary)
    atomic_write_json(os.path.join(out_dir, "summary.json"), record)
    logging.info("wrote %s", os.path.join(out_dir, "summary.json"))


# The length bounds' help (csl_jax.cky.forest's defaults, not imported:
# `--help` should not pay for Numba; tests/test_cli.py checks them).
SOURCE_HELP = ("input tokens at most (default: 64, or the stage's gin "
               "binding); a longer example is an error, or with "
               "--skip_too_long left out")
TARGET_HELP = ("output tokens at most (default: 256, or the stage's gin "
               "binding)")


def add_runner_flags(parser: argparse.ArgumentParser) -> None:
  """--runner and the Beam flags after `--` (`args.pipeline_args`)."""
  parser.add_argument("--runner", help="run as an Apache Beam pipeline: "
                      "DirectRunner, DataflowRunner, FlinkRunner, "
                      "SparkRunner; more Beam flags after `--`, e.g. -- "
                      "--direct_num_workers=2 "
                      "--direct_running_mode=multi_processing")
  parser.add_argument("pipeline_args", nargs="*", help=argparse.SUPPRESS)


def check_pipeline_args(args) -> None:
  """Beam's flags start with `-`: a word in their place is a stray value,
  such as a second method after one `--method` (`--method csl geca`)."""
  extra = getattr(args, "pipeline_args", None) or []
  if extra and not extra[0].startswith("-"):
    raise InputError(f"unexpected argument {extra[0]!r}: each flag takes "
                     "one value (repeat it, e.g. --method csl --method "
                     "geca); Beam's flags go after `--`")
  if getattr(args, "runner", None):
    # A missing apache-beam or an unknown runner fails now, not after the
    # stages before the first one that runs on Beam.
    from csl_jax.beam import options  # pylint: disable=g-import-not-at-top
    options.pipeline_options(args.runner, extra)


def given(args, *names: str, rename=None) -> Dict[str, Any]:
  """The flags the user gave, as keyword arguments (`rename`: flag -> arg).

  Flags left out are not passed, so gin bindings and the library's
  defaults apply.
  """
  rename = rename or {}
  return {rename.get(n, n): getattr(args, n) for n in names
          if getattr(args, n, None) is not None}


def run(out_dir: str, fn, *args, **kwargs) -> Dict[str, Any]:
  """Calls a library stage function `fn(out_dir, ...)` that returns its
  summary, and writes that as `out_dir/summary.json` with the command line
  and the time taken."""
  with stage(out_dir, provenance.command_line()) as summary:
    summary.update(fn(out_dir, *args, **kwargs))
  return dict(summary)


def report_input_error(e: InputError) -> int:
  print(f"csl-jax: error: {e.text}", file=sys.stderr)
  return 2
