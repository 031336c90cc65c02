"""The JAX inside pass against its pure-Python twin; fitting basics."""

import math

import hypothesis
from hypothesis import strategies as st
import jax
import jax.numpy as jnp
import numpy as np

from csl_jax.cky import forest as forest_lib
from csl_jax.cky.grammar_arrays import encode_qcfg
from csl_jax.model import contexts, inside, inside_reference, train
from csl_jax.model.forest_arrays import pad_forests
from csl_jax.model.source_forests import source_forest_batch
from csl_jax.qcfg.rules import parse_rules
from csl_jax.testing import walk_run

GRAMMAR = parse_rules(walk_run.GRAMMAR)
PAIRS = [("walk", "W"), ("walk twice", "W W"), ("walk and run", "W R"),
         ("walk and run twice", "W R R"), ("walk and run twice", "W R W R"),
         ("walk run", "W R"), ("walk run twice", "W R W R"),
         ("run walk and walk twice", "R W W W")]


# Compiled (one program per shape): op by op, an inside pass over the
# blocks costs a second of dispatch per call.
_log_likelihood = jax.jit(inside.log_likelihood)


def _setup(num_states, seed):
  g = encode_qcfg(GRAMMAR, 2)
  batch, _ = forest_lib.build_forests(g, PAIRS)
  ctx = contexts.context_index(GRAMMAR, 2)
  rng = np.random.default_rng(seed)
  params = {"rule": jnp.asarray(rng.normal(size=(num_states, len(GRAMMAR))),
                                jnp.float32),
            "context": jnp.asarray(rng.normal(
                size=(contexts.num_contexts(GRAMMAR), num_states)),
                jnp.float32)}
  return g, batch, ctx, params


@hypothesis.settings(max_examples=25, deadline=None)
@hypothesis.given(st.integers(1, 4), st.integers(0, 10**6),
                  st.permutations(range(len(PAIRS))))
def test_inside_matches_twin(num_states, seed, order):
  # The pairs in any order: the padded batch's node 0 is then sometimes a
  # child (a kernel that read node 0 as "no child" passed in one order).
  _, batch, ctx, params = _setup(num_states, seed)
  padded = pad_forests(batch, order, [1.0] * len(PAIRS), ctx)
  got = np.asarray(_log_likelihood(params, padded))[:len(PAIRS)]
  want = [inside_reference.log_likelihood(
      np.asarray(params["rule"]), np.asarray(params["context"]), ctx,
      batch[b]) for b in order]
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_child_slots_are_the_forest_children_by_level():
  # "walk twice" (pair 1): leaf edge walk -> W (level 0, no slots), then
  # the twice-rule edge with one child (level 1: one slot, context of the
  # twice-rule's NT_1). Only real children become slots.
  _, batch, ctx, _ = _setup(1, 0)
  padded = pad_forests(batch, [1], [1.0], ctx)
  blocks = padded.blocks
  assert blocks[0][5] == 0  # leaves only
  s0, s_size = blocks[1][4], blocks[1][5]
  child = padded.slot_child[s0:s0 + s_size]
  assert (child >= 0).sum() == 1
  real = int(np.flatnonzero(child >= 0)[0])
  assert padded.slot_ctx[s0 + real] == ctx[0, 0]
  edge = padded.slot_edge[s0 + real]
  assert padded.edge_rule[blocks[1][0] + edge] == 0  # the twice-rule
  # Over every pair: one slot per child in the forests.
  padded = pad_forests(batch, range(len(PAIRS)), [1.0] * len(PAIRS), ctx)
  want = sum(int((np.asarray(batch[b].edge_children)[:, :2] >= 0).sum())
             for b in range(len(PAIRS)))
  assert int((padded.slot_child >= 0).sum()) == want


def test_gradients_are_finite_and_match_finite_differences():
  _, batch, ctx, params = _setup(2, 0)
  padded = pad_forests(batch, range(len(PAIRS)), [1.0] * len(PAIRS), ctx)
  loss = jax.jit(lambda p: -inside.log_likelihood(p, padded).sum())
  grads = jax.jit(jax.grad(loss))(params)
  assert all(bool(jnp.isfinite(g).all()) for g in grads.values())
  eps = 1e-2
  bumped = dict(params, rule=params["rule"].at[0, 0].add(eps))
  numeric = (loss(bumped) - loss(params)) / eps
  assert abs(float(numeric) - float(grads["rule"][0, 0])) < 5e-2


def test_single_derivation_probability_by_hand():
  # With one state, p(r | context) = softmax(rule logits); "walk twice" has
  # one derivation: root -> twice-rule, then walk under twice.
  _, batch, ctx, params = _setup(1, 3)
  b = 1
  padded = pad_forests(batch, [b], [1.0], ctx)
  p = jax.nn.softmax(params["rule"][0])
  want = math.log(float(p[0] * p[3]))
  got = float(_log_likelihood(params, padded)[0])
  assert abs(got - want) < 1e-5


def test_log_p_x_sums_over_outputs():
  # p(x) over the source forest equals the sum of p(x, y) over the outputs
  # the grammar gives x (no unary rules here, so nothing is truncated).
  g, _, ctx, params = _setup(2, 1)
  x = "walk and run twice"
  outputs = [("walk and run twice", "W R R"),
             ("walk and run twice", "W R W R")]
  batch, _ = forest_lib.build_forests(g, outputs)
  joint = _log_likelihood(params, pad_forests(batch, [0, 1], [1, 1],
                                               ctx))[:2]
  src = source_forest_batch(g, [x])
  marginal = _log_likelihood(params, pad_forests(src, [0], [1], ctx))
  assert abs(float(jax.nn.logsumexp(joint)) - float(marginal[0])) < 1e-4


def test_fit_raises_likelihood_and_resumes(tmp_path):
  pairs = [(x.split(), y.split()) for x, y in PAIRS]
  config = train.FitConfig(num_states=2, learning_rate=0.1, num_steps=60,
                           checkpoint_every=30, patience=1000)
  ckpt = str(tmp_path / "ckpt.msgpack")
  params, history, data = train.fit(GRAMMAR, pairs, config, 2, ckpt)
  assert history[-1][1] < history[0][1] - 0.5
  assert data.num_underivable == 0 and len(history) == 60
  # Resuming a finished run does no more steps and keeps the parameters.
  again, history2, _ = train.fit(GRAMMAR, pairs, config, 2, ckpt)
  assert len(history2) == 60
  np.testing.assert_allclose(again["rule"], params["rule"])
  # Same seed, same parameters.
  fresh, _, _ = train.fit(GRAMMAR, pairs, config, 2)
  np.testing.assert_allclose(fresh["rule"], params["rule"], atol=1e-6)


def test_batch_rule_normalizer_renormalizes_over_the_batch_rules():
  params = {"rule": jnp.array([[0.0, 1.0, 2.0, 3.0]]),
            "context": jnp.zeros((1, 1))}
  mask = jnp.array([True, False, True, False])
  log_rule, _ = inside.log_probs(params, mask)
  p = np.exp(np.asarray(log_rule[0]))
  np.testing.assert_allclose(p[[0, 2]], [1 / (1 + math.e ** 2),
                                         math.e ** 2 / (1 + math.e ** 2)],
                             rtol=1e-6)
  assert p[1] < 1e-12 and p[3] < 1e-12
