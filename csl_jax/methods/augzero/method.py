"""AugZero as a method of the pipeline: one stage, `generate`.

`RUN/augzero/generate/` gets `candidates.tsv` (copies 2..k of the training
set, streamed: memory does not grow with k) and `stats.json` (sizes,
vocabularies, time, peak memory). Settings: `augzero.AugZeroConfig.*`.
`augzero_mix` is App. C.3's variant (copies mixed inside an example along
the run's CSL grammar: run `csl` first in the same run).
"""

import dataclasses
import os
import resource
import time
from typing import Any, Dict, List, Mapping, Optional, Tuple

import gin

from csl_jax.errors import InputError
from csl_jax.methods import base
from csl_jax.methods.augzero.augment import AugZeroConfig


def generate(out_dir: str, train_path: str, config: AugZeroConfig,
             grammar: Optional[str] = None) -> Dict[str, Any]:
  # pylint: disable=g-import-not-at-top
  from csl_jax.data.tsv import read_tsv, write_tsv
  from csl_jax.files import atomic_write_json
  from csl_jax.methods.augzero import augment as augment_lib
  from csl_jax.qcfg.rules import load_rules
  # pylint: enable=g-import-not-at-top
  start = time.time()
  train = [tuple(x) for x in read_tsv(train_path)]
  candidates = os.path.join(out_dir, "candidates.tsv")
  mix_stats: Dict[str, Any] = {}
  if config.mix:
    pairs = augment_lib.mixed_copies(train, load_rules(grammar), config,
                                     train_path, mix_stats)
  else:
    pairs = augment_lib.copies(train, config, train_path)
  written = write_tsv(candidates, pairs)
  vocab_in = {t for x, _ in train for t in x.split()}
  vocab_out = {t for _, y in train for t in y.split()}
  stats = {
      "k": config.k, "mix": config.mix, **mix_stats,
      "num_original": len(train), "generated": written,
      "num_total": len(train) + written,
      "vocab_input": [len(vocab_in), config.k * len(vocab_in)],
      "vocab_output": [len(vocab_out), config.k * len(vocab_out)],
      "total_seconds": round(time.time() - start, 3),
      "peak_rss_gb": round(resource.getrusage(
          resource.RUSAGE_SELF).ru_maxrss / 2**20, 3),
      "candidates_bytes": os.path.getsize(candidates)}
  atomic_write_json(os.path.join(out_dir, "stats.json"), stats)
  return {**stats, "candidates": candidates}


@gin.configurable(module="augzero")
class AugZero:
  """AugZero (Zhou et al. 2023 §4.3): k copies of the vocabulary."""
  name = "augzero"
  # New tokens (copies): an experiment's vocabulary must have them.
  adds_tokens = True
  # Copies `jump@2` (csl_jax.data.token_copies): selectors read them as the
  # tokens they copy.
  writes_token_copies = True
  # The paper trains on the union of the original and the copies.
  mixing = "union"
  # Copies draw nothing at random (augzero_mix does: `_mixed`).
  seed_params = ()

  def __init__(self, config: Optional[AugZeroConfig] = None):
    self.config = config if config is not None else AugZeroConfig()

  def stages(self, data: base.RunData, workdir: str) -> List[base.Stage]:
    train = data.train
    inputs = [train]
    grammar = None
    if self.config.mix:
      grammar = os.path.join(os.path.dirname(workdir), self.config.grammar)
      if not os.path.isfile(grammar):
        # A relative setting is read under the run directory: say so, as
        # every other file setting is read from the working directory.
        default = AugZeroConfig.__dataclass_fields__["grammar"].default
        where = ("" if os.path.isabs(self.config.grammar) or
                 self.config.grammar == default else
                 f" (augzero.AugZeroConfig.grammar "
                 f"{self.config.grammar!r} is read under the run directory: "
                 "give an absolute path for a grammar of your own)")
        raise InputError(
            f"{self.name} mixes copies along a QCFG and {grammar} does not "
            "exist: list `csl` before it in the run's methods, or set "
            f"augzero.AugZeroConfig.grammar{where}")
      inputs.append(grammar)
    return [base.Stage("generate", inputs, {"augzero": self.config.key()},
                       lambda d: generate(d, train, self.config, grammar))]

  def report_rows(self, summaries: Mapping[str, dict]
                  ) -> List[Tuple[str, str]]:
    s = summaries["generate"]
    mixed = [("augzero mixed copies: pairs the grammar does not derive "
               "(copied whole)", f'{s["not_derived"]:,}')] if s.get("mix") \
        else []
    return mixed + [
        ("augzero k", str(s["k"])),
        ("augzero training pairs (original + copies)",
         f'{s["num_original"]:,} + {s["generated"]:,} = {s["num_total"]:,}'),
        ("augzero input / output vocabulary",
         f'{s["vocab_input"][0]} -> {s["vocab_input"][1]} / '
         f'{s["vocab_output"][0]} -> {s["vocab_output"][1]}'),
        ("augzero time / peak RSS",
         f'{s["total_seconds"]:.1f} s / {s["peak_rss_gb"]:.2f} GB'),
    ]


def _mixed() -> AugZero:
  method = AugZero()
  method.name = "augzero_mix"
  method.config = dataclasses.replace(method.config, mix=True)
  method.seed_params = ("augzero.AugZeroConfig.seed",)
  return method


KS = (20, 200)
base.add(AugZero.name, AugZero)
base.add_variants(AugZero, "k", KS)  # augzero_20, augzero_200
base.add("augzero_mix", _mixed, family=AugZero.name)
