"""`intersection._completion_mass` (Numba) against its pure-Python twin
(`intersection_reference.completion_mass`), by hand and on random options."""

import hypothesis
from hypothesis import strategies as st
import numpy as np
import pytest

from csl_jax.qcfg.output_cfg import parse_output_cfg
from csl_jax.sampling import intersection
from csl_jax.sampling import intersection_reference
from csl_jax.testing.models import TOY_OUTPUT_CFG, TOY_RULES


def _both(p, ctx_index, off, opt_rule, opt_child, max_depth, leaf_mass):
  got = intersection._completion_mass(
      np.asarray(p, np.float64), np.asarray(ctx_index, np.int32),
      np.asarray(off, np.int64), np.asarray(opt_rule, np.int32),
      np.asarray(opt_child, np.int32), max_depth,
      np.asarray(leaf_mass, np.float64))
  want = intersection_reference.completion_mass(
      p, ctx_index, off, opt_rule, opt_child, max_depth, leaf_mass)
  return got, np.array(want)


def test_by_hand_two_categories_and_a_two_child_rule():
  # Categories A (0), B (1). Rules: r0 leaf with output A, r1 leaf with
  # output B, r2 with two NTs whose output is A when its children are
  # (A, B), in contexts 1 and 2. max_depth 2.
  p = [[0.2, 0.3, 0.5],  # context 0 (root); leaf mass 0.5
       [0.5, 0.25, 0.25],  # context 1 = (r2, NT_1); leaf mass 0.75
       [0.1, 0.4, 0.5]]  # context 2 = (r2, NT_2); leaf mass 0.5
  leaf_mass = [0.5, 0.75, 0.5]
  ctx_index = [[-1, -1], [-1, -1], [1, 2]]
  off = [0, 2, 3]  # A: options 0, 1; B: option 2
  opt_rule = [0, 2, 1]
  opt_child = [[-1, -1], [0, 1], [-1, -1]]
  got, want = _both(p, ctx_index, off, opt_rule, opt_child, 2, leaf_mass)
  # Depth 2 (the limit): the leaf options renormalized by the leaf mass.
  a2 = [0.2 / 0.5, 0.5 / 0.75, 0.1 / 0.5]
  b2 = [0.3 / 0.5, 0.25 / 0.75, 0.4 / 0.5]
  # Depth 1: A = p(r0) + p(r2) * Z2(ctx 1, A) * Z2(ctx 2, B); B = p(r1).
  tail = (2 / 3) * 0.8  # = 8 / 15
  a1 = [0.2 + 0.5 * tail, 0.5 + 0.25 * tail, 0.1 + 0.5 * tail]
  assert a1 == pytest.approx([7 / 15, 19 / 30, 11 / 30])
  b1 = [0.3, 0.25, 0.4]
  hand = np.zeros((4, 3, 2))
  hand[1, :, 0], hand[1, :, 1] = a1, b1
  hand[2, :, 0], hand[2, :, 1] = a2, b2
  np.testing.assert_allclose(want, hand, rtol=1e-12, atol=1e-15)
  np.testing.assert_allclose(got, hand, rtol=1e-12, atol=1e-15)


def test_build_on_the_toy_model_matches_the_twin():
  # The arrays `build` makes from a real output CFG (unit productions,
  # repeated NTs, options of several categories), depths 1 to 4.
  cfg = parse_output_cfg(TOY_OUTPUT_CFG)
  rng = np.random.default_rng(0)
  num_ctx = 1 + sum(r.num_nts for r in TOY_RULES)
  p = rng.dirichlet(np.ones(len(TOY_RULES)), size=num_ctx)
  ctx_index = np.full((len(TOY_RULES), 2), -1, np.int32)
  k = 1
  for r, rule in enumerate(TOY_RULES):
    for i in range(rule.num_nts):
      ctx_index[r, i], k = k, k + 1
  leaf = [r.num_nts == 0 for r in TOY_RULES]
  leaf_mass = [sum(row[r] for r in range(len(row)) if leaf[r]) for row in p]
  for max_depth in range(1, 5):
    got = intersection.build(TOY_RULES, cfg, p, ctx_index, max_depth)
    want = intersection_reference.completion_mass(
        p.tolist(), ctx_index.tolist(), got.opt_off.tolist(),
        got.opt_rule.tolist(), got.opt_child.tolist(), max_depth, leaf_mass)
    np.testing.assert_allclose(got.z, np.array(want), rtol=1e-12)
    assert got.z[1, 0, got.start] > 0  # the root can complete


@st.composite
def _problems(draw):
  """Random options: rules of 0 to 2 NTs, each option some rule under some
  category with random child categories; p with zeros; leaf mass the
  NT-free rules' (whether or not they have an option)."""
  num_cat = draw(st.integers(1, 3))
  num_nts = draw(st.lists(st.integers(0, 2), min_size=1, max_size=5))
  num_nts[0] = 0  # one leaf rule at least
  num_ctx = 1 + sum(num_nts)
  ctx_index, k = [], 1
  for n in num_nts:
    ctx_index.append([k + i if i < n else -1 for i in range(2)])
    k += n
  # A context's row: zero or a weight per rule, leaf rule 0 never zero.
  weight = st.sampled_from([0.0, 0.1, 0.5, 1.0, 2.0])
  p = []
  for _ in range(num_ctx):
    row = [draw(weight) for _ in num_nts]
    row[0] = draw(st.sampled_from([0.1, 1.0, 3.0]))
    p.append([w / sum(row) for w in row])
  options = draw(st.lists(st.tuples(
      st.integers(0, num_cat - 1), st.integers(0, len(num_nts) - 1),
      st.lists(st.integers(0, num_cat - 1), min_size=2, max_size=2)),
                          max_size=8))
  options.sort(key=lambda o: o[0])  # grouped by parent category (CSR)
  off = [sum(1 for o in options if o[0] < a) for a in range(num_cat + 1)]
  opt_rule = [r for _, r, _ in options]
  opt_child = np.array([[kids[i] if i < num_nts[r] else -1
                         for i in range(2)] for _, r, kids in options],
                       np.int32).reshape(-1, 2)  # [O, 2], also for O = 0
  leaf_mass = [sum(w for w, n in zip(row, num_nts) if n == 0) for row in p]
  max_depth = draw(st.integers(1, 4))
  return p, ctx_index, off, opt_rule, opt_child, max_depth, leaf_mass


@hypothesis.settings(max_examples=150, deadline=None)
@hypothesis.given(_problems())
def test_random_options_match_the_twin(problem):
  got, want = _both(*problem)
  assert got.shape == want.shape
  np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
