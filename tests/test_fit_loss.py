"""CSL's training loss `model.train._loss` (JAX) against its pure-Python
twin (`model.train_reference.loss`), by hand and on random batches."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from csl_jax.cky import forest as forest_lib
from csl_jax.cky.grammar_arrays import encode_qcfg
from csl_jax.model import contexts, train, train_reference
from csl_jax.model.forest_arrays import Layout, common_shape
from csl_jax.qcfg.rules import parse_rules
from csl_jax.testing import walk_run

GRAMMAR = parse_rules(walk_run.GRAMMAR)
PAIRS = walk_run.PAIRS
BATCH, _ = forest_lib.build_forests(encode_qcfg(GRAMMAR, 2), PAIRS)
CTX = contexts.context_index(GRAMMAR, 2)
# Every batch padded to one shape: one compiled loss per setting.
SHAPE = common_shape([Layout(BATCH, range(len(PAIRS)), CTX).shape()])

_loss = jax.jit(train._loss)


def _both(params, examples, weights, rule_mask=None, rule_class=None):
  padded = Layout(BATCH, examples, CTX).pad(weights, SHAPE)
  got = float(_loss(
      jax.tree_util.tree_map(jnp.asarray, params),
      jax.tree_util.tree_map(jnp.asarray, padded),
      None if rule_mask is None else jnp.asarray(rule_mask),
      None if rule_class is None else jnp.asarray(rule_class)))
  want = train_reference.loss(params, [BATCH[b] for b in examples], weights,
                              CTX, rule_mask, rule_class)
  return got, want


@pytest.mark.parametrize("weights,mask,loss", [
    # One state, equal rule logits: p(r) = 1/6. "walk twice" has one
    # derivation (twice-rule, then walk): log 1/36; "walk": log 1/6.
    ([2.0, 1.0], None, (2 * 2 * math.log(6) + math.log(6)) / 3),
    # Normalized over the two rules these use: p(r) = 1/2.
    ([2.0, 1.0], [1, 0, 0, 1, 0, 0], (2 * 2 * math.log(2) + math.log(2)) / 3),
    # Weights summing to less than 1 are divided by 1.
    ([0.25, 0.25], None, 0.25 * (2 * math.log(6) + math.log(6))),
    ([0.0, 1.0], None, math.log(6)),  # only "walk" counts
])
def test_two_examples_by_hand(weights, mask, loss):
  params = {"rule": np.zeros((1, len(GRAMMAR)), np.float32),
            "context": np.zeros((contexts.num_contexts(GRAMMAR), 1),
                                np.float32)}
  mask = None if mask is None else np.array(mask, bool)
  got, want = _both(params, [1, 0], weights, mask)
  assert want == pytest.approx(loss, rel=1e-12)
  assert got == pytest.approx(loss, rel=1e-5)


@pytest.mark.parametrize("seed", range(8))
def test_random_batches_match_the_twin(seed):
  # Seeds alternate: plain or tied rule logits, with or without the batch's
  # rule mask (its rules plus some others, as `Dataset` would not).
  rng = np.random.default_rng(seed)
  num_states = int(rng.integers(1, 4))
  examples = [int(b) for b in rng.permutation(len(PAIRS))[
      :rng.integers(1, len(PAIRS) + 1)]]
  weights = rng.choice([0.0, 1.0, 2.0, 5.0], size=len(examples)).tolist()
  params = {"context": rng.normal(size=(contexts.num_contexts(GRAMMAR),
                                        num_states)).astype(np.float32)}
  rule_class = None
  if seed % 2:
    rule_class = np.array([0, 0, 0, 1, 1, 2], np.int32)  # 3 made-up shapes
    params["rule"] = rng.normal(size=(num_states, 3)).astype(np.float32)
    params["lexical"] = rng.normal(size=len(GRAMMAR)).astype(np.float32)
  else:
    params["rule"] = rng.normal(size=(num_states, len(GRAMMAR))).astype(
        np.float32)
  rule_mask = None
  if seed % 4 >= 2:
    rule_mask = rng.random(len(GRAMMAR)) < 0.3
    for b in examples:
      rule_mask[BATCH[b].edge_rule] = True
  got, want = _both(params, examples, weights, rule_mask, rule_class)
  assert got == pytest.approx(want, rel=1e-5, abs=1e-5)
