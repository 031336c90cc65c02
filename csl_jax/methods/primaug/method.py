"""Primitive augmentation as a method of the pipeline: one stage, `generate`.

`RUN/primaug/generate/` gets `candidates.tsv` (the new pairs: copies of the
primitives; the original data is the run's) and `stats.json` (the primitive
units found, pairs per example, time, peak memory). Settings:
`primaug.PrimAugConfig.*`.
"""

import os
import resource
import time
from typing import Any, Dict, List, Mapping, Optional, Tuple

import gin

from csl_jax import configs
from csl_jax.methods import base
from csl_jax.methods.primaug.augment import PrimAugConfig


def generate(out_dir: str, train_path: str,
             config: PrimAugConfig) -> Dict[str, Any]:
  # pylint: disable=g-import-not-at-top
  from csl_jax.data.tsv import read_tsv, write_tsv
  from csl_jax.files import atomic_write_json
  from csl_jax.methods.primaug import augment as augment_lib
  # pylint: enable=g-import-not-at-top
  start = time.time()
  train = [tuple(x) for x in read_tsv(train_path)]
  new, stats = augment_lib.augment(train, config, train_path)
  candidates = os.path.join(out_dir, "candidates.tsv")
  write_tsv(candidates, new)
  stats["total_seconds"] = round(time.time() - start, 3)
  stats["peak_rss_gb"] = round(resource.getrusage(
      resource.RUSAGE_SELF).ru_maxrss / 2**20, 3)
  atomic_write_json(os.path.join(out_dir, "stats.json"), stats)
  summary = {k: v for k, v in stats.items() if k != "seconds"}
  summary["candidates"] = candidates
  return summary


@gin.configurable(module="primaug")
class PrimAug:
  """Primitive augmentation (Zhou et al. 2023 §3; Jiang et al. 2022)."""
  name = "primaug"
  # New tokens (copies): an experiment's vocabulary must have them.
  adds_tokens = True
  # Copies `jump@2` (csl_jax.data.token_copies): selectors read them as the
  # tokens they copy.
  writes_token_copies = True
  # The paper trains on the union of the original and the copies.
  mixing = "union"
  seed_params = ("primaug.PrimAugConfig.seed",)  # what experiment seeds may bind

  def __init__(self, config: Optional[PrimAugConfig] = None):
    self.config = config if config is not None else PrimAugConfig()

  def stages(self, data: base.RunData, workdir: str) -> List[base.Stage]:
    del workdir
    train = data.train
    return [base.Stage("generate", [train],
                       {"primaug": configs.to_json(self.config)},
                       lambda d: generate(d, train, self.config))]

  def report_rows(self, summaries: Mapping[str, dict]
                  ) -> List[Tuple[str, str]]:
    s = summaries["generate"]
    shown = "; ".join(f'{" ".join(a)} -> {" ".join(b)}'
                      for a, b in s["units"][:8])
    more = len(s["units"]) - 8
    return [
        ("primaug factor K / forms per primitive (itself included)",
         f'{s["factor"]} / {s.get("forms", s["factor"])}'),
        ("primaug primitives (Eq. 1 lexicon units)",
         f'{s["num_units"]}: {shown}' + (f" (+{more})" if more > 0 else "")),
        ("primaug examples with a primitive",
         f'{s["num_with_primitives"]:,} of {s["num_original"]:,}'),
        ("primaug new pairs", f'{s["generated"]:,}'),
        ("primaug time / peak RSS",
         f'{s["total_seconds"]:.1f} s / {s["peak_rss_gb"]:.2f} GB'),
    ]


FACTORS = (2, 20, 200)
base.add(PrimAug.name, PrimAug)
base.add_variants(PrimAug, "factor", FACTORS)  # primaug_2, ...
