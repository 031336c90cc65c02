"""Occurrence statistics for the induction objective (CSL Eq. 7).

p(alpha | beta) is the share of training examples whose output contains
beta (under some NT substitution) whose input also contains alpha, and
p(beta | alpha) vice versa. The counts are one call of
`statistics_kernel.pair_counts` a rule (the objective caches rule costs).
"""

from typing import Dict, Sequence, Tuple

import numpy as np

from csl_jax.induction import statistics_kernel
from csl_jax.qcfg.occurrence import OccurrenceIndex, Pattern
from csl_jax.qcfg.rules import nt_index


def _side(index: OccurrenceIndex) -> tuple:
  """`statistics_kernel`'s arrays of one side (see its docstring)."""
  num_tokens = len(index.vocab)
  post_off = np.zeros(num_tokens + 2, np.int64)  # id num_tokens: unknown
  for t, ids in index.postings.items():
    post_off[t + 1] = len(ids)
  np.cumsum(post_off, out=post_off)
  post_flat = np.zeros(post_off[-1], np.int64)
  for t, ids in index.postings.items():
    post_flat[post_off[t]:post_off[t + 1]] = ids
  num_distinct = len(index.lengths)
  mult = np.bincount(index.distinct_of, minlength=num_distinct)
  examples_flat = np.argsort(index.distinct_of, kind="stable")
  examples_off = np.zeros(num_distinct + 1, np.int64)
  np.cumsum(mult, out=examples_off[1:])
  # Each distinct sequence's sorted token set, from the postings (ids
  # ascending within a token, tokens ascending): a stable sort by sequence.
  owner = np.repeat(np.arange(num_tokens + 1), np.diff(post_off))
  by_seq = np.argsort(post_flat, kind="stable")
  set_flat = owner[by_seq].astype(np.int64)
  set_off = np.zeros(num_distinct + 1, np.int64)
  np.cumsum(np.bincount(post_flat, minlength=num_distinct),
            out=set_off[1:])
  # The 64 most common tokens as bits of one word a sequence.
  freq = np.diff(post_off)
  top = np.argsort(-freq, kind="stable")[:64]
  top = top[freq[top] > 0]
  bit_of = np.full(num_tokens + 1, -1, np.int64)
  bit_of[top] = np.arange(len(top))
  common = np.zeros(num_distinct, np.uint64)
  for bit, t in enumerate(top):
    common[post_flat[post_off[t]:post_off[t + 1]]] |= np.uint64(1 << bit)
  return (index.flat, index.offsets, index.lengths.astype(np.int64),
          post_flat, post_off, mult.astype(np.int64),
          examples_flat.astype(np.int64), examples_off, set_flat, set_off,
          bit_of, common)


_KNOWN = np.zeros(0, np.int32)  # the pattern code for "hits given"
_NO_HITS = np.zeros(0, np.int64)


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
    self._src = _side(self.source)
    self._tgt = _side(self.target)
    self._mark = np.zeros(len(self.target.lengths), np.bool_)
    self._src_codes: Dict[str, int] = {}
    # Each pattern's distinct hits (sorted ids of distinct sequences).
    self._src_hits: Dict[Pattern, np.ndarray] = {}
    self._tgt_hits: Dict[Pattern, np.ndarray] = {}
    self._tgt_codes: Dict[str, int] = {}

  @staticmethod
  def _codes(pattern: Pattern, vocab, cache) -> np.ndarray:
    """Kernel codes; `cache` maps tokens to codes (NTs included)."""
    try:
      return np.array(list(map(cache.__getitem__, pattern)), np.int32)
    except KeyError:
      unknown = len(vocab)
      for t in pattern:
        cache[t] = -nt_index(t) if nt_index(t) else vocab.get(t, unknown)
      return np.array(list(map(cache.__getitem__, pattern)), np.int32)

  def counts(self, alpha: Pattern, beta: Pattern) -> Tuple[int, int, int]:
    """(#alpha in input, #beta in output, #both) over the examples."""
    a = self._src_hits.get(alpha)
    b = self._tgt_hits.get(beta)
    na, nb, joint, a_new, b_new = statistics_kernel.pair_counts(
        self._src, self._tgt,
        _KNOWN if a is not None else self._codes(
            alpha, self.source.vocab, self._src_codes),
        _KNOWN if b is not None else self._codes(
            beta, self.target.vocab, self._tgt_codes),
        _NO_HITS if a is None else a, _NO_HITS if b is None else b,
        self.target.distinct_of, self._mark)
    if a is None:
      self._src_hits[alpha] = a_new
    if b is None:
      self._tgt_hits[beta] = b_new
    return int(na), int(nb), int(joint)

  def conditionals(self, alpha: Pattern, beta: Pattern
                   ) -> Tuple[float, float]:
    """(p(alpha | beta), p(beta | alpha)); 0 where undefined."""
    na, nb, both = self.counts(alpha, beta)
    return (both / nb if nb else 0.0, both / na if na else 0.0)
