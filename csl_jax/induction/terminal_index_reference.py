"""Pure-Python twin of `terminal_index_kernel`: the set definitions, with
the kernels' CSR arguments."""

import numpy as np


def _sets(flat, off):
  return [set(flat[off[r]:off[r + 1]].tolist()) for r in range(len(off) - 1)]


def _csr(rows):
  off = np.zeros(len(rows) + 1, np.int64)
  off[1:] = np.cumsum([len(r) for r in rows])
  return np.array([x for r in rows for x in r], np.int64), off


def subsets(flat, off, keyed_flat, keyed_off, q_flat, q_off, num_terms):
  del keyed_flat, keyed_off, num_terms  # speed-ups of the kernel
  rules, queries = _sets(flat, off), _sets(q_flat, q_off)
  return _csr([[r for r, s in enumerate(rules) if s and s <= q]
               for q in queries])
