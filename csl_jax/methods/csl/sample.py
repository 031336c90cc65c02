"""Synthetic pairs from a fitted CSL model (`csl-jax sample`)."""

import os
from typing import Any, Dict, Optional, Sequence

import gin

from csl_jax import configs
from csl_jax.beam import file_urls
from csl_jax.data import tsv
from csl_jax.errors import InputError
from csl_jax.model.csl_model import CSLModel
from csl_jax.progress import progress
from csl_jax.sampling import sampler
from csl_jax.sampling import shards as shards_lib


@gin.configurable(module="sample")
def sample(out_dir: str, model: str, num: int = 100_000,
           use_output_cfg: bool = True,
           config: Optional[sampler.SampleConfig] = None,
           shards: Optional[int] = None, runner: Optional[str] = None,
           pipeline_args: Sequence[str] = (),
           shard_dir: Optional[str] = None) -> Dict[str, Any]:
  """Writes DIR/samples.tsv; returns the summary (rates, distinct inputs,
  `candidates`: the samples file, for the pipeline).

  `shards`: draw in that many independently seeded shards (`shards.py`:
  DIR/samples-SSSSS-of-NNNNN.tsv, and samples.tsv their concatenation);
  with `runner`, as an Apache Beam pipeline (the same bytes);
  `pipeline_args`: Beam flags. `shard_dir`: where the shard files go
  (default DIR), e.g. `gs://bucket/run` for workers that share no disk;
  samples.tsv is still DIR's.
  """
  if num < 1:
    raise InputError(f"num must be >= 1, not {num}")
  config = config or sampler.SampleConfig()
  if pipeline_args and runner is None:
    raise InputError(f"Beam pipeline flags {list(pipeline_args)} need "
                     "--runner")
  if shard_dir is not None and shards is None:
    raise InputError("--shard_dir needs --shards N")
  if runner is not None or shards is not None:
    return _sharded(out_dir, model, num, use_output_cfg, config,
                    1 if shards is None else shards, runner, pipeline_args,
                    shard_dir or out_dir)
  csl = CSLModel.load(model)
  os.makedirs(out_dir, exist_ok=True)
  result = csl.sample(num, config, use_output_cfg, progress=True)
  path = os.path.join(out_dir, "samples.tsv")
  tsv.write_tsv(path, result.pairs)
  summary = dict(model=os.fspath(model), num_requested=num,
                 num_examples=len(result.pairs),
                 config=configs.to_json(config), candidates=path,
                 sample_seconds=round(result.stats["seconds"], 3))
  summary.update({k: v for k, v in result.stats.items() if k != "seconds"})
  return summary


def _sharded(out_dir: str, model: str, num: int, use_output_cfg: bool,
             config: sampler.SampleConfig, num_shards: int,
             runner: Optional[str], pipeline_args: Sequence[str],
             shard_dir: str) -> Dict[str, Any]:
  shards_lib.shard_sizes(num, num_shards)  # a clear error before any work
  os.makedirs(out_dir, exist_ok=True)
  file_urls.make_dirs(shard_dir)
  # Another shard count's (or an earlier run's) files.
  file_urls.delete(file_urls.matching(shard_dir, "samples-*-of-*.tsv"))
  summary = dict(model=os.fspath(model), num_requested=num,
                 num_shards=num_shards, config=configs.to_json(config),
                 runner=runner or "local")
  if runner is None:
    csl = CSLModel.load(model)
    attempts = [0]
    # A line per tenth of the shards (and a minute) with the time left, not
    # one per shard.
    bar = progress(total=num_shards, desc="sample shards", unit="shard",
                   mininterval=1.0)

    def on_shard(shard, stats):
      del shard
      attempts[0] += stats["num_attempts"]
      bar.set_postfix(pairs=stats["num_samples"])
      bar.update(1)

    shards_lib.sample_sharded(csl, num, num_shards, config, shard_dir,
                              use_output_cfg, on_shard, progress=True)
    bar.close()
    summary["num_attempts"] = attempts[0]
  else:
    # pylint: disable=g-import-not-at-top
    from csl_jax.sampling import beam_sampling
    # pylint: enable=g-import-not-at-top
    beam_sampling.run(model, num, num_shards, config, shard_dir, runner,
                      pipeline_args, use_output_cfg)
    summary["pipeline_args"] = list(pipeline_args)
  path, count = shards_lib.concatenate(out_dir, num_shards, shard_dir)
  summary.update(candidates=path, num_examples=count,
                 shard_files=[shards_lib.shard_path(shard_dir, k, num_shards)
                              for k in range(num_shards)])
  return summary
