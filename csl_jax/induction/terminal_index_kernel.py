"""Numba kernel: which rules' terminal sets are subsets of others'. The
search asks this of every rule (its UNIFY partners, and the added rules
that may make it redundant): ~10^5 set queries a COGS step.

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
