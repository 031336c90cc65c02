"""Numba kernel: IBM Model 1's EM iterations over a corpus' links.

The numpy formulation (three `bincount`s and two gathers an iteration over
~10^7 links on COGS) made most of the seed rules' time; here each
iteration is two passes. The sums run in the same order as those
`bincount`s did, so the table is the same to the bit (the COGS grammar's
md5 in BENCHMARKS.md, issue 17). The twin is `ibm1_reference.py`.
"""

import numba
import numpy as np

from csl_jax import numba_fixes  # noqa: F401  pylint: disable=unused-import


@numba.njit(cache=True)
def em(group_start, pair_of_link, pair_src, num_src, table, num_iterations):
  """t(f | e) after `num_iterations` of EM from `table`: links grouped by
  target position (group g: links group_start[g] to group_start[g + 1], the
  last to the end), each link's stored (e, f) pair, each pair's e."""
  num_links = pair_of_link.shape[0]
  num_groups = group_start.shape[0]
  num_pairs = table.shape[0]
  table = table.copy()
  for _ in range(num_iterations):
    counts = np.zeros(num_pairs)
    for g in range(num_groups):
      lo = group_start[g]
      hi = group_start[g + 1] if g + 1 < num_groups else num_links
      norm = 0.0
      for k in range(lo, hi):
        norm += table[pair_of_link[k]]
      for k in range(lo, hi):
        counts[pair_of_link[k]] += table[pair_of_link[k]] / norm
    totals = np.zeros(num_src)
    for p in range(num_pairs):
      totals[pair_src[p]] += counts[p]
    for p in range(num_pairs):
      table[p] = counts[p] / totals[pair_src[p]]
  return table
