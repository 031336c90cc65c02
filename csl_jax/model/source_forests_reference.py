"""The obviously-correct twin of `source_forests.py`: one input at a time,
`forest.parse_source` then the unrolling in Python loops. Tests check the
batched version gives the same arrays."""

from typing import List, Sequence

import numpy as np

from csl_jax.cky import forest as forest_lib
from csl_jax.cky.forest import Forest, ForestBatch


def unrolled_forest(source: forest_lib.SourceForest, unary_rules,
                    max_unary: int = 2) -> Forest:
  """A DAG Forest over (span, unary depth) nodes; root last."""
  num_spans = source.spans.shape[0]
  if not num_spans:
    width = source.edge_children.shape[1] if source.edge_children.ndim == 2 \
        else 1
    return Forest(np.zeros((0, 4), np.int32), np.zeros(0, np.int32),
                  np.zeros(0, np.int32), np.zeros((0, width), np.int32))
  width = source.edge_children.shape[1]
  by_span = [[] for _ in range(num_spans)]
  unary_by_span = [[] for _ in range(num_spans)]
  for r, p, cs in zip(source.edge_rule, source.edge_parent,
                      source.edge_children, strict=True):
    (unary_by_span if r in unary_rules else by_span)[p].append((r, cs))
  depth = max_unary if any(unary_by_span) else 0
  # Node (span, k) has id span * (depth + 1) + k; spans are shortest first,
  # so children (other spans at full depth, or the same span at k - 1) come
  # first. The top copy of each span is what parents use.
  top = lambda v: v * (depth + 1) + depth
  rules: List[int] = []
  parents: List[int] = []
  children: List[np.ndarray] = []
  for v in range(num_spans):
    for k in range(depth + 1):
      node = v * (depth + 1) + k
      for r, cs in by_span[v]:
        rules.append(r)
        parents.append(node)
        children.append(np.where(cs >= 0, [top(c) for c in cs], -1))
      if k:
        for r, _ in unary_by_span[v]:
          rules.append(r)
          parents.append(node)
          children.append(np.array([node - 1] + [-1] * (width - 1)))
  num_nodes = num_spans * (depth + 1)
  nodes = np.zeros((num_nodes, 4), np.int32)
  for v in range(num_spans):
    nodes[v * (depth + 1):(v + 1) * (depth + 1), :2] = source.spans[v]
  # The root span (0, n) is the last span: it is the longest.
  return Forest(nodes, np.array(rules, np.int32),
                np.array(parents, np.int32),
                np.array(children, np.int32).reshape(-1, width))


def source_forest_batch(grammar, inputs: Sequence[str],
                        max_unary: int = 2) -> ForestBatch:
  unary = {r for r, rule in enumerate(grammar.rules) if rule.is_unary_source}
  forests = [unrolled_forest(forest_lib.parse_source(grammar, x,
                                                     max_source_len=10**9),
                             unary, max_unary) for x in inputs]
  node_off = np.cumsum([0] + [f.nodes.shape[0] for f in forests])
  edge_off = np.cumsum([0] + [f.edge_rule.shape[0] for f in forests])
  width = max(grammar.max_nts, 1)
  cat = lambda xs, shape: (np.concatenate(xs) if xs else
                           np.zeros(shape, np.int32))
  return ForestBatch(
      node_off, edge_off, cat([f.nodes for f in forests], (0, 4)),
      cat([f.edge_rule for f in forests], (0,)).astype(np.int32),
      cat([f.edge_parent for f in forests], (0,)).astype(np.int32),
      cat([f.edge_children[:, :width] if f.edge_children.size else
           np.zeros((0, width), np.int32) for f in forests],
          (0, width)).astype(np.int32))
