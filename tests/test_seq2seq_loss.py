"""`seq2seq.train.loss_fn` (JAX) against its pure-Python twin
(`seq2seq.train_reference.loss_fn`), by hand and on random batches."""

import math

import jax
import numpy as np
import pytest

from csl_jax.seq2seq import train
from csl_jax.seq2seq import train_reference

# One compiled program per shape (eager, each test dispatched ~1 s of ops).
_loss_fn = jax.jit(train.loss_fn)


def _both(logits, targets, weights):
  logits = np.asarray(logits, np.float32)
  targets = np.asarray(targets, np.int32)
  weights = np.asarray(weights, np.float32)
  got = tuple(float(v) for v in _loss_fn(logits, targets, weights))
  return got, train_reference.loss_fn(logits, targets, weights)


@pytest.mark.parametrize("weights,loss,accuracy", [
    # Token 1: logits (0, 0), target 0: -log 1/2, and argmax 0 (the first
    # of a tie) is right. Token 2: logits (log 3, 0), target 1: -log 1/4,
    # argmax 0 is wrong.
    ([1, 1], (math.log(2) + math.log(4)) / 2, 1 / 2),
    ([1, 0], math.log(2), 1.0),  # token 2 is padding
    ([2, 1], (2 * math.log(2) + math.log(4)) / 3, 2 / 3),
    ([0.25, 0.25], 0.25 * (math.log(2) + math.log(4)), 0.25),  # over 1
    ([0, 0], 0.0, 0.0),  # all padding: 0, not 0 / 0
])
def test_two_tokens_by_hand(weights, loss, accuracy):
  logits = [[[0.0, 0.0], [math.log(3), 0.0]]]
  got, want = _both(logits, [[0, 1]], [weights])
  assert want == pytest.approx((loss, accuracy), rel=1e-6, abs=1e-9)
  assert got == pytest.approx((loss, accuracy), rel=1e-6, abs=1e-7)


@pytest.mark.parametrize("seed", range(6))
def test_random_batches_match_the_twin(seed):
  rng = np.random.default_rng(seed)
  b, t, v = 3, 5, 4  # one shape: one compile
  # Small integer logits: ties for the argmax are common.
  logits = rng.integers(-2, 3, size=(b, t, v)) * rng.choice([0.5, 1.7])
  targets = rng.integers(0, v, size=(b, t))
  weights = rng.choice([0.0, 0.0, 1.0, 1.0, 0.5, 3.0], size=(b, t))
  got, want = _both(logits, targets, weights)
  assert got == pytest.approx(want, rel=1e-5, abs=1e-6)
