"""CSL (Qiu et al., 2022) as a method of the pipeline.

Stages, each in `RUN/csl/<stage>/`:
  induce  the QCFG from the training pairs          (`induce.induce`)
  fit     the latent-state model over its forests    (`fit.fit`)
  parse   the held-out part with the Viterbi parser  (`parse.parse`)
  sample  synthetic pairs from the fitted model      (`sample.sample`)
Each is configured by its gin bindings (`induce.*`, `InductionConfig.*`,
`fit.*`, `FitConfig.*`, `parse.*`, `sample.*`, `SampleConfig.*`) and keyed
by exactly those, so changing a sampling setting redoes only sampling.
"""

import os
from typing import Any, Dict, List, Mapping, Tuple

import gin

from csl_jax import configs
from csl_jax.methods import base
from csl_jax import compile_ahead
from csl_jax.methods.csl import fit as fit_lib
from csl_jax.methods.csl import induce as induce_lib
from csl_jax.methods.csl import parse as parse_lib
from csl_jax.methods.csl import sample as sample_lib
from csl_jax import assets

# Parameters that name files: they key the cache by content (as inputs),
# not by path.
_FILE_PARAMS = ("output_cfg", "seed_rules", "eval_data", "unlabeled")
# Parameters that do not change a stage's result (Beam runs give the local
# results; forests are the same in any number of shards; samples the same
# wherever their shard files are kept).
_BOOKKEEPING = ("tensorboard", "summary_every", "runner", "pipeline_args",
                "forest_shards", "forest_dir", "shard_dir")


def _stage_config(fn, exclude) -> Tuple[Dict[str, Any], List[str]]:
  """(JSON config, input files) of a gin-configured stage function."""
  params = configs.gin_params(fn, exclude=tuple(exclude) + _BOOKKEEPING)
  files = [assets.resolve(params.pop(k)) for k in _FILE_PARAMS
           if params.get(k)]
  for k in _FILE_PARAMS:
    params.pop(k, None)
  config = configs.to_json(params)
  nested = config.get("config")
  if isinstance(nested, dict):  # InductionConfig's runner, pipeline_args
    for k in _BOOKKEEPING:
      nested.pop(k, None)
  return config, files


def _model_files(model_dir: str) -> List[str]:
  return [os.path.join(model_dir, n)
          for n in ("model.json", "params.npz", "grammar.qcfg")]


def _induce(out_dir: str, train: str):
  # A cold numba cache (a first run): the later stages' kernels compile
  # beside the induction (`compile_ahead`).
  compile_ahead.start()
  return induce_lib.induce(out_dir, train)


@gin.configurable(module="csl")
class CSL:
  """The CSL method: induce -> fit -> [parse] -> sample.

  Attributes:
    num_samples: synthetic pairs drawn (paper B.4: 100,000).
    parse_part: the held-out part scored by the CSL parser in the report
      (skipped when the run has no such part); None: no parse stage.
  """
  name = "csl"

  def __init__(self, num_samples: int = 100_000,
               parse_part: str = "test"):
    self.num_samples = num_samples
    self.parse_part = parse_part

  def stages(self, data: base.RunData, workdir: str) -> List[base.Stage]:
    train = data.train
    grammar_dir = os.path.join(workdir, "induce")
    model_dir = os.path.join(workdir, "fit")
    grammar = os.path.join(grammar_dir, "grammar.qcfg")
    stages = []

    config, files = _stage_config(induce_lib.induce, ("out_dir", "train"))
    stages.append(base.Stage(
        "induce", [train] + files, config,
        lambda d: _induce(d, train)))

    config, files = _stage_config(fit_lib.fit,
                                  ("out_dir", "grammar", "train_data"))
    stages.append(base.Stage(
        "fit", [grammar, train] + files, config,
        lambda d: fit_lib.fit(d, grammar, train)))

    held_out = data.splits.get(self.parse_part) if self.parse_part else None
    if held_out:
      config, _ = _stage_config(parse_lib.parse, ("out_dir", "model", "data"))
      stages.append(base.Stage(
          "parse", _model_files(model_dir) + [held_out], config,
          lambda d: parse_lib.parse(d, model_dir, held_out)))

    config, _ = _stage_config(sample_lib.sample, ("out_dir", "model"))
    config["num"] = self.num_samples
    stages.append(base.Stage(
        "sample", _model_files(model_dir), config,
        lambda d: sample_lib.sample(d, model_dir, num=self.num_samples)))
    return stages

  def report_rows(self, summaries: Mapping[str, dict]
                  ) -> List[Tuple[str, str]]:
    induce, fit = summaries["induce"], summaries["fit"]
    rows = [("grammar rules", str(induce["num_rules"])),
            ("training pairs derivable", f'{induce["train_coverage"]:.1f}%'),
            ("train log p(y | x)", f'{fit["train_log_p_y_given_x"]:.5f}')]
    parse = summaries.get("parse")
    if parse:
      rows += [("held-out inputs parsed", f'{parse["coverage"]:.1f}%'),
               ("CSL parser exact match (held-out)",
                f'{parse["accuracy"]:.2f}%')]
    return rows


base.add(CSL.name, CSL)
