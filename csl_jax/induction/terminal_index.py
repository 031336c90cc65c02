"""Rules whose terminal sets are subsets of a rule's.

A rule's terminal set is its source and target terminals, each side's
apart. UNIFY(r, r') is empty unless r' has a subset of r's terminals; an
added rule r3 can only make rules with a superset of its terminals
redundant (an index over the additions, queried by each rule). Sets are
int ids (`TermIds`, one per search) and the queries go in batches to
`terminal_index_kernel`.
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
    self.freq = np.bincount(self.flat, minlength=self.num_terms)
    # Each rule listed under its rarest term (any one of them would do).
    has = np.flatnonzero(sizes)
    key = self.freq[self.flat] * self.num_terms + self.flat
    rarest = (np.minimum.reduceat(key, self.off[has]) % self.num_terms
              if len(has) else np.zeros(0, np.int64))
    self.keyed_flat, self.keyed_off = _group(rarest, has, self.num_terms)

  def subsets(self, ids: Sequence[int]) -> List[List[int]]:
    """For each rule ids[q], the rules whose terminal sets are subsets of
    its (itself included; in no particular order)."""
    return self._within([self.term_ids.of(self.rules[i]) for i in ids],
                        sort=False)

  def within(self, rules: Sequence[Rule]) -> List[List[int]]:
    """For each rule (of this index or not, its terms known to the
    `TermIds`), the rules here whose terminal sets are subsets of its,
    ascending."""
    # Terms newer than this index are in none of its rules: left out of
    # the query (the kernel indexes by term).
    n = self.num_terms
    sets = [self.term_ids.of(r) for r in rules]
    return self._within([t if not t or t[-1] < n else
                         tuple(x for x in t if x < n) for t in sets],
                        sort=True)

  def _within(self, sets, sort: bool) -> List[List[int]]:
    q_flat, q_off = _csr(sets)
    flat, off = kernel.subsets(self.flat, self.off, self.keyed_flat,
                               self.keyed_off, q_flat, q_off, self.num_terms)
    free = self.terminal_free
    if not (sort and free):  # the kernel's rows are ascending
      return [free + flat[off[q]:off[q + 1]].tolist()
              for q in range(len(sets))]
    return [sorted(free + flat[off[q]:off[q + 1]].tolist())
            for q in range(len(sets))]
