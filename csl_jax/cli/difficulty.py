"""`csl-jax difficulty`: training subsets by example difficulty (Zhou et al.
2023 §5.1): scores every training example, then writes quantile subsets, an
easy/hard mix and `--max_score` subsets, each a dataset directory
(`csl_jax/difficulty/subsets.py`)."""

from absl import logging

from csl_jax.cli import stage


def add_parser(subparsers) -> None:
  p = subparsers.add_parser(
      "difficulty", help="difficulty scores and subsets of a training set")
  p.add_argument("--data_dir", required=True,
                 help="a directory with train.tsv (and test.tsv, ...)")
  p.add_argument("--out", required=True, help="the subsets' directory")
  p.add_argument("--score", default="prototype",
                 choices=("length", "primitives", "prototype", "learning"))
  p.add_argument("--runs", nargs="+", default=[],
                 help="learning: trained directories (one per seed) of "
                 "runs with seq2seq.TrainConfig.track_train_every > 0")
  p.add_argument("--quantiles", type=int, default=4)
  p.add_argument("--max_score", type=float, action="append", default=[],
                 help="also the subset scoring at most this (repeatable)")
  p.add_argument("--k", type=int, default=100,
                 help="prototype: k-means clusters (the paper: 100)")
  p.add_argument("--seed", type=int, default=0)
  p.add_argument("--pin", help="a TSV of training pairs kept in every "
                 "subset, outside the quantiles (SMCalFlow-CS's few-shot "
                 "examples, Zhou et al. App. G.1)")


def main(args) -> int:
  from csl_jax.difficulty import subsets  # pylint: disable=g-import-not-at-top
  from csl_jax.errors import InputError  # pylint: disable=g-import-not-at-top
  if args.runs and args.score != "learning":  # else unread, unsaid
    raise InputError(f"--runs is read by --score learning, not --score "
                     f"{args.score}")
  # As every stage: one process at a time in --out, the command and the
  # provenance recorded.
  summary = stage.run(args.out, subsets.write, args.data_dir, args.score,
                      args.quantiles, args.max_score, args.seed, args.k,
                      args.runs, args.pin)
  for name, s in summary["subsets"].items():
    logging.info("%s: %d examples, %s %g..%g", name, s["size"],
                 args.score, s["score_min"], s["score_max"])
  return 0
