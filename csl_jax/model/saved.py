"""A fitted model directory: grammar.qcfg, params.npz, model.json."""

import dataclasses
import os
from typing import List, Optional

import numpy as np

from csl_jax.cky.grammar_arrays import EncodedGrammar, encode_grammar
from csl_jax.errors import InputError
from csl_jax.files import read_json
from csl_jax.model import contexts
from csl_jax.qcfg.output_cfg import OutputCFG, load_output_cfg
from csl_jax.qcfg.rules import Rule, load_rules


def _log_softmax(x, axis):
  x = x - x.max(axis=axis, keepdims=True)
  return x - np.log(np.exp(x).sum(axis=axis, keepdims=True))


def rule_log_probs(rule_logits: np.ndarray, context_logits: np.ndarray
                   ) -> np.ndarray:
  """[C, R] log p(r | c) = log sum_s p(r | s) p(s | c) (Eq. 4)."""
  log_rule = _log_softmax(np.asarray(rule_logits, np.float64), 1)  # S, R
  log_state = _log_softmax(np.asarray(context_logits, np.float64), 1)  # C, S
  joint = log_state[:, :, None] + log_rule[None, :, :]  # C, S, R
  top = joint.max(axis=1, keepdims=True)
  return (top + np.log(np.exp(joint - top).sum(axis=1, keepdims=True)))[:, 0]


@dataclasses.dataclass(frozen=True)
class SavedModel:
  rules: List[Rule]
  grammar: EncodedGrammar
  log_p: np.ndarray  # [C, R]
  ctx_index: np.ndarray  # [R, max_nts]
  output_cfg: Optional[OutputCFG]
  num_states: int
  rule_logits: np.ndarray  # [S, R] theta_{s, r}
  context_logits: np.ndarray  # [C, S] theta_{r_p, i, s}


def load_model(directory: str) -> SavedModel:
  directory = os.fspath(directory)
  for name in ("model.json", "params.npz", "grammar.qcfg"):
    if not os.path.exists(os.path.join(directory, name)):
      raise InputError(f"not a fitted model directory (no {name}); run "
                       "`csl-jax fit` first", directory)
  meta = read_json(os.path.join(directory, "model.json"))
  rules = load_rules(os.path.join(directory, "grammar.qcfg"))
  with np.load(os.path.join(directory, "params.npz")) as params:
    rule_logits = np.array(params["rule"], np.float64)
    context_logits = np.array(params["context"], np.float64)
  log_p = rule_log_probs(rule_logits, context_logits)
  grammar = encode_grammar(rules, meta["max_nts"])
  if log_p.shape != (contexts.num_contexts(rules), len(rules)):
    raise InputError("params.npz does not fit grammar.qcfg", directory)
  cfg_path = os.path.join(directory, "output.cfg")
  cfg = load_output_cfg(cfg_path) if os.path.exists(cfg_path) else None
  return SavedModel(rules, grammar, log_p,
                    contexts.context_index(rules, grammar.max_nts), cfg,
                    meta["num_states"], rule_logits, context_logits)
