"""Pruning rules that no example needs, on parse forests."""

import hypothesis
from hypothesis import strategies as st
import numpy as np

from csl_jax.cky import forest as forest_lib
from csl_jax.cky import qcfg_reference as ref
from csl_jax.cky.grammar_arrays import encode_qcfg
from csl_jax.induction import prune_reference
from csl_jax.induction.prune import prune, prune_and_cover, roots_alive
from csl_jax.qcfg.rules import Rule, parse_rule
from csl_jax.testing.strategies import SRC, TGT, expand, rules_strategy

# --- random grammars and sampled examples ------------------------------------

LEXICAL = [Rule(("a",), ("A",)), Rule(("b",), ("B",)), Rule(("a",), ("B",)),
           Rule(("b",), ("A",))]


@st.composite
def grammars(draw):
  rules = draw(st.lists(rules_strategy(), min_size=1, max_size=5))
  rules += draw(st.lists(st.sampled_from(LEXICAL), min_size=1, max_size=4))
  return list(dict.fromkeys(rules))


@st.composite
def grammar_and_pairs(draw):
  """A grammar and a few pairs, mostly sampled from it."""
  rules = draw(grammars())
  pairs = []
  for _ in range(draw(st.integers(1, 4))):
    if draw(st.integers(0, 4)) == 0:
      x = draw(st.lists(st.sampled_from(SRC), min_size=1, max_size=3))
      y = draw(st.lists(st.sampled_from(TGT), min_size=1, max_size=4))
    else:
      x, y = expand(draw, rules, draw(st.integers(0, 2)))
      hypothesis.assume(len(x) <= 6 and len(y) <= 7)
    pairs.append((x, y))
  return rules, pairs


def _forests(rules, pairs):
  batch, _ = forest_lib.build_forests(encode_qcfg(rules), pairs)
  return batch


def _alive(batch, dead, examples=None):
  if examples is None:
    examples = np.arange(len(batch), dtype=np.int64)
  return roots_alive(batch.node_offsets, batch.edge_offsets,
                     batch.edge_rule, batch.edge_parent,
                     batch.edge_children, np.asarray(examples, np.int64),
                     np.asarray(dead, np.bool_))


# --- roots_alive against its twin and against re-parsing ---------------------


@hypothesis.settings(max_examples=200, deadline=None)
@hypothesis.given(grammar_and_pairs(), st.data())
def test_roots_alive_matches_reference(case, data):
  rules, pairs = case
  batch = _forests(rules, pairs)
  dead = np.array(data.draw(st.lists(st.booleans(), min_size=len(rules),
                                     max_size=len(rules))), np.bool_)
  got = _alive(batch, dead).tolist()
  forests = [batch[b] for b in range(len(batch))]
  assert got == prune_reference.roots_alive(forests, dead)
  # Same as parsing with the live rules only.
  live = [r for r, d in zip(rules, dead) if not d]
  assert got == [ref.derivable(live, x, y) for x, y in pairs]
  # A subset of examples, in any order.
  order = data.draw(st.permutations(range(len(pairs))))
  assert _alive(batch, dead, order).tolist() == [got[b] for b in order]


def test_roots_alive_hand_made():
  rules = [parse_rule(t) for t in [
      "a ### A", "b ### B", "NT_1 NT_2 ### NT_1 NT_2", "a b ### A B"]]
  batch = _forests(rules, [("a b".split(), "A B".split()),
                           ("b a".split(), "A B".split())])
  none = np.zeros(4, np.bool_)
  assert _alive(batch, none).tolist() == [True, False]
  assert _alive(batch, [False, False, False, True]).tolist() == [True, False]
  assert _alive(batch, [False, False, True, False]).tolist() == [True, False]
  assert _alive(batch, [False, False, True, True]).tolist() == [False, False]
  assert _alive(batch, [True, False, False, False]).tolist() == [True, False]
  assert _alive(batch, [True, False, False, True]).tolist() == [False, False]


# --- prune -------------------------------------------------------------------

RULES = [parse_rule(t) for t in [
    "a ### A",
    "b ### B",
    "NT_1 NT_2 ### NT_1 NT_2",
    "a b ### A B",
    "NT_1 b ### NT_1 B",
]]
PAIRS = [("a b".split(), "A B".split())]


def _cost(table):
  return lambda rule: table[str(rule)]


def _derives_all(rules, pairs):
  return all(ref.derivable(rules, x, y) for x, y in pairs)


def test_prune_drops_most_costly_redundant_rules():
  # NT_1 NT_2 ### NT_1 NT_2 is not derivable from the other rules, but the
  # example does not need it.
  costs = {"NT_1 NT_2 ### NT_1 NT_2": 10.0, "NT_1 b ### NT_1 B": 8.0,
           "a b ### A B": 6.0, "a ### A": 1.0, "b ### B": 1.0}
  out = prune(RULES, PAIRS, max_nts=2, cost=_cost(costs))
  assert out == [parse_rule("a b ### A B")]
  assert _derives_all(out, PAIRS)


def test_prune_other_cost_order():
  costs = {"a b ### A B": 10.0, "NT_1 NT_2 ### NT_1 NT_2": 8.0,
           "NT_1 b ### NT_1 B": 6.0, "a ### A": 1.0, "b ### B": 2.0}
  out = prune(RULES, PAIRS, max_nts=2, cost=_cost(costs))
  assert out == [parse_rule("a ### A"), parse_rule("NT_1 b ### NT_1 B")]
  assert _derives_all(out, PAIRS)


def test_prune_ties_break_by_rule_text():
  # Equal costs: rules go in text order, NT_1 NT_2 ..., NT_1 b ..., a ...,
  # a b ... (kept: nothing else is left), b ....
  out = prune(RULES, PAIRS, max_nts=2, cost=lambda rule: 1.0)
  assert out == [parse_rule("a b ### A B")]


def test_prune_never_removes_keep_rules():
  costs = {"NT_1 NT_2 ### NT_1 NT_2": 10.0, "NT_1 b ### NT_1 B": 8.0,
           "a b ### A B": 6.0, "a ### A": 1.0, "b ### B": 1.0}
  keep = [parse_rule("NT_1 NT_2 ### NT_1 NT_2")]
  out = prune(RULES, PAIRS, max_nts=2, cost=_cost(costs), keep=keep)
  assert out == [parse_rule("a ### A"), parse_rule("b ### B"),
                 parse_rule("NT_1 NT_2 ### NT_1 NT_2")]
  assert _derives_all(out, PAIRS)
  # Keeping every rule keeps the grammar as it is.
  assert prune(RULES, PAIRS, max_nts=2, cost=_cost(costs),
               keep=RULES) == RULES


def test_prune_drops_unused_rules_and_keeps_needed_ones():
  rules = RULES + [parse_rule("c ### C"), parse_rule("NT_1 c ### C NT_1")]
  pairs = PAIRS + [("a a".split(), "A A".split())]
  costs = {str(r): 1.0 for r in rules}
  costs["a b ### A B"] = 5.0
  out = prune(rules, pairs, max_nts=2, cost=_cost(costs))
  # a a needs NT_1 NT_2 and a; then a b ### A B and NT_1 b are redundant.
  assert out == [parse_rule("a ### A"), parse_rule("b ### B"),
                 parse_rule("NT_1 NT_2 ### NT_1 NT_2")]
  assert _derives_all(out, pairs)


@hypothesis.settings(max_examples=100, deadline=None)
@hypothesis.given(grammar_and_pairs(), st.data())
def test_prune_properties(case, data):
  rules, pairs = case
  costs = data.draw(st.lists(st.integers(0, 3), min_size=len(rules),
                             max_size=len(rules)))
  cost_of = dict(zip(rules, costs))
  keep = data.draw(st.lists(st.sampled_from(rules), max_size=2, unique=True))
  out = prune(rules, pairs, max_nts=2, cost=cost_of.__getitem__, keep=keep)
  # An order-preserving subset that keeps `keep`.
  assert out == [r for r in rules if r in set(out)]
  assert set(keep) <= set(out)
  # Every example derivable before is still derivable.
  for x, y in pairs:
    if ref.derivable(rules, x, y):
      assert ref.derivable(out, x, y)
  # Locally minimal: each remaining rule outside `keep` is needed by some
  # example.
  for r in out:
    if r not in keep:
      rest = [s for s in out if s != r]
      assert not all(ref.derivable(rest, x, y) for x, y in pairs
                     if ref.derivable(rules, x, y)), r


def test_coverage_read_off_the_pruned_forests():
  """`prune_and_cover`: the pruned rules derive exactly the pairs a fresh
  parse with them derives (one pair here derivable by nothing)."""
  pairs = PAIRS + [(("b", "b"), ("B", "B")), (("nothing",), ("NOTHING",))]
  costs = {str(q): 1.0 for q in RULES}
  kept, derived = prune_and_cover(RULES, pairs, max_nts=2,
                                  cost=_cost(costs))
  assert len(kept) < len(RULES)
  fresh = forest_lib.derivable(encode_qcfg(kept, 2), pairs)
  assert derived.tolist() == fresh.tolist() == [True, True, False]
