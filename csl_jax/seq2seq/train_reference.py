"""Pure-Python twins of the seq2seq trainer, in float64: `train.loss_fn`
(the token-weighted cross-entropy and accuracy, one token at a time),
`train.learning_rates` (`learning_rate`, one step) and the optimizer's step
(`train.apply_gradients`: `adam_update`, one number at a time)."""

import math
from typing import List, Optional, Sequence, Tuple

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


def learning_rate(config, step: int, model_dim: Optional[int] = None
                  ) -> float:
  """The rate of step `step` (0, 1, ...) of a `TrainConfig`.

  "cosine": from 0 up to `learning_rate` in max(warmup_steps, 1) steps,
  linearly, then a cosine from it down to a tenth of it at num_steps
  (optax's warmup_cosine_decay_schedule as `train` sets it up). "noam":
  learning_rate * model_dim^-0.5 * min(t^-0.5, t * warmup_steps^-1.5) at
  t = step + 1 (no warm-up term when warmup_steps is 0)."""
  peak = config.learning_rate
  if config.schedule == "noam":
    t = step + 1
    warm = t * config.warmup_steps ** -1.5 if config.warmup_steps \
        else math.inf
    return peak / math.sqrt(model_dim) * min(1 / math.sqrt(t), warm)
  warmup = max(config.warmup_steps, 1)
  if step < warmup:
    return peak * step / warmup
  decay = max(config.num_steps, config.warmup_steps + 1) - warmup
  cosine = 0.5 * (1 + math.cos(math.pi * min(step - warmup, decay) / decay))
  return peak * (0.9 * cosine + 0.1)


class AdamState:
  """Adam's step count and moments, one number per parameter."""

  def __init__(self, size: int):
    self.count = 0
    self.mu = [0.0] * size
    self.nu = [0.0] * size


def adam_update(params: Sequence[float], grads: Sequence[float],
                state: AdamState, rate: float, b1: float = 0.9,
                b2: float = 0.999, eps: float = 1e-8,
                weight_decay: float = 0.0, grad_clip: float = 0.0
                ) -> List[float]:
  """The parameters (all of them, flat) after one step on `grads` at
  `rate`; `state` is updated in place. With `grad_clip`, the gradients
  are first scaled to that global norm where theirs is not below it; then
  Adam's bias-corrected moments, the decoupled weight decay added to the
  update, and the update times the rate subtracted (AdamW; weight_decay 0
  is Adam)."""
  grads = [float(g) for g in grads]
  if grad_clip:
    norm = math.sqrt(sum(g * g for g in grads))
    if not norm < grad_clip:
      grads = [g / norm * grad_clip for g in grads]
  state.count += 1
  out = []
  for i, (p, g) in enumerate(zip(params, grads, strict=True)):
    state.mu[i] = b1 * state.mu[i] + (1 - b1) * g
    state.nu[i] = b2 * state.nu[i] + (1 - b2) * g * g
    mu_hat = state.mu[i] / (1 - b1 ** state.count)
    nu_hat = state.nu[i] / (1 - b2 ** state.count)
    update = mu_hat / (math.sqrt(nu_hat) + eps) + weight_decay * p
    out.append(float(p) - rate * update)
  return out
