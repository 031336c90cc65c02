"""Pure-Python twin of `prune.roots_alive`: recursion over each forest's nodes.

It takes `forest.Forest` objects rather than the kernel's packed arrays.
"""

from typing import List


def roots_alive(forests, dead) -> List[bool]:
  """Per forest, whether its root has a derivation avoiding dead rules."""
  out = []
  for f in forests:
    memo = {}

    def alive(v):
      if v not in memo:
        memo[v] = False  # forests are acyclic; guards only
        memo[v] = any(
            not dead[r] and all(alive(c) for c in cs if c >= 0)
            for r, p, cs in zip(f.edge_rule, f.edge_parent, f.edge_children,
                                strict=True)
            if p == v)
      return memo[v]

    out.append(f.derivable and alive(f.root))
  return out
