"""`csl-jax sample`: synthetic pairs from a fitted CSL model."""

import argparse
import dataclasses
import os
from typing import Optional

import gin

from csl_jax.cli import stage
from csl_jax.data import tsv
from csl_jax.model.saved import load_model
from csl_jax.sampling import sampler


@gin.configurable(module="sample")
def sample(out_dir: str, model: str, num: int = 100_000,
           use_output_cfg: bool = True,
           config: Optional[sampler.SampleConfig] = None) -> dict:
  """Writes DIR/samples.tsv and DIR/summary.json (rates, distinct inputs)."""
  config = config or sampler.SampleConfig()
  with stage.stage(out_dir, stage.command_line()) as summary:
    saved = load_model(model)
    result = sampler.sample(saved, num, config,
                            saved.output_cfg if use_output_cfg else None)
    tsv.write_tsv(os.path.join(out_dir, "samples.tsv"), result.pairs)
    summary.update(model=os.fspath(model), num_requested=num,
                   num_examples=len(result.pairs),
                   config=dataclasses.asdict(config),
                   **{k: v for k, v in result.stats.items()
                      if k != "seconds"},
                   sample_seconds=round(result.stats["seconds"], 3))
  return dict(summary)


def add_parser(subparsers) -> None:
  p = subparsers.add_parser("sample", help="sample synthetic pairs")
  p.add_argument("--model", required=True, help="a `csl-jax fit` directory")
  p.add_argument("--num", type=int)
  p.add_argument("--seed", type=int)
  p.add_argument("--temperature", type=float, help="inf: uniform p(r | s)")
  p.add_argument("--depth_bias", type=float)
  p.add_argument("--max_depth", type=int)
  p.add_argument("--dedup", action="store_true", default=None)
  p.add_argument("--out", required=True)


def main(args: argparse.Namespace) -> int:
  overrides = {k: getattr(args, k) for k in (
      "seed", "temperature", "depth_bias", "max_depth", "dedup")
               if getattr(args, k) is not None}
  config = sampler.SampleConfig()
  if overrides:
    config = dataclasses.replace(config, **overrides)
  kwargs = {"num": args.num} if args.num else {}
  sample(args.out, args.model, config=config, **kwargs)
  return 0
