"""Pure-Python twin of `train._loss`: CSL's training loss, the weighted mean
of -log p(x, y) over a batch's examples, one example at a time."""

import math
from typing import Optional, Sequence

import numpy as np

from csl_jax.model import inside_reference
from csl_jax.model import rule_shapes_reference


def loss(params, forests: Sequence, weights: Sequence[float], ctx_index,
         rule_mask: Optional[Sequence[bool]] = None,
         rule_class: Optional[Sequence[int]] = None) -> float:
  """-sum_b w_b log p(x_b, y_b) / max(sum_b w_b, 1) over `forests`
  (`csl_jax.cky.forest.Forest`s, unpadded). params: {"rule": [S, R],
  "context": [C, S]}, or with "lexical" the tied model ("rule": [S,
  shapes], `rule_class` each rule's shape). With `rule_mask`, p(r | s) is
  normalized over the masked rules only (the others have probability 0)."""
  if "lexical" in params:
    rule_logits = rule_shapes_reference.tied_rule_logits(
        params["rule"], params["lexical"], rule_class)
  else:
    rule_logits = np.array(params["rule"], np.float64)
  if rule_mask is not None:
    for r, keep in enumerate(rule_mask):
      if not keep:
        rule_logits[:, r] = -math.inf  # softmax: exp(-inf) = 0
  total, weight = 0.0, 0.0
  for forest, w in zip(forests, weights, strict=True):
    weight += float(w)
    if w:  # a weight-0 example adds nothing, even if underivable
      total += float(w) * inside_reference.log_likelihood(
          rule_logits, np.asarray(params["context"], np.float64),
          ctx_index, forest)
  return -total / max(weight, 1.0)
