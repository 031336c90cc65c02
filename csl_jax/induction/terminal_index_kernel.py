"""Numba kernels: which rules' terminal sets are subsets / supersets of
others'. The search asks this of every rule (its UNIFY partners) and every
added rule (the rules it may make redundant): ~10^5 set queries a COGS step.

Term sets are CSR over rules: `flat[off[r]:off[r + 1]]`, distinct int ids
in [0, num_terms). The twin is `terminal_index_reference.py`.
"""

import numba
import numpy as np

from csl_jax import numba_fixes  # noqa: F401  pylint: disable=unused-import
from csl_jax.sort_kernel import stable_argsort


@numba.njit(cache=True)
def _csr(rows):
  off = np.zeros(len(rows) + 1, np.int64)
  for q in range(len(rows)):
    off[q + 1] = off[q] + len(rows[q])
  flat = np.empty(off[-1], np.int64)
  for q in range(len(rows)):
    for k in range(len(rows[q])):
      flat[off[q] + k] = rows[q][k]
  return flat, off


@numba.njit(cache=True)
def subsets(flat, off, keyed_flat, keyed_off, q_flat, q_off, num_terms):
  """For each query term set q, the rules r with a non-empty term set
  within q's (ascending), as CSR. keyed: the rules listed under one of
  their terms each (a rule within q is listed under a term of q)."""
  mark = np.zeros(num_terms, np.bool_)
  rows = [np.zeros(0, np.int64) for _ in range(q_off.shape[0] - 1)]
  for q in range(q_off.shape[0] - 1):
    terms = q_flat[q_off[q]:q_off[q + 1]]
    for t in terms:
      mark[t] = True
    found = []
    for t in terms:
      for k in range(keyed_off[t], keyed_off[t + 1]):
        r = keyed_flat[k]
        inside = True
        for j in range(off[r], off[r + 1]):
          if not mark[flat[j]]:
            inside = False
            break
        if inside:
          found.append(r)
    for t in terms:
      mark[t] = False
    row = np.array(found, np.int64)
    rows[q] = row[stable_argsort(row)]
  return _csr(rows)


@numba.njit(cache=True, inline="always")
def _contains(flat, lo, hi, t):
  """Whether the sorted flat[lo:hi] holds t."""
  end = hi
  while lo < hi:
    mid = (lo + hi) >> 1
    if flat[mid] < t:
      lo = mid + 1
    else:
      hi = mid
  return lo < end and flat[lo] == t


@numba.njit(cache=True)
def supersets(flat, off, post_flat, post_off, q_flat, q_off, num_terms):
  """For each non-empty query term set q (ids < num_terms), the rules whose
  term sets contain q's (ascending), as CSR; post: the rules with each
  term, ascending. Each rule's terms are sorted.

  When q's rarest term is common (more rules than 2 bits a word of a
  bitset over the rules), the AND of q's terms' bitsets; else each rule
  with q's rarest term is checked for the others, rarest first, by binary
  search (most fail on the first). Bitsets are kept for the common terms
  only: at most 4 bytes per (rule, term) entry."""
  num_rules = off.shape[0] - 1
  words = (num_rules + 63) // 64
  common = 2 * words
  slot = np.full(num_terms, -1, np.int64)
  num_common = 0
  for t in range(num_terms):
    if post_off[t + 1] - post_off[t] > common:
      slot[t] = num_common
      num_common += 1
  bits = np.zeros((num_common, words), np.uint64)
  one = np.uint64(1)
  for t in range(num_terms):
    if slot[t] >= 0:
      for k in range(post_off[t], post_off[t + 1]):
        r = post_flat[k]
        bits[slot[t], r >> 6] |= one << np.uint64(r & 63)
  acc = np.empty(words, np.uint64)
  rows = [np.zeros(0, np.int64) for _ in range(q_off.shape[0] - 1)]
  for q in range(q_off.shape[0] - 1):
    terms = q_flat[q_off[q]:q_off[q + 1]].copy()
    size = np.empty(terms.shape[0], np.int64)
    for k in range(terms.shape[0]):
      size[k] = post_off[terms[k] + 1] - post_off[terms[k]]
    terms = terms[stable_argsort(size)]
    rarest = terms[0]
    found = []
    if slot[rarest] >= 0:  # every term of q is common
      acc[:] = bits[slot[rarest]]
      for m in range(1, terms.shape[0]):
        acc &= bits[slot[terms[m]]]
      for w in range(words):
        word = acc[w]
        b = 0
        while word != 0:
          if word & one:
            found.append(w * 64 + b)
          word >>= one
          b += 1
    else:
      for k in range(post_off[rarest], post_off[rarest + 1]):
        r = post_flat[k]
        inside = True
        for m in range(1, terms.shape[0]):
          if not _contains(flat, off[r], off[r + 1], terms[m]):
            inside = False
            break
        if inside:
          found.append(r)
    rows[q] = np.array(found, np.int64)
  return _csr(rows)
