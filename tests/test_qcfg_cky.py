"""The Numba QCFG CKY kernels against hand counts and their Python twin."""

import math

import hypothesis
from hypothesis import strategies as st
import numpy as np
import pytest

from csl_jax.cky import forest
from csl_jax.cky import qcfg_reference as ref
from csl_jax.cky.grammar_arrays import encode_qcfg
from csl_jax.errors import InputError
from csl_jax.qcfg.rules import Rule, parse_rules
from csl_jax.testing import strategies
from csl_jax.testing.strategies import expand


def grammar(text):
  rules = parse_rules(text)
  return rules, encode_qcfg(rules)


def count(g, x, y):
  return forest.build_forest(g, x.split(), y.split()).count_derivations()


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_binary_bracketings_are_catalan(n):
  rules, g = grammar("NT_1 NT_2 ### NT_1 NT_2\na ### A\n")
  x, y = " ".join(["a"] * n), " ".join(["A"] * n)
  catalan = math.comb(2 * (n - 1), n - 1) // n
  assert count(g, x, y) == catalan
  assert ref.count_derivations(rules, x.split(), y.split()) == catalan


def test_inverting_rule_counts():
  # Each bracketing of n leaves under NT_1 NT_2 -> NT_2 NT_1 reverses the
  # whole string, so the reversed string has Catalan(n-1) derivations and
  # any other permutation none.
  _, g = grammar("NT_1 NT_2 ### NT_2 NT_1\na ### A\nb ### B\nc ### C\n")
  assert count(g, "a b c", "C B A") == 2
  assert count(g, "a b c", "A B C") == 0
  assert count(g, "a b", "B A") == 1


def test_repeated_target_nts():
  text = ("NT_1 twice ### NT_1 NT_1\nNT_1 and NT_2 ### NT_1 NT_2\n"
          "jump ### J\nwalk ### W\n")
  _, g = grammar(text)
  assert count(g, "jump twice", "J J") == 1
  assert count(g, "jump twice", "J") == 0
  assert count(g, "jump twice and walk twice", "J J W W") == 1
  # (jump and walk) twice only; the copies must be equal strings.
  assert count(g, "jump and walk twice", "J W J W") == 1
  assert count(g, "jump and walk twice", "J W W") == 1
  assert count(g, "jump and walk twice", "J J W") == 0


def test_unary_source_rules_wrap_the_target():
  _, g = grammar("NT_1 ### f ( NT_1 )\nx ### X\nNT_1 NT_2 ### NT_1 , NT_2\n")
  assert count(g, "x", "X") == 1
  assert count(g, "x", "f ( f ( X ) )") == 1
  assert count(g, "x", "f ( X") == 0
  # Chains of 3 and 4 unary steps: the closure runs to its fixpoint, not
  # a fixed number of passes (one pass found chains of 2 only).
  for depth in (3, 4):
    target = "f ( " * depth + "X" + " )" * depth
    assert count(g, "x", target) == 1, depth
    assert list(forest.derivable(g, [("x", target)])) == [True], depth
  assert count(g, "x x", "f ( f ( f ( X ) ) , X )") == 1
  # f wraps either the pair or one of its halves.
  assert count(g, "x x", "f ( X , X )") == 1
  assert count(g, "x x", "f ( X ) , X") == 1
  assert count(g, "x x", "f ( f ( X ) , f ( X ) )") == 1


def test_four_nonterminals_and_terminals_on_both_sides():
  _, g = grammar("give NT_1 NT_2 to NT_3 NT_4 ### NT_4 ( NT_3 , NT_1 NT_2 )\n"
                 "a ### A\nb ### B\nc ### C\nd ### D\n")
  assert count(g, "give a b to c d", "D ( C , A B )") == 1
  assert count(g, "give a b to c d", "D ( C , B A )") == 0


def test_max_nts_is_enforced():
  rules = parse_rules("NT_1 NT_2 NT_3 ### NT_3 NT_2 NT_1\n")
  encode_qcfg(rules, max_nts=3)
  with pytest.raises(InputError, match="more than max_nts=2"):
    encode_qcfg(rules, max_nts=2)


def test_unknown_tokens_are_not_derivable():
  _, g = grammar("a ### A\n")
  assert list(forest.derivable(g, [("a", "A"), ("b", "A"), ("a", "B")])) == [
      True, False, False]


def test_length_bounds_error_or_skip():
  _, g = grammar("a ### A\nNT_1 NT_2 ### NT_1 NT_2\n")
  pairs = [("a a", "A A"), ("a a a a", "A A A A"), ("a", "A")]
  with pytest.raises(InputError, match=r"train.tsv:2: input has 4 tokens"):
    forest.derivable(g, pairs, max_source_len=3, source="train.tsv")
  out = forest.derivable(g, pairs, max_source_len=3, skip_too_long=True)
  assert list(out) == [True, False, True]
  batch, result = forest.build_forests(g, pairs, max_target_len=3,
                                       skip_too_long=True)
  assert result.kept == [0, 2] and result.num_skipped == 1
  assert len(batch) == 2 and batch[1].count_derivations() == 1


def test_forest_layout_is_bottom_up_with_root_last():
  _, g = grammar("NT_1 NT_2 ### NT_1 NT_2\na ### A\n")
  f = forest.build_forest(g, "a a a".split(), "A A A".split())
  assert tuple(f.nodes[f.root]) == (0, 3, 0, 3)
  for p, cs in zip(f.edge_parent, f.edge_children):
    assert all(c < p for c in cs if c >= 0)
  assert list(f.edge_parent) == sorted(f.edge_parent)


def test_source_chart_of_scan_like_grammar():
  rules, g = grammar("NT_1 twice ### NT_1 NT_1\nNT_1 and NT_2 ### NT_1 NT_2\n"
                     "jump ### J\nwalk ### W\nNT_1 ### f ( NT_1 )\n")
  sf = forest.parse_source(g, "jump and walk twice")
  assert sf.parses
  edges = set(sf.hyperedges())
  assert edges == ref.source_edges(rules, "jump and walk twice".split())
  assert (0, (0, 4), ((0, 3),)) in edges  # (jump and walk) twice
  assert (1, (0, 4), ((0, 1), (2, 4))) in edges  # jump and (walk twice)
  assert (4, (0, 4), ((0, 4),)) in edges  # the unary self-loop
  assert not forest.parse_source(g, "twice jump").parses


# --- property tests against the pure-Python twin ---------------------------

SRC_VOCAB = ["a", "b"]
TGT_VOCAB = ["A", "B"]


@st.composite
def rules_strategy(draw):
  num_nts = draw(strategies.integers(0, 3))
  src = draw(strategies.token_lists(tuple(SRC_VOCAB)))
  positions = sorted(draw(st.lists(strategies.integers(0, len(src)),
                                   min_size=num_nts, max_size=num_nts)))
  source = list(src)
  for k, p in reversed(list(enumerate(positions))):
    source.insert(p, f"NT_{k + 1}")
  source = [s for s in source]
  # Renumber NTs in order of appearance.
  seen = [s for s in source if s.startswith("NT_")]
  order = {old: f"NT_{i + 1}" for i, old in enumerate(seen)}
  source = [order.get(s, s) for s in source]
  target = [f"NT_{k + 1}" for k in range(num_nts)]
  target += draw(strategies.token_lists(tuple(
      TGT_VOCAB + [f"NT_{k + 1}" for k in range(num_nts)])))
  target = strategies.permutation(draw, target)
  if not source or not target:
    hypothesis.assume(False)
  if source == target == ["NT_1"]:
    hypothesis.assume(False)
  return Rule(tuple(source), tuple(target))


LEXICAL = [Rule(("a",), ("A",)), Rule(("b",), ("B",)), Rule(("a",), ("B",))]


@st.composite
def grammars(draw):
  rules = draw(st.lists(rules_strategy(), min_size=1, max_size=5,
                        unique=True))
  rules += draw(st.lists(st.sampled_from(LEXICAL), min_size=1, max_size=3,
                         unique=True))
  return list(dict.fromkeys(rules))


@st.composite
def grammar_and_pair(draw):
  """A grammar and a pair that is usually derivable from it (sampled from
  it), sometimes an arbitrary one."""
  rules = draw(grammars())
  if draw(st.booleans()) and draw(st.booleans()):
    x = draw(st.lists(st.sampled_from(SRC_VOCAB), min_size=1, max_size=4))
    y = draw(st.lists(st.sampled_from(TGT_VOCAB), min_size=1, max_size=5))
  else:
    x, y = expand(draw, rules, draw(st.integers(0, 3)))
    hypothesis.assume(len(x) <= 7 and len(y) <= 9)
  return rules, x, y


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(grammar_and_pair())
def test_pair_forest_matches_reference(case):
  rules, x, y = case
  g = encode_qcfg(rules)
  f = forest.build_forest(g, x, y)
  expected = ref.pair_edges(rules, x, y)
  assert set(f.hyperedges()) == expected
  assert len(f.hyperedges()) == len(expected)  # no duplicate hyperedges
  assert f.count_derivations() == ref.count_derivations(rules, x, y)
  assert bool(forest.derivable(g, [(x, y)])[0]) == bool(expected)


@hypothesis.settings(max_examples=200, deadline=None)
@hypothesis.given(grammar_and_pair())
def test_source_chart_matches_reference(case):
  rules, x, _ = case
  g = encode_qcfg(rules)
  sf = forest.parse_source(g, x)
  expected = ref.source_edges(rules, x)
  assert set(sf.hyperedges()) == expected
  assert len(sf.hyperedges()) == len(expected)
  assert sf.parses == bool(expected)


@hypothesis.settings(max_examples=200, deadline=None)
@hypothesis.given(grammar_and_pair(), st.integers(-2, 1))
def test_source_chart_edge_bound_matches_reference(case, delta):
  """The kernel's whole chart (before pruning) is the twin's, and its
  `max_edges` bound refuses exactly the charts the twin has more edges in
  than the bound: the edges the bound counts are the chart's."""
  rules, x, _ = case
  g = encode_qcfg(rules)
  scratch = forest.source_chart_scratch(g)
  expected = ref.source_chart(rules, x)
  whole = forest.source_chart(g, x, scratch)
  n1 = len(x) + 1
  span = lambda f: divmod(int(f), n1)
  got = [(int(r), span(p), tuple(span(c) for c in cs if c >= 0))
         for r, p, cs in zip(*whole[1:])]
  assert sorted(got) == sorted(expected)
  bound = max(len(expected) + delta, 0)
  bounded = forest.source_chart(g, x, scratch, bound)
  twin = ref.source_chart(rules, x, bound)
  assert (bounded is None) == (twin is None) == (len(expected) > bound)
  if bounded is not None:
    assert all(np.array_equal(a, b) for a, b in zip(bounded, whole))
