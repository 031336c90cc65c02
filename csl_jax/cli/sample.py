"""`csl-jax sample`: synthetic pairs from a fitted CSL model."""

import argparse
import dataclasses

from csl_jax.cli import stage
from csl_jax.sampling.config import SampleConfig

_DEFAULTS = SampleConfig()


def add_parser(subparsers) -> None:
  p = subparsers.add_parser(
      "sample", help="sample synthetic pairs",
      epilog="Flags left out take their gin bindings (sample.*, "
      "SampleConfig.*), else the defaults shown.")
  p.add_argument("--model", required=True, help="a `csl-jax fit` directory")
  p.add_argument("--num", type=int, help="pairs to draw, >= 1 "
                 "(default: 100000)")
  p.add_argument("--seed", type=int, help=f"default: {_DEFAULTS.seed}")
  p.add_argument("--temperature", type=float,
                 help="> 0; inf: uniform p(r | s) "
                 f"(default: {_DEFAULTS.temperature})")
  p.add_argument("--depth_bias", type=float,
                 help=f"default: {_DEFAULTS.depth_bias}")
  p.add_argument("--max_depth", type=int,
                 help=f">= 1 (default: {_DEFAULTS.max_depth})")
  p.add_argument("--dedup", action="store_true", default=None,
                 help="distinct pairs only (the summary counts any shortfall)")
  p.add_argument("--shards", type=int,
                 help="draw in N independently seeded shards (the result "
                 "depends on --seed and N, not on workers)")
  p.add_argument("--shard_dir",
                 help="with --shards: where the shard files go (default: "
                 "--out), e.g. gs://bucket/dir for Beam workers that share "
                 "no disk (URLs need apache-beam)")
  p.add_argument("--out", required=True)
  stage.add_runner_flags(p)


def main(args: argparse.Namespace) -> int:
  overrides = stage.given(args, "seed", "temperature", "depth_bias",
                          "max_depth", "dedup")
  from csl_jax.methods.csl import sample as sample_lib  # pylint: disable=g-import-not-at-top
  config = dataclasses.replace(SampleConfig(), **overrides)
  stage.run(args.out, sample_lib.sample, args.model, config=config,
            pipeline_args=args.pipeline_args,
            **stage.given(args, "num", "shards", "runner", "shard_dir"))
  return 0


def register_configurables() -> None:
  """The stage's gin configurables come with its library (and Numba)."""
  from csl_jax.methods.csl import sample  # pylint: disable=g-import-not-at-top,unused-import
