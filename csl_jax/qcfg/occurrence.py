"""Which of a list of token sequences contain a pattern with holes.

A pattern is a tuple of tokens where `NT_k` is a hole: it occurs in a
sequence if some substitution of non-empty token strings for its holes (the
same string for every occurrence of one hole) makes it a contiguous
substring. CSL's induction objective asks this of rule sides; other methods
(e.g. GECA's fragment/environment index) ask the same question, so the index
lives here rather than in `induction/`.
"""

from typing import Dict, Sequence, Tuple

import numpy as np

from csl_jax.qcfg import occurrence_kernel
from csl_jax.qcfg.rules import nt_index

Pattern = Tuple[str, ...]


class OccurrenceIndex:
  """Which of a list of token sequences contain a pattern. Equal sequences
  are matched once (SCAN's 14,670 training outputs are 5,633 strings)."""

  def __init__(self, sequences: Sequence[Sequence[str]]):
    self.vocab: Dict[str, int] = {}
    distinct: Dict[Tuple[str, ...], int] = {}
    self.distinct_of = np.array(
        [distinct.setdefault(tuple(seq), len(distinct)) for seq in sequences],
        np.int64)
    ids = [[self.vocab.setdefault(t, len(self.vocab)) for t in seq]
           for seq in distinct]
    self.offsets = np.zeros(len(ids) + 1, np.int64)
    self.offsets[1:] = np.cumsum([len(s) for s in ids])
    self.flat = np.array([t for s in ids for t in s], np.int32)
    self.lengths = np.diff(self.offsets)
    postings: Dict[int, list] = {}
    for b, seq in enumerate(ids):
      for t in set(seq):
        postings.setdefault(t, []).append(b)
    self.postings = {t: np.array(v, np.int64) for t, v in postings.items()}
    self._cache: Dict[Pattern, np.ndarray] = {}

  def __len__(self) -> int:
    return len(self.distinct_of)

  def occurrences(self, pattern: Pattern) -> np.ndarray:
    """Sorted ids of the sequences the pattern occurs in."""
    found = self._cache.get(pattern)
    if found is None:
      found = self._sequences_with(self._distinct_with(pattern))
      self._cache[pattern] = found
    return found

  def _sequences_with(self, distinct_ids: np.ndarray) -> np.ndarray:
    if len(self.lengths) == len(self.distinct_of):  # no repeats: the same ids
      return distinct_ids
    hit = np.zeros(len(self.lengths), np.bool_)
    hit[distinct_ids] = True
    return np.flatnonzero(hit[self.distinct_of])

  def _distinct_with(self, pattern: Pattern) -> np.ndarray:
    """Sorted ids of the distinct sequences the pattern occurs in."""
    codes, terminals = [], []
    for token in pattern:
      k = nt_index(token)
      if k:
        codes.append(-k)
      elif token not in self.vocab:
        return np.zeros(0, np.int64)
      else:
        codes.append(self.vocab[token])
        terminals.append(self.vocab[token])
    if terminals:
      lists = sorted((self.postings[t] for t in set(terminals)), key=len)
      candidates = lists[0]
      for more in lists[1:3]:  # a few intersections prune most misses
        candidates = occurrence_kernel.intersect_sorted(candidates, more)
    else:
      candidates = np.flatnonzero(self.lengths >= len(pattern))
    num_nts = max([-c for c in codes if c < 0] + [0])
    hits = occurrence_kernel.match_examples(
        self.flat, self.offsets, candidates, np.array(codes, np.int32),
        num_nts)
    return candidates[hits]
