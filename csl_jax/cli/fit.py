"""`csl-jax fit`: CSL's parametric model over an induced grammar.

Writes DIR/model.json, DIR/params.npz, DIR/grammar.qcfg (the model is self
contained), DIR/checkpoint.msgpack (resumed from), DIR/tensorboard/ and
DIR/summary.json with log p(x, y) and log p(y | x) on train (and --eval).
"""

import argparse
import dataclasses
import os
import shutil
from typing import Optional

from absl import logging
import gin
import numpy as np
import tqdm

from csl_jax.cli import stage
from csl_jax.data import tsv
from csl_jax.files import atomic_write_bytes, atomic_write_json
from csl_jax.model import viterbi
from csl_jax.model.saved import rule_log_probs
from csl_jax.qcfg.output_cfg import load_output_cfg
from csl_jax.qcfg.rules import load_rules, save_rules


class _Summaries:
  """TensorBoard scalars (TensorFlow is imported only if they are on)."""

  def __init__(self, directory: Optional[str]):
    self._writer = None
    if directory:
      os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # CUDA probe noise
      import tensorflow as tf  # pylint: disable=g-import-not-at-top
      self._tf = tf
      self._writer = tf.summary.create_file_writer(directory)

  def scalar(self, name, value, step):
    if self._writer is not None:
      with self._writer.as_default():
        self._tf.summary.scalar(name, value, step=step)

  def close(self):
    if self._writer is not None:
      self._writer.flush()


def save_params(out_dir: str, params) -> None:
  import io  # pylint: disable=g-import-not-at-top
  buffer = io.BytesIO()
  np.savez(buffer, rule=np.asarray(params["rule"]),
           context=np.asarray(params["context"]))
  atomic_write_bytes(os.path.join(out_dir, "params.npz"), buffer.getvalue())


def _read_inputs(path: str):
  """Unlabeled inputs: one per line, or the first column of a TSV."""
  with open(path, encoding="utf-8") as f:
    return [line.rstrip("\n").split("\t")[0].strip() for line in f
            if line.strip()]


def _pseudo_label(params, rules, data, inputs, output_cfg):
  """Hard EM (paper C.7): the model's parse of each unlabeled input;
  inputs it cannot parse are dropped."""
  log_p = rule_log_probs(np.asarray(params["rule"]),
                         np.asarray(params["context"]))
  cfg = load_output_cfg(output_cfg) if output_cfg else None
  results = viterbi.parse_batch(rules, data.grammar, log_p, data.ctx_index,
                                inputs, output_cfg=cfg)
  return [(x.split(), list(r.target)) for x, r in zip(inputs, results)
          if r.parsed]


@gin.configurable(module="fit")
def fit(out_dir: str, grammar: str, train_data: str,
        eval_data: Optional[str] = None, max_nts: int = 4,
        output_cfg: Optional[str] = None, tensorboard: bool = True,
        summary_every: int = 10, unlabeled: Optional[str] = None,
        unlabeled_copies: int = 1,
        config: Optional["train.FitConfig"] = None) -> dict:
  """With `unlabeled` inputs, the fitted model labels them (hard EM), and the
  model is refit on the training pairs plus `unlabeled_copies` copies of the
  labeled ones (Qiu et al., 2022, C.7)."""
  from csl_jax.model import train  # pylint: disable=g-import-not-at-top
  config = config or train.FitConfig()
  with stage.stage(out_dir, stage.command_line()) as summary:
    rules = load_rules(grammar)
    examples = tsv.read_tsv(train_data)
    pairs = [(e.input.split(), e.output.split()) for e in examples]
    writer = _Summaries(os.path.join(out_dir, "tensorboard")
                        if tensorboard else None)
    bar = tqdm.tqdm(total=config.num_steps, desc="fit", unit="step",
                    mininterval=1.0)

    def on_step(step, loss):
      bar.update(1)
      if step % summary_every == 0 or step == 1:
        bar.set_postfix(loss=f"{loss:.4f}")
        writer.scalar("train/neg_log_p_xy", loss, step)

    params, history, data = train.fit(
        rules, pairs, config, max_nts,
        os.path.join(out_dir, "checkpoint.msgpack"), on_step)
    bar.close()
    if unlabeled:
      labeled = _pseudo_label(params, rules, data, _read_inputs(unlabeled),
                              output_cfg)
      tsv.write_tsv(os.path.join(out_dir, "pseudo_labeled.tsv"),
                    [(" ".join(x), " ".join(y)) for x, y in labeled])
      summary.update(unlabeled=os.fspath(unlabeled),
                     num_pseudo_labeled=len(labeled))
      bar = tqdm.tqdm(total=config.num_steps, desc="refit", unit="step",
                      mininterval=1.0)
      pairs = pairs + labeled * unlabeled_copies
      params, history, data = train.fit(
          rules, pairs, config, max_nts,
          os.path.join(out_dir, "checkpoint_semi_supervised.msgpack"),
          on_step)
      bar.close()
    save_params(out_dir, params)
    save_rules(os.path.join(out_dir, "grammar.qcfg"), rules)
    if output_cfg:
      shutil.copyfile(output_cfg, os.path.join(out_dir, "output.cfg"))
    atomic_write_json(os.path.join(out_dir, "model.json"), {
        "num_states": config.num_states, "max_nts": data.grammar.max_nts,
        "num_rules": len(rules), "output_cfg": bool(output_cfg),
        "fit_config": dataclasses.asdict(config)})
    figures = train.average_log_likelihoods(params, rules, data, pairs,
                                            config.max_unary)
    summary.update(
        grammar=os.fspath(grammar), train=os.fspath(train_data),
        num_examples=len(pairs), num_distinct=len(data.pairs),
        num_underivable=data.num_underivable, num_rules=len(rules),
        num_steps=len(history), final_loss=history[-1][1],
        forest_seconds=round(data.forest_seconds, 3),
        train_log_p_xy=figures["log_p_xy"],
        train_log_p_y_given_x=figures["log_p_y_given_x"])
    step = len(history)
    writer.scalar("train/log_p_y_given_x", figures["log_p_y_given_x"], step)
    if eval_data:
      held = [(e.input.split(), e.output.split())
              for e in tsv.read_tsv(eval_data)]
      figures = train.average_log_likelihoods(params, rules, data, held,
                                              config.max_unary)
      summary.update(eval=os.fspath(eval_data),
                     eval_log_p_xy=figures["log_p_xy"],
                     eval_log_p_y_given_x=figures["log_p_y_given_x"],
                     eval_num_derivable=figures["num_derivable"])
      writer.scalar("eval/log_p_y_given_x", figures["log_p_y_given_x"], step)
    writer.close()
    logging.info("fit: %d steps, loss %.4f", len(history), history[-1][1])
  return dict(summary)


def add_parser(subparsers) -> None:
  parser = subparsers.add_parser(
      "fit", help="fit CSL's model p(r | parent, i) over a grammar")
  parser.add_argument("--grammar", required=True)
  parser.add_argument("--train", required=True)
  parser.add_argument("--eval", help="held-out TSV for log p(y | x)")
  parser.add_argument("--output_cfg", help="stored with the model for parse")
  parser.add_argument("--unlabeled", help="inputs to label and refit on "
                      "(hard EM, paper C.7)")
  parser.add_argument("--unlabeled_copies", type=int)
  parser.add_argument("--out", required=True)


def main(args: argparse.Namespace) -> int:
  kwargs = {}
  if args.eval:
    kwargs["eval_data"] = args.eval
  if args.output_cfg:
    kwargs["output_cfg"] = args.output_cfg
  if args.unlabeled:
    kwargs["unlabeled"] = args.unlabeled
  if args.unlabeled_copies:
    kwargs["unlabeled_copies"] = args.unlabeled_copies
  fit(args.out, args.grammar, args.train, **kwargs)
  return 0


def register_configurables() -> None:
  """Imports FitConfig (with JAX, Flax, Optax): only fitting pays for it."""
  from csl_jax.model import train  # pylint: disable=g-import-not-at-top,unused-import
