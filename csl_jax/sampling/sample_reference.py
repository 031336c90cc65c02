"""Pure-Python twin of `sample_kernel`: the exact distribution of sampled
(input, output) pairs, by enumerating derivations up to the depth limit."""

import collections
from typing import Dict, Tuple

import numpy as np

from csl_jax.qcfg.rules import nt_index


def pair_distribution(rules, p, leaf, ctx_index, max_depth: int
                      ) -> Dict[Tuple[str, str], float]:
  """P(x, y) of the sampler: from context c at depth d, rule r is drawn with
  p[c, r] (leaf[c, r] at d >= max_depth, both renormalized per row)."""

  def expand(ctx, depth):
    row = leaf[ctx] if depth >= max_depth else p[ctx]
    total = float(np.sum(row))
    out = collections.Counter()
    if total <= 0:
      return out
    for r, rule in enumerate(rules):
      if row[r] <= 0:
        continue
      kids = []
      for i in range(rule.num_nts):
        kids.append(expand(ctx_index[r, i], depth + 1))
      partial = [({}, row[r] / total)]
      for i, dist in enumerate(kids):
        partial = [({**b, i + 1: pair}, q * w) for b, q in partial
                   for pair, w in dist.items()]
      for binding, q in partial:
        x = tuple(t for s in rule.source for t in (
            binding[nt_index(s)][0] if nt_index(s) else (s,)))
        y = tuple(t for s in rule.target for t in (
            binding[nt_index(s)][1] if nt_index(s) else (s,)))
        out[(x, y)] += q
    return out

  dist = expand(0, 1)
  return {(" ".join(x), " ".join(y)): q for (x, y), q in dist.items()}
