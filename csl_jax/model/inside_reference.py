"""Pure-Python twin of `inside.log_likelihood`: recursion in probabilities
(float64) over one `csl_jax.cky.forest.Forest`."""

import math

import numpy as np


def softmax(row):
  row = np.asarray(row, np.float64)
  e = np.exp(row - row.max())
  return e / e.sum()


def log_likelihood(rule_logits, context_logits, ctx_index, forest) -> float:
  """log p(x, y) = log sum over derivations of prod p(r | r_p, i)."""
  p_rule = np.stack([softmax(r) for r in rule_logits])  # S, R
  p_state = np.stack([softmax(c) for c in context_logits])  # C, S
  num_states = p_rule.shape[0]
  memo = {}

  def beta(v):
    if v not in memo:
      total = np.zeros(num_states)
      for r, p, cs in zip(forest.edge_rule, forest.edge_parent,
                          forest.edge_children, strict=True):
        if p != v:
          continue
        prod = p_rule[:, r].copy()
        for i, c in enumerate(cs):
          if c >= 0:
            prod *= float(p_state[ctx_index[r, i]] @ beta(c))
        total += prod
      memo[v] = total
    return memo[v]

  if not forest.derivable:
    return -math.inf
  return math.log(float(p_state[0] @ beta(forest.root)))
