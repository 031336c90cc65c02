"""A stable argsort and a binary search for numba kernels.

numba compiles its own `np.sort` / `np.argsort` again inside every cached
kernel that calls them, seconds each on a cold cache (BENCHMARKS.md "Issue
17 → The first run within 2×"); kernels call this one instead, compiled once
and loaded from the cache by the others. The twin is
`sort_kernel_reference.py`.
"""

import numba
import numpy as np

from csl_jax import numba_fixes  # noqa: F401  pylint: disable=unused-import


@numba.njit(cache=True)
def stable_argsort(keys):
  """np.argsort(keys, kind="stable") of a 1-D int64 array: bottom-up merge
  sort."""
  n = keys.shape[0]
  idx = np.empty(n, np.int64)
  for q in range(n):
    idx[q] = q
  tmp = np.empty(n, np.int64)
  width = 1
  while width < n:
    for lo in range(0, n, 2 * width):
      mid = min(lo + width, n)
      hi = min(lo + 2 * width, n)
      i, j = lo, mid
      for o in range(lo, hi):
        if j < hi and (i >= mid or keys[idx[j]] < keys[idx[i]]):
          tmp[o] = idx[j]
          j += 1
        else:
          tmp[o] = idx[i]
          i += 1
    idx, tmp = tmp, idx
    width *= 2
  return idx


@numba.njit(cache=True)
def lower_bound(sorted_values, value):
  """The first index i with sorted_values[i] >= value (len if none), as
  np.searchsorted(..., side="left")."""
  lo, hi = 0, sorted_values.shape[0]
  while lo < hi:
    mid = (lo + hi) // 2
    if sorted_values[mid] < value:
      lo = mid + 1
    else:
      hi = mid
  return lo
