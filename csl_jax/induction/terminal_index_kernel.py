"""Numba kernels: which rules' terminal sets are subsets / supersets of
others'. The search asks this of every rule (its UNIFY partners) and every
added rule (the rules it may make redundant): ~10^5 set queries a COGS step.

Term sets are CSR over rules: `flat[off[r]:off[r + 1]]`, distinct int ids
in [0, num_terms). The twin is `terminal_index_reference.py`.
"""

import numba
import numpy as np

from csl_jax import numba_fixes  # noqa: F401  pylint: disable=unused-import


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
    rows[q] = np.sort(np.array(found, np.int64))
  return _csr(rows)


@numba.njit(cache=True)
def supersets(flat, off, post_flat, post_off, q_flat, q_off, num_terms):
  """For each non-empty query term set q (ids < num_terms), the rules whose
  term sets contain q's (ascending), as CSR; post: the rules with each
  term, ascending."""
  mark = np.zeros(num_terms, np.bool_)
  rows = [np.zeros(0, np.int64) for _ in range(q_off.shape[0] - 1)]
  for q in range(q_off.shape[0] - 1):
    terms = q_flat[q_off[q]:q_off[q + 1]]
    rarest = terms[0]
    for t in terms:
      mark[t] = True
      if post_off[t + 1] - post_off[t] < post_off[rarest + 1] - post_off[rarest]:
        rarest = t
    found = []
    for k in range(post_off[rarest], post_off[rarest + 1]):
      r = post_flat[k]
      hits = 0
      for j in range(off[r], off[r + 1]):
        if mark[flat[j]]:
          hits += 1
      if hits == terms.shape[0]:
        found.append(r)
    for t in terms:
      mark[t] = False
    rows[q] = np.array(found, np.int64)
  return _csr(rows)
