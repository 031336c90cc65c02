"""Pure-Python twin of `forest_arrays._levels`: a node's level by its
definition, whatever the order of the edges."""

from typing import Dict, List


def levels(num_nodes: int, edge_parent, edge_children) -> List[int]:
  """level(v) = 1 + the highest level of a child of any edge at v; 0 if v
  has no edge with a child (only leaf edges, or none). Children are the
  entries >= 0 of an edge's row (-1 pads)."""
  children: Dict[int, List[int]] = {v: [] for v in range(num_nodes)}
  for e, parent in enumerate(edge_parent):
    for c in edge_children[e]:
      if c >= 0:
        children[int(parent)].append(int(c))
  memo: Dict[int, int] = {}

  def level(v):
    if v not in memo:
      memo[v] = max((1 + level(c) for c in children[v]), default=0)
    return memo[v]

  return [level(v) for v in range(num_nodes)]
