"""Twin of `counts.py`: every parse tree of a string, enumerated.

Obviously correct and exponential: for small grammars and strings in tests.
A parse is the tuple of the production indices it uses (with repeats).
"""

import collections
from typing import List, Sequence, Tuple

import numpy as np


def parses(cfg, tokens: Sequence[str]) -> List[Tuple[int, ...]]:
  """All parse trees of `tokens` from `cfg.start`, as production multisets."""
  by_lhs = collections.defaultdict(list)
  for index, production in enumerate(cfg.productions):
    by_lhs[production.lhs].append((index, production.rhs))
  tokens = tuple(tokens)

  def category(name, i, j, depth):
    if depth > len(cfg.productions) + len(tokens):  # a unary cycle
      raise ValueError("unary cycle")
    out = []
    for index, rhs in by_lhs[name]:
      for rest in sequence(rhs, i, j, depth):
        out.append((index,) + rest)
    return out

  def sequence(rhs, i, j, depth):
    if not rhs:
      return [()] if i == j else []
    head, tail = rhs[0], rhs[1:]
    out = []
    # Each symbol covers at least one token (no epsilon productions).
    for k in range(i + 1, j - len(tail) + 1):
      if head.terminal:
        firsts = [()] if k == i + 1 and tokens[i] == head.name else []
      else:
        firsts = category(head.name, i, k, depth + 1)
      if firsts:
        for rest in sequence(tail, k, j, depth):
          out.extend(f + rest for f in firsts)
    return out

  return category(cfg.start, 0, len(tokens), 0)


def expected_counts(cfg, tokens: Sequence[str], weights=None
                    ) -> Tuple[float, np.ndarray]:
  """(number of parses, per-production counts averaged over the parses);
  with production `weights`: (the sum of the trees' weight products, the
  counts averaged with those products as the trees' weights)."""
  trees = parses(cfg, tokens)
  if weights is None:
    weights = np.ones(len(cfg.productions))
  tree_weights = [float(np.prod([weights[i] for i in tree])) for tree in trees]
  z = sum(tree_weights)
  counts = np.zeros(len(cfg.productions))
  for tree, w in zip(trees, tree_weights, strict=True):
    for index in tree:
      counts[index] += w / z
  return z, counts
