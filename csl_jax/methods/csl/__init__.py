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
import sys
from typing import Any, Dict, List, Mapping, Optional, Tuple

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


def _stage_config(fn, exclude, default: Optional[Tuple[str, str]] = None
                  ) -> Tuple[Dict[str, Any], List[str]]:
  """(JSON config, input files) of a gin-configured stage function. Files
  count by content and by the parameter naming them (the same file as
  `eval_data` or as `unlabeled` is another fit). `default`: (module, class)
  of the config the function makes when its `config` is None; its gin
  bindings (`FitConfig.num_states = 8` without `fit.config =
  @FitConfig()`) key the stage too."""
  params = configs.gin_params(fn, exclude=tuple(exclude) + _BOOKKEEPING)
  roles = [k for k in _FILE_PARAMS if params.get(k)]
  files = [assets.resolve(params.pop(k)) for k in roles]
  for k in _FILE_PARAMS:
    params.pop(k, None)
  if roles:
    params["file_params"] = roles
  if default and params.get("config") is None:
    params["config"] = _bound_default(*default)
  config = configs.to_json(params)
  nested = config.get("config")
  if isinstance(nested, dict):  # InductionConfig's runner, pipeline_args
    for k in _BOOKKEEPING:
      nested.pop(k, None)
  return config, files


def _bound_default(module: str, name: str):
  """The config `module.name()` the stage would make, if gin binds any of
  its fields; None otherwise (the key of runs before this was keyed). A
  class whose module is not loaded has no bindings (gin would have refused
  them)."""
  cls = getattr(sys.modules.get(module), name, None)
  if cls is None or not gin.get_bindings(cls):
    return None
  return cls()


def _model_files(model_dir: str, output_cfg: bool) -> List[str]:
  """What a fitted model is: sampling and parsing read its output CFG too
  (fit checks it; its parameters do not depend on it)."""
  names = ["model.json", "params.npz", "grammar.qcfg"]
  return [os.path.join(model_dir, n)
          for n in names + (["output.cfg"] if output_cfg else [])]


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
  seed_params = ("SampleConfig.seed",)  # what experiment seeds may bind
  shardable = True  # forests and sampling (augment --shards)

  def __init__(self, num_samples: int = 100_000,
               parse_part: Optional[str] = "test"):
    configs.check_init_types(self, locals())  # before any stage runs
    configs.check_values("CSL", locals(), num_samples=configs.AT_LEAST_ONE)
    self.num_samples = num_samples
    self.parse_part = parse_part

  def stages(self, data: base.RunData, workdir: str) -> List[base.Stage]:
    train = data.train
    grammar_dir = os.path.join(workdir, "induce")
    model_dir = os.path.join(workdir, "fit")
    grammar = os.path.join(grammar_dir, "grammar.qcfg")
    stages = []

    config, files = _stage_config(
        induce_lib.induce, ("out_dir", "train"),
        ("csl_jax.induction.search", "InductionConfig"))
    if not config.get("skip_too_long"):
      config.pop("skip_too_long", None)  # the key it had before the option
    stages.append(base.Stage(
        "induce", [train] + files, config,
        lambda d: _induce(d, train)))

    config, files = _stage_config(fit_lib.fit,
                                  ("out_dir", "grammar", "train_data"),
                                  ("csl_jax.model.train", "FitConfig"))
    config["version"] = fit_lib.VERSION
    model_files = _model_files(model_dir,
                               "output_cfg" in config.get("file_params", ()))
    stages.append(base.Stage(
        "fit", [grammar, train] + files, config,
        lambda d: fit_lib.fit(d, grammar, train)))

    held_out = data.splits.get(self.parse_part) if self.parse_part else None
    if held_out:
      config, _ = _stage_config(parse_lib.parse, ("out_dir", "model", "data"))
      stages.append(base.Stage(
          "parse", model_files + [held_out], config,
          lambda d: parse_lib.parse(d, model_dir, held_out)))

    config, _ = _stage_config(sample_lib.sample, ("out_dir", "model"),
                              ("csl_jax.sampling.config", "SampleConfig"))
    config["num"] = self.num_samples
    stages.append(base.Stage(
        "sample", model_files, config,
        lambda d: sample_lib.sample(d, model_dir, num=self.num_samples)))
    return stages

  def report_rows(self, summaries: Mapping[str, dict]
                  ) -> List[Tuple[str, str]]:
    induce, fit = summaries["induce"], summaries["fit"]
    # Where the grammar is (relative to the run): the report gives its
    # size, the file gives the rules.
    rows = [("grammar rules", f'{induce["num_rules"]} '
             f'({self.name}/induce/grammar.qcfg)'),
            ("training pairs derivable", f'{induce["train_coverage"]:.1f}%'),
            ("train log p(y | x)", f'{fit["train_log_p_y_given_x"]:.5f}')]
    parse = summaries.get("parse")
    if parse:
      rows += [("held-out inputs parsed", f'{parse["coverage"]:.1f}%'),
               ("CSL parser exact match (held-out)",
                f'{parse["accuracy"]:.2f}%')]
    return rows


base.add(CSL.name, CSL)
