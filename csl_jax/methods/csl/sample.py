"""Synthetic pairs from a fitted CSL model (`csl-jax sample`)."""

import os
from typing import Any, Dict, Optional

import gin

from csl_jax import configs
from csl_jax.data import tsv
from csl_jax.errors import InputError
from csl_jax.model.csl_model import CSLModel
from csl_jax.sampling import sampler


@gin.configurable(module="sample")
def sample(out_dir: str, model: str, num: int = 100_000,
           use_output_cfg: bool = True,
           config: Optional[sampler.SampleConfig] = None) -> Dict[str, Any]:
  """Writes DIR/samples.tsv; returns the summary (rates, distinct inputs,
  `candidates`: the samples file, for the pipeline)."""
  if num < 1:
    raise InputError(f"num must be >= 1, not {num}")
  config = config or sampler.SampleConfig()
  csl = CSLModel.load(model)
  os.makedirs(out_dir, exist_ok=True)
  result = csl.sample(num, config, use_output_cfg)
  path = os.path.join(out_dir, "samples.tsv")
  tsv.write_tsv(path, result.pairs)
  summary = dict(model=os.fspath(model), num_requested=num,
                 num_examples=len(result.pairs),
                 config=configs.to_json(config), candidates=path,
                 sample_seconds=round(result.stats["seconds"], 3))
  summary.update({k: v for k, v in result.stats.items() if k != "seconds"})
  return summary
