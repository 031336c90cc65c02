"""Rules whose terminal sets are subsets / supersets of a rule's.

A rule's terminal set is its source and target terminals, each side's
apart. UNIFY(r, r') is empty unless r' has a subset of r's terminals; an
added rule r3 can only make rules with a superset of its terminals
redundant. Sets are int ids (`TermIds`, one per search) and the queries go
in batches to `terminal_index_kernel`.
"""

import itertools
from typing import Dict, List, Sequence, Tuple

import numpy as np

from csl_jax.induction import terminal_index_kernel as kernel
from csl_jax.qcfg.rules import Rule, nt_index


class TermIds:
  """Ids of (side, terminal), and each rule's sorted distinct ids, cached:
  most rules live through several steps."""

  def __init__(self):
    self.ids: Dict[Tuple[str, str], int] = {}
    self._of: Dict[Rule, Tuple[int, ...]] = {}
    self._token: Tuple[Dict[str, int], Dict[str, int]] = ({}, {})  # NT: -1

  def _side(self, side: str, tokens, cache: Dict[str, int]) -> set:
    try:
      return set(map(cache.__getitem__, tokens))
    except KeyError:
      for t in tokens:
        if t not in cache:
          cache[t] = (-1 if nt_index(t) else
                      self.ids.setdefault((side, t), len(self.ids)))
      return set(map(cache.__getitem__, tokens))

  def of(self, rule: Rule) -> Tuple[int, ...]:
    found = self._of.get(rule)
    if found is None:
      terms = self._side("s", rule.source, self._token[0])
      terms |= self._side("t", rule.target, self._token[1])
      terms.discard(-1)
      found = self._of[rule] = tuple(sorted(terms))
    return found


def _csr(rows: Sequence[Sequence[int]]) -> Tuple[np.ndarray, np.ndarray]:
  off = np.zeros(len(rows) + 1, np.int64)
  np.cumsum([len(r) for r in rows], out=off[1:])
  flat = np.fromiter(itertools.chain.from_iterable(rows), np.int64, off[-1])
  return flat, off


def _group(keys: np.ndarray, values: np.ndarray, num_keys: int
           ) -> Tuple[np.ndarray, np.ndarray]:
  """CSR of `values` by key, each group in the values' order."""
  order = np.argsort(keys, kind="stable")
  off = np.zeros(num_keys + 1, np.int64)
  np.cumsum(np.bincount(keys, minlength=num_keys), out=off[1:])
  return values[order].astype(np.int64), off


class TerminalIndex:
  """Subset / superset queries over one grammar's rules."""

  def __init__(self, rules: Sequence[Rule], term_ids: TermIds):
    self.rules = list(rules)
    self.term_ids = term_ids
    self.flat, self.off = _csr([term_ids.of(r) for r in self.rules])
    self.num_terms = len(term_ids.ids)
    sizes = np.diff(self.off)
    self.terminal_free = np.flatnonzero(sizes == 0).tolist()
    owner = np.repeat(np.arange(len(self.rules)), sizes)
    self.freq = np.bincount(self.flat, minlength=self.num_terms)
    self.post_flat, self.post_off = _group(self.flat, owner, self.num_terms)
    # Each rule listed under its rarest term (any one of them would do).
    has = np.flatnonzero(sizes)
    key = self.freq[self.flat] * self.num_terms + self.flat
    rarest = (np.minimum.reduceat(key, self.off[has]) % self.num_terms
              if len(has) else np.zeros(0, np.int64))
    self.keyed_flat, self.keyed_off = _group(rarest, has, self.num_terms)

  def subsets(self, ids: Sequence[int]) -> List[List[int]]:
    """For each rule ids[q], the rules whose terminal sets are subsets of
    its (itself included; in no particular order)."""
    q_flat, q_off = _csr([self.term_ids.of(self.rules[i]) for i in ids])
    flat, off = kernel.subsets(self.flat, self.off, self.keyed_flat,
                               self.keyed_off, q_flat, q_off, self.num_terms)
    return [self.terminal_free + flat[off[q]:off[q + 1]].tolist()
            for q in range(len(ids))]

  def supersets(self, rules: Sequence[Rule]) -> List[List[int]]:
    """For each rule, the rules containing all its terminals, ascending."""
    out: List[List[int]] = [[] for _ in rules]
    asked, sets = [], []
    known = set(np.flatnonzero(self.freq).tolist())
    for q, rule in enumerate(rules):
      terms = self.term_ids.of(rule)
      if not terms:
        out[q] = list(range(len(self.rules)))
      elif known.issuperset(terms):
        asked.append(q)
        sets.append(terms)
    if asked:
      q_flat, q_off = _csr(sets)
      flat, off = kernel.supersets(self.flat, self.off, self.post_flat,
                                   self.post_off, q_flat, q_off,
                                   self.num_terms)
      for k, q in enumerate(asked):
        out[q] = flat[off[k]:off[k + 1]].tolist()
    return out
