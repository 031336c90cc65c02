"""Occurrence statistics for the induction objective (CSL Eq. 7).

p(alpha | beta) is the share of training examples whose output contains
beta (under some NT substitution) whose input also contains alpha, and
p(beta | alpha) vice versa. Occurrence sets are cached per pattern.
"""

from typing import Dict, Sequence, Tuple

import numpy as np

from csl_jax.induction import occurrence_kernel
from csl_jax.qcfg.rules import nt_index

Pattern = Tuple[str, ...]


class OccurrenceIndex:
  """Which of a list of token sequences contain a pattern."""

  def __init__(self, sequences: Sequence[Sequence[str]]):
    self.vocab: Dict[str, int] = {}
    ids = [[self.vocab.setdefault(t, len(self.vocab)) for t in seq]
           for seq in sequences]
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
    return len(self.lengths)

  def occurrences(self, pattern: Pattern) -> np.ndarray:
    """Sorted ids of the sequences the pattern occurs in."""
    found = self._cache.get(pattern)
    if found is not None:
      return found
    codes, terminals = [], []
    for token in pattern:
      k = nt_index(token)
      if k:
        codes.append(-k)
      elif token not in self.vocab:
        found = np.zeros(0, np.int64)
        break
      else:
        codes.append(self.vocab[token])
        terminals.append(self.vocab[token])
    if found is None:
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
      found = candidates[hits]
    self._cache[pattern] = found
    return found


class PairStatistics:
  """p-hat estimates over a training set (or a seeded sample of it)."""

  def __init__(self, pairs: Sequence[Tuple[Sequence[str], Sequence[str]]],
               sample_size: int = 0, seed: int = 0):
    pairs = list(pairs)
    if 0 < sample_size < len(pairs):
      rng = np.random.default_rng(seed)
      keep = np.sort(rng.choice(len(pairs), sample_size, replace=False))
      pairs = [pairs[i] for i in keep]
    self.num_examples = len(pairs)
    self.source = OccurrenceIndex([x for x, _ in pairs])
    self.target = OccurrenceIndex([y for _, y in pairs])
    self._joint: Dict[Tuple[Pattern, Pattern], int] = {}

  def counts(self, alpha: Pattern, beta: Pattern) -> Tuple[int, int, int]:
    """(#alpha in input, #beta in output, #both) over the examples."""
    a = self.source.occurrences(alpha)
    b = self.target.occurrences(beta)
    key = (alpha, beta)
    joint = self._joint.get(key)
    if joint is None:
      joint = int(occurrence_kernel.intersect_sorted(a, b).size)
      self._joint[key] = joint
    return len(a), len(b), joint

  def conditionals(self, alpha: Pattern, beta: Pattern
                   ) -> Tuple[float, float]:
    """(p(alpha | beta), p(beta | alpha)); 0 where undefined."""
    na, nb, both = self.counts(alpha, beta)
    return (both / nb if nb else 0.0, both / na if na else 0.0)
