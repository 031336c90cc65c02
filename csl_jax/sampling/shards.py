"""Sampling in shards: N samples as `num_shards` independent draws, each
with its own seed derived from the run's seed, so the result depends on
(seed, num_shards) and never on how many workers drew the shards — the
local loop here and the Beam pipeline (`beam_sampling`) give the same
pairs. With `dedup`, each shard is deduplicated and then the union
(Beam: `Distinct`); the output is the sorted lines, one order for every
runner.
"""

import dataclasses
from typing import Iterator, List, Optional, Tuple

import numpy as np

from csl_jax.errors import InputError
from csl_jax.sampling import sampler
from csl_jax.sampling.config import SampleConfig


def shard_seed(seed: int, shard: int) -> int:
  """The sampler seed of shard `shard` of a run seeded `seed`."""
  return int(np.random.SeedSequence([seed, shard]).generate_state(
      1, np.uint32)[0])


def shard_sizes(num: int, num_shards: int) -> List[int]:
  """`num` split into `num_shards` sizes differing by at most one."""
  if num_shards < 1 or num_shards > num:
    raise InputError(f"--shards must be between 1 and --num ({num}), "
                     f"got {num_shards}")
  base, extra = divmod(num, num_shards)
  return [base + (k < extra) for k in range(num_shards)]


def shard_config(config: SampleConfig, shard: int) -> SampleConfig:
  return dataclasses.replace(config, seed=shard_seed(config.seed, shard))


def prepare(model, config: SampleConfig, use_output_cfg: bool = True
            ) -> sampler.Prepared:
  """What every shard shares (the output-CFG intersection: seconds on
  COGS), built once per process."""
  return sampler.prepare(model, config,
                         model.output_cfg if use_output_cfg else None)


def sample_shard(model, num: int, num_shards: int, shard: int,
                 config: SampleConfig, use_output_cfg: bool = True,
                 prepared: Optional[sampler.Prepared] = None
                 ) -> Tuple[List[Tuple[str, str]], dict]:
  """Shard `shard`'s pairs (and the sampler's stats) of a run of `num`."""
  size = shard_sizes(num, num_shards)[shard]
  prepared = prepared or prepare(model, config, use_output_cfg)
  result = sampler.sample(model, size, shard_config(config, shard),
                          model.output_cfg if use_output_cfg else None,
                          prepared)
  return result.pairs, result.stats


def sample_sharded(model, num: int, num_shards: int, config: SampleConfig,
                   use_output_cfg: bool = True,
                   on_shard: Optional[callable] = None
                   ) -> Iterator[str]:
  """The local runner: the sorted TSV lines of every shard's pairs (their
  union when `config.dedup`). `on_shard(shard, stats)` after each."""
  lines = []
  prepared = prepare(model, config, use_output_cfg)
  for shard in range(num_shards):
    pairs, stats = sample_shard(model, num, num_shards, shard, config,
                                use_output_cfg, prepared)
    lines.extend(f"{x}\t{y}" for x, y in pairs)
    if on_shard:
      on_shard(shard, stats)
  if config.dedup:
    lines = set(lines)
  return iter(sorted(lines))
