"""`csl-jax induce`: a QCFG from training pairs (CSL grammar induction)."""

import argparse

from csl_jax.cli import stage


def add_parser(subparsers) -> None:
  parser = subparsers.add_parser(
      "induce", help="induce a QCFG from training pairs (CSL)")
  parser.add_argument("--train", required=True, help="input<TAB>output TSV")
  parser.add_argument("--seed_rules", help="a .qcfg file of seed rules")
  parser.add_argument("--output_cfg", help="the task's output CFG (.cfg)")
  parser.add_argument("--skip_malformed", action="store_true", default=None)
  parser.add_argument("--max_source_len", type=int, help=stage.SOURCE_HELP)
  parser.add_argument("--max_target_len", type=int, help=stage.TARGET_HELP)
  parser.add_argument("--skip_too_long", action="store_true", default=None,
                      help="leave longer pairs out (counted in the summary)")
  parser.add_argument("--out", required=True)


def main(args: argparse.Namespace) -> int:
  from csl_jax.methods.csl import induce as induce_lib  # pylint: disable=g-import-not-at-top
  stage.run(args.out, induce_lib.induce, args.train,
            **stage.given(args, "seed_rules", "output_cfg", "skip_malformed",
                          "max_source_len", "max_target_len",
                          "skip_too_long"))
  return 0


def register_configurables() -> None:
  """The stage's gin configurables come with its library (and Numba): only
  this command pays for the import."""
  from csl_jax.methods.csl import induce  # pylint: disable=g-import-not-at-top,unused-import
