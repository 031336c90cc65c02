"""The fitted CSL model: one object that writes, reads, parses and samples.

A model directory holds `grammar.qcfg` (the rules), `params.npz` (theta_{s,r}
as "rule" [S, R] and theta_{r_p,i,s} as "context" [C, S]), `model.json`
(|S|, the NT bound, the fit config) and, when the model has one, the output
CFG `output.cfg`. `CSLModel.save` is the only writer, `CSLModel.load` the
only reader; the Viterbi parser and the sampler take the object.
"""

import dataclasses
import hashlib
import io
import os
import zipfile
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from csl_jax.cky.grammar_arrays import QCFGArrays, encode_qcfg
from csl_jax.errors import InputError
from csl_jax.files import atomic_write_bytes, atomic_write_json, \
    atomic_write_text, read_json
from csl_jax.model import contexts
from csl_jax.qcfg.output_cfg import OutputCFG, load_output_cfg
from csl_jax.qcfg.rules import Rule, format_rule, load_rules, save_rules

FILES = ("model.json", "params.npz", "grammar.qcfg")


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


def _rules_digest(rules: Sequence[Rule]) -> str:
  """What model.json records of grammar.qcfg: the parameters are per rule,
  in its order, so a grammar edited or reordered after the fit would pair
  every parameter with another rule, silently."""
  return hashlib.sha256("".join(
      format_rule(r) + "\n" for r in rules).encode("utf-8")).hexdigest()


def _check_meta(meta: Any, path: str) -> Dict[str, Any]:
  """model.json's fields as `load` reads them, or an InputError naming the
  file (an edited or foreign file, not a traceback)."""
  if not isinstance(meta, dict):
    raise InputError("expected a JSON object (a `csl-jax fit` model.json)",
                     path)
  for name in ("num_states", "max_nts"):
    value = meta.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
      raise InputError(f"{name} must be an integer >= 1, got {value!r}",
                       path)
  return meta


def _read_params(path: str, num_states: int) -> Dict[str, np.ndarray]:
  """params.npz's two arrays, checked: a torn, edited or foreign file is an
  InputError naming it, not a traceback in the parser or sampler."""
  try:
    with np.load(path, allow_pickle=False) as params:
      missing = [k for k in ("rule", "context") if k not in params.files]
      if missing:
        raise InputError(f"no array {missing[0]!r} (a `csl-jax fit` "
                         "params.npz has 'rule' and 'context')", path)
      arrays = {k: params[k] for k in ("rule", "context")}
  except InputError:
    raise
  except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
    raise InputError(f"not a readable .npz file ({e})", path) from None
  for name, array in arrays.items():
    if array.ndim != 2 or not np.issubdtype(array.dtype, np.floating):
      raise InputError(f"array {name!r} must be a 2-d float array, got "
                       f"{array.dtype} of shape {array.shape}", path)
    if not np.isfinite(array).all():
      raise InputError(f"array {name!r} has NaN or infinite values", path)
  if arrays["rule"].shape[0] != num_states or (
      arrays["context"].shape[1] != num_states):
    raise InputError(f"arrays 'rule' {arrays['rule'].shape} and 'context' "
                     f"{arrays['context'].shape} do not have num_states = "
                     f"{num_states} (model.json) states", path)
  return arrays


@dataclasses.dataclass(frozen=True)
class CSLModel:
  """A fitted model; `log_p` and `ctx_index` are derived from the rest."""
  rules: List[Rule]
  grammar: QCFGArrays
  log_p: np.ndarray  # [C, R]
  ctx_index: np.ndarray  # [R, max_nts]
  output_cfg: Optional[OutputCFG]
  num_states: int
  rule_logits: np.ndarray  # [S, R] theta_{s, r}
  context_logits: np.ndarray  # [C, S] theta_{r_p, i, s}
  output_cfg_text: Optional[str] = None
  fit_config: Optional[Mapping[str, Any]] = None

  @classmethod
  def from_params(cls, rules: Sequence[Rule], params: Mapping[str, Any],
                  max_nts: int, num_states: int,
                  output_cfg_path: Optional[str] = None,
                  fit_config: Optional[Mapping[str, Any]] = None
                  ) -> "CSLModel":
    """A model from per-rule logits {"rule": [S, R], "context": [C, S]}."""
    rules = list(rules)
    rule_logits = np.array(params["rule"], np.float64)
    context_logits = np.array(params["context"], np.float64)
    log_p = rule_log_probs(rule_logits, context_logits)
    grammar = encode_qcfg(rules, max_nts)
    if log_p.shape != (contexts.num_contexts(rules), len(rules)):
      raise InputError("parameters do not fit the grammar "
                       f"({log_p.shape} vs {len(rules)} rules)")
    cfg, text = None, None
    if output_cfg_path:
      cfg = load_output_cfg(output_cfg_path)
      with open(output_cfg_path, encoding="utf-8") as f:
        text = f.read()
    return cls(rules, grammar, log_p,
               contexts.context_index(rules, grammar.max_nts), cfg,
               num_states, rule_logits, context_logits, text,
               dict(fit_config) if fit_config else None)

  @classmethod
  def load(cls, directory: str) -> "CSLModel":
    directory = os.fspath(directory)
    for name in FILES:
      if not os.path.isfile(os.path.join(directory, name)):
        raise InputError(f"not a fitted model directory (no {name}); run "
                         "`csl-jax fit` first", directory)
    meta_path = os.path.join(directory, "model.json")
    try:
      meta = read_json(meta_path)
    except ValueError as e:  # torn or edited
      raise InputError(f"not valid JSON ({e})", meta_path) from None
    meta = _check_meta(meta, meta_path)
    rules = load_rules(os.path.join(directory, "grammar.qcfg"))
    arrays = _read_params(os.path.join(directory, "params.npz"),
                          meta["num_states"])
    cfg_path = os.path.join(directory, "output.cfg")
    if meta.get("output_cfg") and not os.path.exists(cfg_path):
      raise InputError("the model has an output CFG (model.json) but no "
                       "output.cfg: restore it, or refit", directory)
    try:
      model = cls.from_params(
          rules, arrays, meta["max_nts"], meta["num_states"],
          cfg_path if os.path.exists(cfg_path) else None,
          meta.get("fit_config"))
    except InputError as e:
      raise InputError(e.message, e.source or directory, e.line) from None
    if "num_rules" in meta and meta["num_rules"] != len(rules):
      raise InputError(f"says {meta['num_rules']} rules, grammar.qcfg has "
                       f"{len(rules)}: files of different fits?", meta_path)
    if "grammar_sha256" in meta and meta["grammar_sha256"] != _rules_digest(
        rules):
      raise InputError("not the grammar these parameters were fitted on "
                       "(model.json's grammar_sha256: rules changed or moved "
                       "since the fit): refit, or restore it",
                       os.path.join(directory, "grammar.qcfg"))
    return model

  def save(self, directory: str) -> None:
    """Writes the model directory (each file atomically)."""
    buffer = io.BytesIO()
    np.savez(buffer, rule=self.rule_logits.astype(np.float32),
             context=self.context_logits.astype(np.float32))
    atomic_write_bytes(os.path.join(directory, "params.npz"),
                       buffer.getvalue())
    save_rules(os.path.join(directory, "grammar.qcfg"), self.rules)
    if self.output_cfg_text is not None:
      atomic_write_text(os.path.join(directory, "output.cfg"),
                        self.output_cfg_text)
    atomic_write_json(os.path.join(directory, "model.json"), {
        "num_states": self.num_states, "max_nts": self.grammar.max_nts,
        "num_rules": len(self.rules),
        "grammar_sha256": _rules_digest(self.rules),
        "output_cfg": self.output_cfg_text is not None,
        "fit_config": self.fit_config})

  def parse(self, inputs: Sequence[str], k: Optional[int] = None,
            **kwargs) -> List[Any]:
    """Viterbi parses (`viterbi.parse_batch`), one result per input."""
    from csl_jax.model import viterbi  # pylint: disable=g-import-not-at-top
    return viterbi.parse_batch(self.rules, self.grammar, self.log_p,
                               self.ctx_index, inputs, k=k,
                               output_cfg=self.output_cfg, **kwargs)

  def sample(self, num: int, config=None, use_output_cfg: bool = True,
             progress: bool = False):
    """Synthetic pairs (`csl_jax.sampling.sampler.sample`). Sampling is
    built on the model, so it is imported here rather than at the top."""
    from csl_jax.sampling import sampler  # pylint: disable=g-import-not-at-top
    return sampler.sample(self, num, config or sampler.SampleConfig(),
                          self.output_cfg if use_output_cfg else None,
                          progress=progress)

  def params(self) -> Dict[str, np.ndarray]:
    return {"rule": self.rule_logits, "context": self.context_logits}
