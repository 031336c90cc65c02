"""Sampling in shards: N samples as `num_shards` independent draws, each
with its own seed derived from the run's seed, so the result depends on
(seed, num_shards) and never on how many workers drew the shards — the
local loop here and the Beam pipeline (`beam_sampling`) write the same
bytes.

Output: one file per shard, `samples-SSSSS-of-NNNNN.tsv`, its lines
sorted; with `dedup`, a pair drawn by several shards is kept by the first
of them only (Beam: the minimum shard per line, a combine), so the shards'
files together hold each distinct pair once. `samples.tsv` is their
concatenation in shard order. Memory per worker: one shard. The shards'
directory may be a URL (`gs://...`: `beam.file_urls`), for workers that
share no disk.
"""

import dataclasses
import os
from typing import Callable, Iterable, List, Optional, Tuple

import numpy as np

from csl_jax.beam import file_urls
from csl_jax.errors import InputError
from csl_jax.files import atomic_write_text
from csl_jax.sampling import sampler
from csl_jax.sampling.config import SampleConfig


# Rounds of one shard whose kernel seeds no other shard of the run uses
# (the kernel keeps 32 bits: 2^32 / this = 4,096 shards).
ROUND_STRIDE = 2**20


def shard_seed(seed: int, shard: int) -> int:
  """The sampler seed of shard `shard` of a run seeded `seed`: chosen so
  that round r of shard k gets the kernel seed base + k ROUND_STRIDE + r
  (mod 2^32), a seed of its own for up to 4,096 shards of 2^20 rounds.
  (Independent 32-bit shard seeds made some round of one shard repeat
  another's draws about once in 2,000 runs of 1,000 shards.)"""
  base = int(np.random.SeedSequence([seed]).generate_state(1, np.uint32)[0])
  inverse = pow(sampler.ROUND_SEED_MULTIPLIER, -1, 2**32)
  return (base + shard * ROUND_STRIDE) * inverse % 2**32


def shard_sizes(num: int, num_shards: int) -> List[int]:
  """`num` split into `num_shards` sizes differing by at most one."""
  if num_shards < 1 or num_shards > num:
    raise InputError(f"--shards must be between 1 and --num ({num}), "
                     f"got {num_shards}")
  base, extra = divmod(num, num_shards)
  return [base + (k < extra) for k in range(num_shards)]


def shard_config(config: SampleConfig, shard: int) -> SampleConfig:
  return dataclasses.replace(config, seed=shard_seed(config.seed, shard))


def shard_path(shard_dir: str, shard: int, num_shards: int) -> str:
  return file_urls.join(shard_dir,
                        f"samples-{shard:05d}-of-{num_shards:05d}.tsv")


def prepare(model, config: SampleConfig, use_output_cfg: bool = True,
            progress: bool = False) -> sampler.Prepared:
  """What every shard shares (the output-CFG intersection: seconds on
  COGS), built once per process."""
  return sampler.prepare(model, config,
                         model.output_cfg if use_output_cfg else None,
                         progress)


def sample_shard(model, num: int, num_shards: int, shard: int,
                 config: SampleConfig, use_output_cfg: bool = True,
                 prepared: Optional[sampler.Prepared] = None
                 ) -> Tuple[List[str], dict]:
  """Shard `shard`'s TSV lines (and the sampler's stats) of a run of
  `num`."""
  size = shard_sizes(num, num_shards)[shard]
  prepared = prepared or prepare(model, config, use_output_cfg)
  result = sampler.sample(model, size, shard_config(config, shard),
                          prepared=prepared)
  return [f"{x}\t{y}" for x, y in result.pairs], result.stats


def write_shard(shard_dir: str, shard: int, num_shards: int,
                lines: Iterable[str]) -> None:
  file_urls.write_text(shard_path(shard_dir, shard, num_shards),
                       (line + "\n" for line in sorted(lines)))


def sample_sharded(model, num: int, num_shards: int, config: SampleConfig,
                   shard_dir: str, use_output_cfg: bool = True,
                   on_shard: Optional[Callable[[int, dict], None]] = None,
                   progress: bool = False) -> int:
  """The local runner: writes every shard's file; returns the number of
  lines. `on_shard(shard, stats)` after each; `progress`: the
  intersection's (the shards say theirs by `on_shard`)."""
  prepared = prepare(model, config, use_output_cfg, progress)
  seen = set()
  total = 0
  for shard in range(num_shards):
    lines, stats = sample_shard(model, num, num_shards, shard, config,
                                use_output_cfg, prepared)
    if config.dedup:  # kept by the first shard that drew it
      lines = [line for line in dict.fromkeys(lines) if line not in seen]
      seen.update(lines)
    write_shard(shard_dir, shard, num_shards, lines)
    total += len(lines)
    if on_shard:
      on_shard(shard, stats)
  return total


def concatenate(out_dir: str, num_shards: int,
                shard_dir: Optional[str] = None) -> Tuple[str, int]:
  """OUT_DIR/samples.tsv, the shards' files (in `shard_dir`, default
  `out_dir`) in shard order (streamed), and its number of lines."""
  count = [0]

  def lines():
    for shard in range(num_shards):
      for line in file_urls.read_lines(shard_path(shard_dir or out_dir, shard,
                                                  num_shards)):
        count[0] += 1
        yield line
  path = os.path.join(out_dir, "samples.tsv")
  atomic_write_text(path, lines())
  return path, count[0]
