"""`csl-jax parse` and `csl-jax evaluate`: CSL as a parser, scored."""

import argparse

from csl_jax.cli import stage


def add_parser(subparsers) -> None:
  p = subparsers.add_parser("parse", help="parse inputs with a fitted model")
  p.add_argument("--model", required=True, help="a `csl-jax fit` directory")
  p.add_argument("--data", required=True, help="input<TAB>output TSV")
  p.add_argument("--k", type=int, help="k-best: the best of the k best "
                 "derivations whose output the model's output CFG accepts "
                 "(default: viterbi.DEFAULT_CFG_K, 16, with an output CFG, "
                 "else 1); a smaller k can leave inputs unparsed")
  p.add_argument("--max_source_len", type=int, help=stage.SOURCE_HELP)
  p.add_argument("--skip_too_long", action="store_true", default=None,
                 help="leave longer inputs unparsed (counted in the "
                 "summary)")
  p.add_argument("--out", required=True)
  p = subparsers.add_parser(
      "evaluate", help="exact match, coverage breakdown, ensemble")
  p.add_argument("--predictions", required=True,
                 help="CSL's predictions.tsv (from `csl-jax parse`)")
  p.add_argument("--other", help="another system's predictions, used "
                 "where CSL has no output: input<TAB>prediction, or a "
                 "`parse` or `decode` predictions.tsv")
  p.add_argument("--out", required=True)


def main(args: argparse.Namespace) -> int:
  from csl_jax.methods.csl import parse as parse_lib  # pylint: disable=g-import-not-at-top
  if args.subcommand == "parse":
    stage.run(args.out, parse_lib.parse, args.model, args.data,
              **stage.given(args, "k", "max_source_len", "skip_too_long"))
  else:
    stage.run(args.out, parse_lib.evaluate, args.predictions, args.other)
  return 0


def register_configurables() -> None:
  """The stage's gin configurables come with its library (and Numba): only
  this command pays for the import."""
  from csl_jax.methods.csl import parse  # pylint: disable=g-import-not-at-top,unused-import
