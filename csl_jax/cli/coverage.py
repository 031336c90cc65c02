"""`csl-jax coverage`: how much of a dataset a QCFG parses and derives."""

import argparse

from csl_jax.cli import stage
from csl_jax.errors import InputError


def add_parser(subparsers) -> None:
  parser = subparsers.add_parser(
      "coverage", help="share of a dataset's inputs/pairs a QCFG covers")
  parser.add_argument("--grammar", required=True, help="a .qcfg file")
  parser.add_argument("--data", required=True, help="input<TAB>output TSV")
  parser.add_argument("--max_nts", type=int)
  parser.add_argument("--max_source_len", type=int,
                      help=stage.SOURCE_HELP)
  parser.add_argument("--max_target_len", type=int,
                      help=stage.TARGET_HELP)
  parser.add_argument("--skip_malformed", action="store_true", default=None)
  parser.add_argument("--skip_too_long", action="store_true", default=None,
                      help="count longer pairs as not derived")
  parser.add_argument("--out", required=True)


def main(args: argparse.Namespace) -> int:
  from csl_jax.methods.csl import coverage as coverage_lib  # pylint: disable=g-import-not-at-top
  if args.max_nts is not None and args.max_nts < 0:
    raise InputError(f"--max_nts must be >= 0, got {args.max_nts}")
  stage.run(args.out, coverage_lib.coverage, args.grammar, args.data,
            **stage.given(args, "max_nts", "max_source_len",
                          "max_target_len", "skip_malformed",
                          "skip_too_long"))
  return 0


def register_configurables() -> None:
  """The stage's gin configurables come with its library (and Numba): only
  this command pays for the import."""
  from csl_jax.methods.csl import coverage  # pylint: disable=g-import-not-at-top,unused-import
