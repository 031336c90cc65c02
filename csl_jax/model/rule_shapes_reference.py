"""Numpy twin of `rule_shapes.tied_rule_logits`, one probability at a time."""

import numpy as np


def tied_rule_logits(shape_logits, lexical_logits, rule_class):
  """[S, R] log p(r | s), one probability at a time."""
  shape_logits = np.asarray(shape_logits, np.float64)
  lexical_logits = np.asarray(lexical_logits, np.float64)
  out = np.zeros((shape_logits.shape[0], len(rule_class)))
  for s, row in enumerate(shape_logits):
    p_shape = np.exp(row) / np.exp(row).sum()
    for r, c in enumerate(rule_class):
      same = [q for q in range(len(rule_class)) if rule_class[q] == c]
      p_within = (np.exp(lexical_logits[r])
                  / sum(np.exp(lexical_logits[q]) for q in same))
      out[s, r] = np.log(p_shape[c] * p_within)
  return out
