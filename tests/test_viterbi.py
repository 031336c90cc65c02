"""CSL's Viterbi parser against hand-made cases and its brute-force twin."""

import math

import hypothesis
from hypothesis import strategies as st
import numpy as np
import pytest

from csl_jax.cky.grammar_arrays import encode_qcfg
from csl_jax.model import contexts
from csl_jax.model import viterbi
from csl_jax.model import viterbi_reference as ref
from csl_jax.qcfg.output_cfg import OutputCFG
from csl_jax.qcfg.rules import parse_rules

AND_TWICE = """\
NT_1 and NT_2 ### NT_1 NT_2
NT_1 twice ### NT_1 NT_1
walk ### W
run ### R
"""
# Contexts of AND_TWICE: 0 ROOT, 1 and@NT_1, 2 and@NT_2, 3 twice@NT_1.
AND, TWICE, WALK, RUN = range(4)
LOW = math.log(1e-4)


def model(text, log_p=None, fill=-1.0):
  """(rules, grammar, log_p, ctx_index); log_p defaults to `fill` anywhere
  (scores need not be normalized for the argmax)."""
  rules = parse_rules(text)
  grammar = encode_qcfg(rules)
  ctx = contexts.context_index(rules, grammar.max_nts)
  if log_p is None:
    log_p = np.full((contexts.num_contexts(rules), len(rules)), fill)
  return rules, grammar, log_p, ctx


def and_twice(penalize):
  """AND_TWICE with p(rule | context) tiny for each (context, rule) given."""
  m = model(AND_TWICE)
  for c, r in penalize:
    m[2][c, r] = LOW
  return m


def test_context_decides_the_bracketing():
  x = "walk and run twice"
  # "and" is unlikely under "twice": walk and (run twice).
  got = viterbi.parse(*and_twice([(3, AND)]), x)
  assert got.target == ("W", "R", "R")
  assert got.derivation == (AND, ((WALK, ()), (TWICE, ((RUN, ()),))))
  assert got.score == pytest.approx(-4.0)  # four rules, -1 each
  # "twice" is unlikely as the second conjunct: (walk and run) twice.
  got = viterbi.parse(*and_twice([(2, TWICE)]), x)
  assert got.target == ("W", "R", "W", "R")
  assert got.derivation == (TWICE, ((AND, ((WALK, ()), (RUN, ()))),))


def test_copies_repeat_the_child_output():
  got = viterbi.parse(*model(AND_TWICE), "walk twice twice and run")
  assert got.target == ("W", "W", "W", "W", "R")
  assert got.score == pytest.approx(-5.0)


@pytest.mark.parametrize("x", ["walk and", "jump", "twice walk", "", []])
def test_no_parse(x):
  got = viterbi.parse(*model(AND_TWICE), x)
  assert got == viterbi.NO_PARSE
  assert not got.parsed


def test_minus_infinity_forbids_a_rule():
  m = and_twice([])
  m[2][3, AND] = -np.inf
  m[2][2, TWICE] = -np.inf
  assert viterbi.parse(*m, "walk and run twice") == viterbi.NO_PARSE
  assert viterbi.parse(*m, "walk twice").target == ("W", "W")


UNARY = """\
NT_1 ### f ( NT_1 )
x ### X
NT_1 NT_2 ### NT_1 , NT_2
"""
# Contexts: 0 ROOT, 1 f@NT_1, 2 pair@NT_1, 3 pair@NT_2.


def unary_model():
  rules, grammar, _, ctx = model(UNARY)
  p = np.full((4, 3), 1 / 3)
  p[0] = [0.9, 0.1, 0.0]  # the root prefers f( ... )
  p[1] = [0.1, 0.9, 0.0]  # ... around an x
  with np.errstate(divide="ignore"):
    return rules, grammar, np.log(p), ctx


def test_unary_source_rules():
  m = unary_model()
  got = viterbi.parse(*m, "x")
  assert got.target == ("f", "(", "X", ")")
  assert got.derivation == (0, ((1, ()),))
  assert got.score == pytest.approx(math.log(0.81))
  # No unary rules allowed: the bare x.
  got = viterbi.parse(*m, "x", max_unary_chain=0)
  assert got.target == ("X",)
  assert got.score == pytest.approx(math.log(0.1))


def test_unary_chains_are_bounded():
  m = unary_model()
  kbest = viterbi.kbest_batch(*m, ["x"], k=10, max_unary_chain=2)[0]
  # f^t( X ) for t = 0, 1, 2 only: 0.1, 0.81, 0.081.
  assert [h.target.count("f") for h in kbest] == [1, 0, 2]
  assert [h.score for h in kbest] == pytest.approx(
      [math.log(p) for p in (0.81, 0.1, 0.081)])


def test_output_cfg_takes_the_best_accepted_output():
  m = and_twice([(3, AND)])  # best: W R R; second: W R W R
  cfg = OutputCFG.from_pairs([("S", "W R W R")])
  x = "walk and run twice"
  assert viterbi.parse(*m, x, k=1, output_cfg=cfg) == viterbi.NO_PARSE
  got = viterbi.parse(*m, x, k=2, output_cfg=cfg)
  assert got.target == ("W", "R", "W", "R")
  assert got.score == pytest.approx(-3.0 + LOW)
  assert viterbi.parse(*m, x, output_cfg=cfg).target == got.target
  never = OutputCFG.from_pairs([("S", "R")])
  assert viterbi.parse(*m, x, output_cfg=never) == viterbi.NO_PARSE


def test_batch_matches_one_at_a_time():
  m = and_twice([(3, AND)])
  inputs = ["walk", "walk and run twice", "run run", "run twice and walk"]
  assert viterbi.parse_batch(*m, inputs) == [viterbi.parse(*m, x)
                                             for x in inputs]


def test_overlong_outputs_are_dropped():
  m = model(AND_TWICE)
  x = "walk twice twice twice"
  assert len(viterbi.parse(*m, x).target) == 8
  assert viterbi.parse(*m, x, max_output_len=7) == viterbi.NO_PARSE


def test_bad_model_arrays():
  rules, grammar, log_p, ctx = model(AND_TWICE)
  with pytest.raises(ValueError, match="log_p"):
    viterbi.parse(rules, grammar, log_p[:, :3], ctx, "walk")
  bad = log_p.copy()
  bad[0, 0] = np.nan
  with pytest.raises(ValueError, match="NaN"):
    viterbi.parse(rules, grammar, bad, ctx, "walk")
  with pytest.raises(ValueError, match="ctx_index"):
    viterbi.parse(rules, grammar, log_p, ctx + 10, "walk")
  with pytest.raises(ValueError, match="rules"):
    viterbi.parse(rules[:2], grammar, log_p, ctx, "walk")


# Random grammars: a, b, one way to concatenate, and a subset of the rest.
BASE = ["a ### A", "b ### B"]
CONCAT = ["NT_1 NT_2 ### NT_1 NT_2", "NT_1 NT_2 ### NT_2 NT_1"]
POOL = [
    "a ### B", "a b ### A", "b ### ( B )", "NT_1 a ### NT_1 NT_1",
    "NT_1 b ### A NT_1", "a NT_1 ### NT_1 B NT_1",
    "NT_1 b NT_2 ### NT_2 NT_1 NT_2", "NT_1 NT_2 NT_3 ### NT_3 NT_1 NT_2",
]
UNARY_POOL = ["NT_1 ### f ( NT_1 )", "NT_1 ### NT_1 A"]
ACCEPTS_A = OutputCFG.from_pairs([
    ("S", "A"), ("S", "B S"), ("S", "S S"), ("S", "f ( S )"),
    ("S", "( S )")])


@st.composite
def cases(draw):
  picked = BASE + draw(st.lists(st.sampled_from(CONCAT), min_size=1,
                                unique=True))
  picked += draw(st.lists(st.sampled_from(POOL), max_size=4, unique=True))
  unary = draw(st.lists(st.sampled_from(UNARY_POOL), max_size=2,
                        unique=True))
  chain = draw(st.integers(0, 2 if len(unary) < 2 else 1))
  x = draw(st.lists(st.sampled_from("ab"), min_size=1,
                    max_size=4 if not unary else 3))
  rules, grammar, _, ctx = model("\n".join(picked + unary))
  rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
  logits = rng.normal(size=(contexts.num_contexts(rules), len(rules))) * 2
  logits[rng.random(logits.shape) < 0.1] = -np.inf
  log_p = logits - np.logaddexp.reduce(
      np.where(np.isfinite(logits), logits, -1e9), axis=1, keepdims=True)
  k = draw(st.sampled_from([1, 2, 3, 5]))
  return (rules, grammar, log_p, ctx), x, chain, k


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(cases())
def test_matches_brute_force(case):
  m, x, chain, k = case
  rules, _, log_p, ctx = m
  everything = ref.all_derivations(rules, log_p, ctx, x, chain)
  got = viterbi.kbest_batch(*m, [x], k=k, max_unary_chain=chain)[0]
  want = [d[0] for d in everything[:k]]
  assert [h.score for h in got] == pytest.approx(want, abs=1e-9)
  valid = {d[2] for d in everything}
  for h in got:
    assert h.derivation in valid
    assert ref.score(rules, log_p, ctx, h.derivation) == pytest.approx(
        h.score, abs=1e-9)
    assert ref.output(rules, h.derivation) == h.target
  best = viterbi.parse(*m, x, max_unary_chain=chain)
  assert best.score == pytest.approx(everything[0][0] if everything
                                     else -np.inf, abs=1e-9)
  with_cfg = viterbi.parse(*m, x, k=k, output_cfg=ACCEPTS_A,
                           max_unary_chain=chain)
  expected = ref.parse(rules, log_p, ctx, x, chain, k, ACCEPTS_A)
  if len(everything) > k and everything[k - 1][0] - everything[k][0] < 1e-9:
    return  # a tie at the k-th place: either side may keep either one
  assert with_cfg.parsed == (expected is not None)
  if expected is not None:
    assert with_cfg.score == pytest.approx(expected[0], abs=1e-9)
    assert ACCEPTS_A.recognizes(with_cfg.target)
