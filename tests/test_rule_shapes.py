"""Tying p(r | s) across rules of one shape (model/rule_shapes.py)."""

import hypothesis
from hypothesis import strategies as st
import jax.numpy as jnp
import numpy as np

from csl_jax.model import contexts, rule_shapes, rule_shapes_reference, train
from csl_jax.model.csl_model import rule_log_probs
from csl_jax.qcfg.rules import parse_rules

GRAMMAR = parse_rules("""\
NT_1 twice ### NT_1 NT_1
NT_1 left ### L NT_1
NT_1 right ### R NT_1
walk ### W
run ### U
jump ### J
turn left ### L
""")


def test_shapes_by_hand():
  assert [rule_shapes.shape(r) for r in GRAMMAR] == [
      "NT_1 t ### NT_1 NT_1", "NT_1 t ### T NT_1", "NT_1 t ### T NT_1",
      "t ### T", "t ### T", "t ### T", "t t ### T"]
  classes, shapes = rule_shapes.shape_classes(GRAMMAR)
  assert classes.tolist() == [0, 1, 1, 2, 2, 2, 3]
  assert len(shapes) == 4


@hypothesis.settings(max_examples=20, deadline=None)
@hypothesis.given(st.integers(1, 3), st.integers(0, 10**6))
def test_tied_logits_match_twin_and_normalize(num_states, seed):
  rng = np.random.default_rng(seed)
  classes, shapes = rule_shapes.shape_classes(GRAMMAR)
  shape_logits = rng.normal(size=(num_states, len(shapes)))
  lexical = rng.normal(size=len(GRAMMAR)) * 3
  got = np.asarray(rule_shapes.tied_rule_logits(
      jnp.asarray(shape_logits), jnp.asarray(lexical), jnp.asarray(classes)))
  want = rule_shapes_reference.tied_rule_logits(shape_logits, lexical,
                                                 classes)
  np.testing.assert_allclose(got, want, atol=1e-5)
  np.testing.assert_allclose(np.exp(got).sum(axis=1), 1.0, atol=1e-5)


def _p_jump_under_twice(tie: bool, tmp_path=None):
  # `jump` occurs only alone; `walk` and `run` also under `twice`.
  data = ["walk\tW", "run\tU", "walk twice\tW W", "run twice\tU U"]
  data += ["jump\tJ"] * 4
  pairs = [(x.split(), y.split()) for x, y in
           (line.split("\t") for line in data)]
  config = train.FitConfig(num_states=2, learning_rate=0.1, num_steps=400,
                           patience=1000, tie_rule_shapes=tie,
                           num_restarts=2, restart_steps=20)
  grammar = GRAMMAR[:1] + GRAMMAR[3:6]
  ckpt = str(tmp_path / "ckpt.msgpack") if tmp_path else None
  params, _, _ = train.fit(grammar, pairs, config, 2, ckpt)
  log_p = rule_log_probs(np.asarray(params["rule"]),
                         np.asarray(params["context"]))
  twice_ctx = contexts.context_index(grammar, 2)[0, 0]
  return float(np.exp(log_p[twice_ctx, 3])), params, (grammar, pairs, config)


def test_tying_lets_a_word_seen_alone_recombine(tmp_path):
  untied, _, _ = _p_jump_under_twice(False)
  tied, params, (grammar, pairs, config) = _p_jump_under_twice(True, tmp_path)
  # Untied, maximum likelihood keeps `jump` out of `twice`. Tied, the words
  # share one choice: jump is 4 of the 8 word uses, so p = 1/2.
  assert untied < 0.02
  assert abs(tied - 0.5) < 0.05
  # Resuming the finished tied run restores the same parameters.
  again, history, _ = train.fit(grammar, pairs, config, 2,
                                str(tmp_path / "ckpt.msgpack"))
  assert len(history) == 400
  np.testing.assert_allclose(again["rule"], params["rule"], atol=1e-6)
