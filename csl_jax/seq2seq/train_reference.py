"""Pure-Python twin of `train.loss_fn`: the token-weighted cross-entropy and
accuracy, one token at a time (float64)."""

import math
from typing import Tuple

import numpy as np


def loss_fn(logits, targets, weights) -> Tuple[float, float]:
  """(sum_t w_t * -log softmax(logits_t)[y_t], sum_t w_t * [argmax_t ==
  y_t]), each over max(sum_t w_t, 1): weights are 0 on padding, and an
  all-padding batch scores 0, not 0 / 0. argmax: the first highest logit.
  Any leading shape; the last axis of `logits` is the vocabulary."""
  logits = np.asarray(logits, np.float64)
  rows = logits.reshape(-1, logits.shape[-1]).tolist()
  targets = np.asarray(targets).reshape(-1).tolist()
  weights = np.asarray(weights, np.float64).reshape(-1).tolist()
  total_loss = total_correct = total_weight = 0.0
  for row, y, w in zip(rows, targets, weights, strict=True):
    top = max(row)
    log_z = top + math.log(sum(math.exp(v - top) for v in row))
    total_loss += w * (log_z - row[y])
    total_correct += w * (row.index(top) == y)  # index: the first maximum
    total_weight += w
  denominator = max(total_weight, 1.0)
  return total_loss / denominator, total_correct / denominator
