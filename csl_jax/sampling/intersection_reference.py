"""Pure-Python twin of `intersection._completion_mass`: Z by its recursive
definition, one (depth, context, category) at a time, memoized."""

import functools
from typing import List


def completion_mass(p, ctx_index, off, opt_rule, opt_child, max_depth: int,
                    leaf_mass) -> List[List[List[float]]]:
  """z[d][c][A] for d in 0..max_depth + 1 (the kernel's array as lists):
  the mass of annotated subtrees in context c at depth d whose output has
  category A. An option o of A (rule opt_rule[o], child categories
  opt_child[o] up to the first -1) adds

    p(r | c) * prod_i Z(d + 1, ctx(r, i), B_i)

  below the depth limit; at d = max_depth only options without children,
  each p(r | c) / leaf_mass[c] (the plain sampler's renormalized leaf draw).
  Past the limit (d = max_depth + 1) and at the unused d = 0: 0."""
  num_ctx = len(p)
  num_cat = len(off) - 1
  options = {a: [] for a in range(num_cat)}  # A -> [(rule, children)]
  for a in range(num_cat):
    for o in range(int(off[a]), int(off[a + 1])):
      children = []
      for b in opt_child[o]:
        if b < 0:
          break
        children.append(int(b))
      options[a].append((int(opt_rule[o]), children))

  @functools.lru_cache(maxsize=None)
  def z(d, c, a):
    if d > max_depth:
      return 0.0
    total = 0.0
    for r, children in options[a]:
      if d == max_depth:
        if not children and p[c][r] > 0:
          total += float(p[c][r]) / float(leaf_mass[c])
        continue
      w = float(p[c][r])
      for i, b in enumerate(children):
        w *= z(d + 1, int(ctx_index[r][i]), b)
      total += w
    return total

  return [[[z(d, c, a) if 1 <= d else 0.0 for a in range(num_cat)]
           for c in range(num_ctx)] for d in range(max_depth + 2)]
