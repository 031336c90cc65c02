"""Numba kernel: (#inputs with alpha, #outputs with beta, #both) in one call.

The objective asks this of ~2*10^5 rules on COGS, each pattern new; calling
the occurrence kernels per step (postings, matching, expanding distinct
sequences to examples, the joint) cost ~10 numba dispatches and numpy
allocations a rule. The twin is `statistics_reference.py`.

A side is a tuple of arrays over its distinct sequences: (flat, offsets,
lengths, post_flat, post_off, mult, examples_flat, examples_off): tokens,
postings by token id (sorted distinct ids; the last id is an unknown
token's, with no postings), how many examples have each distinct sequence,
and which. Patterns are int32 codes: terminals >= 0, NT_k = -k.
"""

import numba
import numpy as np

from csl_jax import numba_fixes  # noqa: F401  pylint: disable=unused-import
from csl_jax.qcfg.occurrence_kernel import intersect_sorted, match_examples
from csl_jax.sort_kernel import stable_argsort


@numba.njit(cache=True)
def _distinct_hits(flat, offsets, lengths, post_flat, post_off, codes):
  """Sorted ids of the distinct sequences the pattern occurs in."""
  size = codes.shape[0]
  num_nts = np.int64(0)  # not the literal: one compiled match_examples
  terms = []
  for c in codes:
    if c < 0:
      num_nts = max(num_nts, -c)
    elif c not in terms:
      terms.append(c)
  if len(terms) == 0:
    candidates = np.flatnonzero(lengths >= size).astype(np.int64)
  else:
    # The rarest posting lists first; a few intersections prune most misses.
    sizes = np.array([post_off[t + 1] - post_off[t] for t in terms])
    order = stable_argsort(sizes)
    t0 = terms[order[0]]
    candidates = post_flat[post_off[t0]:post_off[t0 + 1]]
    for k in range(1, min(3, len(terms))):
      t = terms[order[k]]
      candidates = intersect_sorted(candidates,
                                    post_flat[post_off[t]:post_off[t + 1]])
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
    a = _distinct_hits(src[0], src[1], src[2], src[3], src[4], alpha)
  if beta.shape[0]:
    b = _distinct_hits(tgt[0], tgt[1], tgt[2], tgt[3], tgt[4], beta)
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
