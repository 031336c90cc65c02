"""UNIFY of one rule with many partners, on int-coded rules
(`unify_kernel`), for the search: rules are coded once per search, a step's
grammar is one CSR, and the r3 found come back as `Rule`s."""

from typing import Dict, List, Sequence, Set, Tuple

import numpy as np

from csl_jax.induction import unify_kernel
from csl_jax.qcfg.rules import Rule, nt_index, nt_token


class RuleCodes:
  """Token ids (one vocabulary for both sides: UNIFY compares a side only
  with the same side) and each rule's int32 codes, cached."""

  def __init__(self):
    self.vocab: Dict[str, int] = {}
    self.names: List[str] = []
    self._codes: Dict[Rule, Tuple[np.ndarray, np.ndarray]] = {}

  def _side(self, tokens) -> List[int]:
    out = []
    for t in tokens:
      k = nt_index(t)
      if k:
        out.append(-k)
        continue
      code = self.vocab.get(t)
      if code is None:
        code = self.vocab[t] = len(self.names)
        self.names.append(t)
      out.append(code)
    return out

  def of(self, rule: Rule) -> Tuple[np.ndarray, np.ndarray]:
    found = self._codes.get(rule)
    if found is None:
      found = self._codes[rule] = (
          np.array(self._side(rule.source), np.int32),
          np.array(self._side(rule.target), np.int32))
    return found

  def token(self, code: int) -> str:
    return self.names[code] if code >= 0 else nt_token(-code)


def _concat(arrays) -> Tuple[np.ndarray, np.ndarray]:
  off = np.zeros(len(arrays) + 1, np.int64)
  np.cumsum([len(a) for a in arrays], out=off[1:])
  flat = np.concatenate(arrays) if arrays else np.zeros(0, np.int32)
  return flat.astype(np.int32, copy=False), off


class GrammarUnifier:
  """UNIFY(grammar[i], grammar[j]) for many j, one kernel call per i."""

  def __init__(self, grammar: Sequence[Rule], codes: RuleCodes):
    coded = [codes.of(r) for r in grammar]
    self.src = _concat([s for s, _ in coded])
    self.tgt = _concat([t for _, t in coded])
    self.codes = codes

  def unify(self, i: int, partners: Sequence[int]) -> Set[Rule]:
    """The union of UNIFY(rule i, rule j) over partners j != i."""
    others = np.array([j for j in partners if j != i], np.int64)
    sf, so, tf, to = unify_kernel.unify_partners(
        self.src[0], self.src[1], self.tgt[0], self.tgt[1], i, others)
    tokens = self.codes.token
    src = [tokens(c) for c in sf.tolist()]
    tgt = [tokens(c) for c in tf.tolist()]
    so, to = so.tolist(), to.tolist()
    return {Rule(tuple(src[so[q]:so[q + 1]]), tuple(tgt[to[q]:to[q + 1]]))
            for q in range(len(so) - 1)}
