"""Numba kernel: (#inputs with alpha, #outputs with beta, #both) in one call.

The objective asks this of ~2*10^5 rules on COGS, each pattern new; calling
the occurrence kernels per step (postings, matching, expanding distinct
sequences to examples, the joint) cost ~10 numba dispatches and numpy
allocations a rule. The twin is `statistics_reference.py`.

A side is a tuple of arrays over its distinct sequences: (flat, offsets,
lengths, post_flat, post_off, mult, examples_flat, examples_off, set_flat,
set_off, bit_of, common): tokens, postings by token id (sorted distinct
ids; the last id is an unknown token's, with no postings), how many
examples have each distinct sequence, which, each sequence's distinct
tokens (sorted), and of the 64 most common tokens each one's bit (-1: not
one of them) and the word of them each sequence has. Patterns are int32
codes: terminals >= 0, NT_k = -k.
"""

import numba
import numpy as np

from csl_jax import numba_fixes  # noqa: F401  pylint: disable=unused-import
from csl_jax.qcfg.occurrence_kernel import match_examples


@numba.njit(cache=True)
def _has(set_flat, lo, hi, t):
  """t in the sorted set_flat[lo:hi] (binary search)."""
  end = hi
  while lo < hi:
    mid = (lo + hi) >> 1
    if set_flat[mid] < t:
      lo = mid + 1
    else:
      hi = mid
  return lo < end and set_flat[lo] == t


@numba.njit(cache=True)
def _distinct_hits(side, codes):
  """Sorted ids of the distinct sequences the pattern occurs in."""
  flat, offsets, lengths, post_flat, post_off = side[:5]
  set_flat, set_off, bit_of, common = side[8], side[9], side[10], side[11]
  size = codes.shape[0]
  num_nts = np.int64(0)  # not the literal: one compiled match_examples
  terms = np.empty(size, np.int64)
  num_terms = 0
  for c in codes:
    if c < 0:
      num_nts = max(num_nts, -c)
      continue
    seen = False
    for k in range(num_terms):
      seen = seen or terms[k] == c
    if not seen:
      terms[num_terms] = c
      num_terms += 1
  if num_terms == 0:
    candidates = np.flatnonzero(lengths >= size).astype(np.int64)
  else:
    # The rarest term's postings, kept where every other term occurs too:
    # the match runs only on sequences with all the terms. The most common
    # tokens are bits of a word a sequence; the others, rarest first, a
    # binary search in the sequence's token set. Terms rarest first by an
    # insertion sort (np.argsort would lengthen the first compile;
    # BENCHMARKS "Issue 17 → COGS fit < 60 s on the slower box").
    freq = np.empty(num_terms, np.int64)
    for k in range(num_terms):
      t = terms[k]
      f = post_off[t + 1] - post_off[t]
      j = k
      while j > 0 and freq[j - 1] > f:
        freq[j] = freq[j - 1]
        terms[j] = terms[j - 1]
        j -= 1
      freq[j] = f
      terms[j] = t
    rarest = terms[0]
    need = np.uint64(0)
    rare = np.empty(num_terms, np.int64)
    num_rare = 0
    for k in range(1, num_terms):
      if bit_of[terms[k]] >= 0:
        need |= np.uint64(1) << np.uint64(bit_of[terms[k]])
      else:
        rare[num_rare] = terms[k]
        num_rare += 1
    post = post_flat[post_off[rarest]:post_off[rarest + 1]]
    candidates = np.empty(post.shape[0], np.int64)
    kept = 0
    for d in post:
      ok = (common[d] & need) == need
      for k in range(num_rare):
        if not ok:
          break
        ok = _has(set_flat, set_off[d], set_off[d + 1], rare[k])
      if ok:
        candidates[kept] = d
        kept += 1
    candidates = candidates[:kept]
  hits = match_examples(flat, offsets, candidates, codes, num_nts)
  return candidates[hits]


@numba.njit(cache=True)
def pair_counts(src, tgt, alpha, beta, a, b, tgt_of_example, mark):
  """(#examples whose input contains alpha, #whose output contains beta,
  #both, alpha's distinct hits, beta's). An empty pattern stands for one
  whose hits are known: `a` (`b`); the caller caches hits, as patterns
  recur (SCAN: ~2 rules a pattern). `mark` is scratch over the target
  side's distinct sequences, all False on entry and on return."""
  if alpha.shape[0]:
    a = _distinct_hits(src, alpha)
  if beta.shape[0]:
    b = _distinct_hits(tgt, beta)
  na = 0
  for d in a:
    na += src[5][d]
  nb = 0
  for d in b:
    nb += tgt[5][d]
    mark[d] = True
  joint = 0
  examples_flat, examples_off = src[6], src[7]
  for d in a:
    for k in range(examples_off[d], examples_off[d + 1]):
      if mark[tgt_of_example[examples_flat[k]]]:
        joint += 1
  for d in b:
    mark[d] = False
  return na, nb, joint, a, b
