"""`csl-jax experiment`: a (split × training data × seed) grid of seq2seq
runs on the augmentation pipeline, with the papers' tables and plots."""

import argparse
from typing import List



def add_parser(subparsers) -> None:
  p = subparsers.add_parser(
      "experiment", help="train and score a split × data × seed grid",
      epilog="The grid comes from gin (experiment.*, seq2seq.*): e.g. "
      "--gin_file=gin/experiments/scan_addprim_jump.gin.")
  p.add_argument("--out", required=True, help="the experiment directory")
  p.add_argument("--wait", action="store_true", default=None,
                 help="wait for another run holding --out instead of "
                 "stopping (experiment.wait)")


def main(args: argparse.Namespace) -> int:
  from csl_jax.experiments import runner  # pylint: disable=g-import-not-at-top
  runner.run(args.out, gin_files=getattr(args, "gin_files", ()),
             **({"wait": True} if args.wait else {}))
  return 0


def register_configurables() -> None:
  """The trainer's and the methods' gin configurables."""
  # pylint: disable=g-import-not-at-top,unused-import
  from csl_jax import methods
  from csl_jax.experiments import runner
  from csl_jax.model import train as csl_train
  from csl_jax.seq2seq import models, train


def gin_defaults(args: argparse.Namespace, files: List[str]) -> List[str]:
  """The dataset's gin files for the grid's methods
  (`csl_jax/gin_defaults.py`) that its `files` do not load; they come
  after."""
  del args  # the grid is all gin
  from csl_jax import gin_defaults as defaults  # pylint: disable=g-import-not-at-top
  return defaults.missing(defaults.bound("experiment.dataset", None),
                         defaults.bound("experiment.methods", ["csl"]), files)
