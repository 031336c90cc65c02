"""`csl-jax augment`: the whole pipeline for one dataset split."""

import argparse
import sys
from typing import List

from absl import logging
import gin

from csl_jax.cli import stage
from csl_jax.data import registry as data_registry


def add_parser(subparsers) -> None:
  p = subparsers.add_parser(
      "augment", help="data -> method stages -> [selection] -> report",
      epilog="Flags left out take their gin bindings (augment.*), else "
      "the defaults shown.")
  p.add_argument("--out", required=True, help="the run directory")
  p.add_argument("--dataset", choices=data_registry.names(),
                 help="default: scan; a built-in one brings each method's "
                 "settings for it (gin/<method>/<dataset>.gin), read "
                 "before your gin files and bindings")
  p.add_argument("--split", help="default: the dataset's (scan: "
                 "addprim_jump)")
  p.add_argument("--data_dir", help="the dataset's files (not for scan)")
  # Names are checked by the library (one line, exit 2): listing them
  # here would load every method's kernels for any command's --help.
  p.add_argument("--method", action="append", dest="methods",
                 help="a method: csl, geca, pcfg_bt, primaug, augzero or a "
                 "variant (pcfg_bt_uniform, primaug_20, augzero_mix, ...; "
                 "README); repeatable; default: csl")
  p.add_argument("--select", nargs="+",
                 help="keep each selector's subset of each method's "
                 "candidates (random, uat, cmaxent, cmaxent_uat; one or "
                 "more)")
  p.add_argument("--select_num", type=int, help="how many each keeps")
  p.add_argument("--select_seed", type=int, help="default: 0")
  p.add_argument("--wait", action="store_true", default=None,
                 help="wait for another run holding --out instead of "
                 "stopping")
  p.add_argument("--shards", type=int,
                 help="CSL's sampling and forests, UAT's templating and "
                 "GECA's index in N shards (samples depend on --seed and N, "
                 "the others on neither)")
  stage.add_runner_flags(p)


# The exit status of a run whose methods finished but for work that waits
# elsewhere (pcfg_bt's programs for T5X): rerun once that is done.
EXIT_PENDING = 3


def main(args: argparse.Namespace) -> int:
  # pylint: disable=g-import-not-at-top
  from csl_jax.errors import Pending
  from csl_jax.pipeline import augment as pipeline
  # pylint: enable=g-import-not-at-top
  if args.split is not None:
    data_registry.get(_dataset(args)).check_split_flag(args.split)
  try:
    summary = pipeline.augment(args.out, **stage.given(
        args, "dataset", "split", "data_dir", "methods", "select",
        "select_num", "select_seed", "wait", "shards", "runner"),
                     **({"pipeline_args": args.pipeline_args}
                        if args.pipeline_args else {}))
  except Pending as e:
    print(e.how or f"waiting: {', '.join(e.cells)}", file=sys.stderr)
    return EXIT_PENDING
  print(f"csl-jax augment: done; the report is {summary['report']} "
        "(and report.md beside it)")
  return 0


def _dataset(args: argparse.Namespace) -> str:
  """The dataset the run prepares: the flag, else gin's, else SCAN."""
  if args.dataset:
    return args.dataset
  try:
    return gin.query_parameter("augment.dataset")
  except ValueError:  # not bound
    return "scan"


def register_configurables() -> None:
  """FitConfig comes with JAX: only commands that fit import it. The
  seq2seq configs (pcfg_bt's reverse model) are light."""
  # pylint: disable=g-import-not-at-top,unused-import
  from csl_jax.model import train
  from csl_jax.pipeline import augment
  from csl_jax.seq2seq import config


def gin_defaults(args: argparse.Namespace, files: List[str]) -> List[str]:
  """The dataset's gin files for the run's methods (`csl_jax/gin_defaults.py`)
  that the user's `files` do not load: the dataset and methods from the
  flags, else the gin bindings, else the defaults."""
  from csl_jax import gin_defaults as defaults  # pylint: disable=g-import-not-at-top
  dataset = args.dataset or defaults.bound("augment.dataset", "scan")
  if dataset == "tsv" and not files:
    logging.info("tsv: no dataset settings, so each method runs its class "
                 "defaults; a built-in dataset's (e.g. --gin_file=gin/csl/"
                 "geoquery_augment.gin) may fit your data better")
  methods = args.methods or defaults.bound("augment.methods", ["csl"])
  for fam in defaults.without_settings(dataset, methods):
    logging.info("%s: no %s, so %s runs its class defaults on %s (unless "
                 "your gin files set it)", fam, defaults.path(fam, dataset),
                 fam, dataset)
  return defaults.missing(dataset, methods, files)
