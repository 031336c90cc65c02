"""CSL's parametric model over an induced grammar (`csl-jax fit`).

Writes DIR/model.json, DIR/params.npz, DIR/grammar.qcfg (the model is self
contained), DIR/checkpoint.msgpack (resumed from), DIR/tensorboard/ and
DIR/summary.json with log p(x, y) and log p(y | x) on train (and --eval).
"""

import dataclasses
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from absl import logging
import gin

from csl_jax import assets
from csl_jax import configs
from csl_jax.cky import forest
from csl_jax.data import tsv
from csl_jax.errors import InputError
from csl_jax.files import read_text
from csl_jax.model import csl_model
from csl_jax.model.csl_model import CSLModel
from csl_jax.qcfg.output_cfg import check_training_outputs
from csl_jax.qcfg.output_cfg import load_output_cfg
from csl_jax.qcfg.rules import check_max_nts, format_rule, load_rules
from csl_jax.summaries import TensorBoardWriter
from csl_jax.progress import progress, start_at


def _read_inputs(path: str) -> List[str]:
  """Unlabeled inputs: one per line, or the first column of a TSV."""
  inputs = [line.split("\t")[0].strip()
            for line in read_text(path).lstrip("\ufeff").splitlines()]
  inputs = [x for x in inputs if x]
  if not inputs:
    raise InputError("no inputs", path)
  return inputs


def _bounded_pairs(path: str, max_source_len: int, max_target_len: int,
                   skip_too_long: bool) -> Tuple[List, int, List[int]]:
  """Token pairs of a TSV, their line numbers and how many were skipped;
  an example over the bounds is an InputError (or skipped and counted), so
  memory stays bounded."""
  pairs, skipped, lines = [], 0, []
  for line, e in enumerate(tsv.read_tsv(path), start=1):
    x, y = e.input.split(), e.output.split()
    if len(x) > max_source_len or len(y) > max_target_len:
      if skip_too_long:
        skipped += 1
        continue
      raise InputError(f"example longer than the bound ({len(x)} > "
                       f"{max_source_len} or {len(y)} > {max_target_len} "
                       "tokens; raise max_source_len/max_target_len or "
                       "pass --skip_too_long)", path, line)
    pairs.append((x, y))
    lines.append(line)
  return pairs, skipped, lines


# The files a fit writes (and resumes from) in its directory.
_OUTPUTS = csl_model.FILES + (
    "output.cfg", "checkpoint.msgpack", "checkpoint_semi_supervised.msgpack",
    "pseudo_labeled.tsv")


# In the pipeline's fit stage key: 2 since the fit's programs are compiled
# with `model.train.FIT_COMPILER_OPTIONS` (other last bits, so other
# samples): a fit made before is made again, not kept beside new ones.
VERSION = 2


@gin.configurable(module="fit")
def fit(out_dir: str, grammar: str, train_data: str,
        eval_data: Optional[str] = None, max_nts: int = 4,
        output_cfg: Optional[str] = None, tensorboard: bool = True,
        summary_every: int = 10, unlabeled: Optional[str] = None,
        unlabeled_copies: int = 1,
        max_source_len: int = forest.DEFAULT_MAX_SOURCE_LEN,
        max_target_len: int = forest.DEFAULT_MAX_TARGET_LEN,
        skip_too_long: bool = False,
        config: Optional["train.FitConfig"] = None,
        forest_shards: int = 0, runner: Optional[str] = None,
        pipeline_args: Sequence[str] = (),
        forest_dir: Optional[str] = None) -> Dict[str, Any]:
  """Fits the model; returns the summary.

  `forest_shards` > 0: the training pairs' forests are built in that many
  shards, kept as array files in DIR/forests/ (`cky/forest_shards.py`), on
  `runner` as an Apache Beam pipeline if given (`pipeline_args`: its
  flags); the same forests, hence the same fit, as one build.
  `forest_dir`: keep them there instead (a URL such as gs://B/forests for
  Beam workers that share no disk).

  Every input is read and checked before any work. With `unlabeled` inputs,
  the fitted model labels them (hard EM), and the model is refit on the
  training pairs plus `unlabeled_copies` copies of the labeled ones (Qiu et
  al., 2022, C.7).
  """
  from csl_jax.model import train  # pylint: disable=g-import-not-at-top
  config = config or train.FitConfig()
  configs.check_values("fit", locals(), max_nts=configs.AT_LEAST_ONE,
                       summary_every=configs.AT_LEAST_ONE,
                       unlabeled_copies=configs.AT_LEAST_ONE,
                       max_source_len=configs.AT_LEAST_ONE,
                       max_target_len=configs.AT_LEAST_ONE,
                       forest_shards=configs.NON_NEGATIVE)
  if pipeline_args and not runner:
    raise InputError(f"Beam pipeline flags {list(pipeline_args)} need a "
                     "runner (fit.runner)")
  if forest_dir and forest_shards < 1:
    raise InputError("fit.forest_dir keeps forest shards: set "
                     "fit.forest_shards >= 1")
  if runner and forest_shards < 1:
    raise InputError("fit.runner builds the forests in shards: set "
                     "fit.forest_shards >= 1")
  if unlabeled_copies < 1:
    raise InputError(f"unlabeled_copies must be >= 1, not {unlabeled_copies}")
  if unlabeled_copies != 1 and not unlabeled:
    # Else unread, unsaid: the fit has no pseudo-labels to copy.
    raise InputError("fit.unlabeled_copies (--unlabeled_copies) needs "
                     "fit.unlabeled (--unlabeled: the inputs whose "
                     "pseudo-labels it copies)")
  for name in _OUTPUTS:  # else an IsADirectoryError traceback, late
    if os.path.isdir(os.path.join(out_dir, name)):
      raise InputError(f"is a directory where the fit writes its {name}: "
                       "remove it", os.path.join(out_dir, name))
  output_cfg = assets.resolve(output_cfg)
  rules = load_rules(grammar)
  check_max_nts(rules, max_nts, grammar, "fit.max_nts")
  pairs, num_too_long, lines = _bounded_pairs(
      train_data, max_source_len, max_target_len, skip_too_long)
  outside_cfg = None
  if output_cfg:  # a bad or wrong CFG fails now, not after training
    outside_cfg = check_training_outputs(
        load_output_cfg(output_cfg), output_cfg, "fit.output_cfg",
        train_data, [y for _, y in pairs], lines)
  held = None
  if eval_data:
    held, _, _ = _bounded_pairs(eval_data, max_source_len, max_target_len,
                                skip_too_long)
  unlabeled_inputs = _read_inputs(unlabeled) if unlabeled else None
  os.makedirs(out_dir, exist_ok=True)
  summary: Dict[str, Any] = {"num_skipped_too_long": num_too_long}
  if outside_cfg is not None:
    summary["num_outside_output_cfg"] = outside_cfg
  board = os.path.join(out_dir, "tensorboard") if tensorboard else None
  # Made at the fit's first step, where it knows where it starts: a rerun's
  # writer then drops the scalars a killed run wrote past its checkpoint
  # (all of them, killed in the restarts), which it writes again.
  writers: List[TensorBoardWriter] = []

  def writer(start_step=None) -> TensorBoardWriter:
    if not writers:
      writers.append(TensorBoardWriter(board, start_step))
    return writers[0]

  bar = progress(total=config.num_steps, desc="fit", unit="step",
                  mininterval=1.0)
  last = [0]  # the step the bar counts up to: a resumed fit starts later
  # TensorBoard's steps run on through the refit (whose own count starts at
  # 1 again): one curve, and a refit killed and rerun drops what it lost.
  offset = [0]

  def on_step(step, loss):
    if step - 1 > last[0]:  # resumed from a checkpoint of step - 1
      start_at(bar, step - 1)
    if not writers:
      writer(offset[0] + step - 1)
    bar.update(1)
    last[0] = step
    if step % summary_every == 0 or step == 1:
      bar.set_postfix(loss=f"{loss:.4f}")
      writer().scalar("train/neg_log_p_xy", loss, offset[0] + step)

  lengths = dict(max_source_len=max_source_len, max_target_len=max_target_len)
  builder = None
  if forest_shards:
    from csl_jax.cky import forest_shards as shards_lib  # pylint: disable=g-import-not-at-top

    def builder(grammar_arrays, distinct_pairs, fit_rules):
      key = shards_lib.data_key("\n".join(format_rule(r) for r in fit_rules),
                                grammar_arrays.max_nts, distinct_pairs)
      return shards_lib.build_sharded(
          grammar_arrays, distinct_pairs, forest_shards,
          forest_dir or os.path.join(out_dir, "forests"), key, runner,
          pipeline_args)
  params, history, data = train.fit(
      rules, pairs, config, max_nts,
      os.path.join(out_dir, "checkpoint.msgpack"), on_step, source=train_data,
      forest_builder=builder, **lengths)
  bar.close()
  if data.num_underivable:  # left out of the fit: said, with a line
    derivable = {data.pairs[i] for i in data.usable}
    first_line = next(line for (x, y), line in zip(pairs, lines, strict=True)
                      if (tuple(x), tuple(y)) not in derivable)
    logging.warning("%s:%d: %d of %d distinct training pairs are not "
                    "derived by the grammar and are left out of the fit "
                    "(num_underivable in the summary)", train_data,
                    first_line, data.num_underivable, len(data.pairs))
  if unlabeled:
    first = CSLModel.from_params(rules, params, data.grammar.max_nts,
                                 config.num_states, output_cfg)
    labeled = [(x.split(), list(r.target)) for x, r in
               zip(unlabeled_inputs, first.parse(unlabeled_inputs,
                                                 skip_too_long=True),
                   strict=True)
               if r.parsed]
    tsv.write_tsv(os.path.join(out_dir, "pseudo_labeled.tsv"),
                  [(" ".join(x), " ".join(y)) for x, y in labeled])
    summary.update(unlabeled=os.fspath(unlabeled),
                   num_unlabeled=len(unlabeled_inputs),
                   num_pseudo_labeled=len(labeled))
    if len(labeled) < len(unlabeled_inputs):  # said, not dropped silently
      logging.warning("%s: %d of %d unlabeled inputs have no parse and are "
                      "left out of the refit", unlabeled,
                      len(unlabeled_inputs) - len(labeled),
                      len(unlabeled_inputs))
    bar = progress(total=config.num_steps, desc="refit", unit="step",
                   mininterval=1.0)
    last[0] = 0
    offset[0] = len(history)
    pairs = pairs + labeled * unlabeled_copies
    # Pseudo-labels over the bounds are dropped (and counted), not fatal.
    params, history, data = train.fit(
        rules, pairs, config, max_nts,
        os.path.join(out_dir, "checkpoint_semi_supervised.msgpack"),
        on_step, skip_too_long=True, forest_builder=builder, **lengths)
    summary["num_pseudo_labeled_too_long"] = data.num_too_long
    bar.close()
  CSLModel.from_params(rules, params, data.grammar.max_nts,
                       config.num_states, output_cfg,
                       dataclasses.asdict(config)).save(out_dir)
  figures = train.average_log_likelihoods(params, rules, data, pairs,
                                          config.max_unary, **lengths)
  summary.update(
      grammar=os.fspath(grammar), train=os.fspath(train_data),
      num_examples=len(pairs), num_distinct=len(data.pairs),
      num_underivable=data.num_underivable, num_rules=len(rules),
      num_steps=len(history), final_loss=history[-1][1],
      forest_seconds=round(data.forest_seconds, 3),
      train_log_p_xy=figures["log_p_xy"],
      train_log_p_y_given_x=figures["log_p_y_given_x"])
  step = offset[0] + len(history)
  writer().scalar("train/log_p_y_given_x", figures["log_p_y_given_x"], step)
  if held is not None:
    figures = train.average_log_likelihoods(params, rules, data, held,
                                            config.max_unary, **lengths)
    summary.update(eval=os.fspath(eval_data),
                   eval_log_p_xy=figures["log_p_xy"],
                   eval_log_p_y_given_x=figures["log_p_y_given_x"],
                   eval_num_derivable=figures["num_derivable"])
    writer().scalar("eval/log_p_y_given_x", figures["log_p_y_given_x"],
                    step)
  writer().close()
  logging.info("fit: %d steps, loss %.4f", len(history), history[-1][1])
  return dict(summary)
