"""Source-only forests (log p(x)): the batched build against its per-input
twin, and a forest counted by hand."""

import hypothesis
from hypothesis import strategies as st
import numpy as np

from csl_jax.cky.grammar_arrays import encode_qcfg
from csl_jax.model import source_forests
from csl_jax.model import source_forests_reference
from csl_jax.qcfg.rules import Rule, parse_rules
from csl_jax.testing.strategies import SRC, expand, rules_strategy

LEXICAL = [Rule(("a",), ("A",)), Rule(("b",), ("B",)), Rule(("a",), ("B",))]
UNARY = Rule(("NT_1",), ("NT_1", "A"))
FIELDS = ("node_offsets", "edge_offsets", "nodes", "edge_rule",
          "edge_parent", "edge_children")


def _assert_same(rules, inputs, max_nts, max_unary):
  grammar = encode_qcfg(rules, max_nts)
  want = source_forests_reference.source_forest_batch(grammar, inputs,
                                                      max_unary)
  got = source_forests.source_forest_batch(grammar, inputs, max_unary)
  for name in FIELDS:
    a, b = getattr(want, name), getattr(got, name)
    assert a.dtype == b.dtype and a.shape == b.shape, name
    np.testing.assert_array_equal(a, b, err_msg=name)


@st.composite
def grammar_and_inputs(draw):
  rules = draw(st.lists(rules_strategy(), min_size=1, max_size=5))
  rules += draw(st.lists(st.sampled_from(LEXICAL), min_size=1, max_size=3))
  if draw(st.booleans()):
    rules.append(UNARY)
  rules = list(dict.fromkeys(rules))
  inputs = []
  for _ in range(draw(st.integers(0, 5))):
    if draw(st.integers(0, 3)) == 0:  # often not derivable
      x = draw(st.lists(st.sampled_from(SRC), min_size=1, max_size=4))
    else:
      x, _ = expand(draw, rules, draw(st.integers(0, 2)))
      hypothesis.assume(0 < len(x) <= 6)
    inputs.append(" ".join(x))
  return rules, inputs


@hypothesis.settings(max_examples=150, deadline=None)
@hypothesis.given(grammar_and_inputs(), st.integers(0, 3))
def test_batched_build_matches_the_per_input_twin(case, max_unary):
  rules, inputs = case
  _assert_same(rules, inputs, 2, max_unary)


def test_unrolled_unary_chain_counted_by_hand():
  # "a b" has spans (0,1), (1,2), (0,2); with the unary rule every span
  # gets 3 copies (max_unary 2): 9 nodes. Edges: per copy of (0,1) the
  # lexical rule, plus the unary rule in copies 1 and 2 (3 + 2); the same
  # for (1,2); per copy of (0,2) the binary rule (3) and the unary in 1, 2.
  rules = parse_rules("a ### A\nb ### B\nNT_1 NT_2 ### NT_1 NT_2\n"
                      "NT_1 ### NT_1 A\n")
  grammar = encode_qcfg(rules, 2)
  batch = source_forests.source_forest_batch(grammar, ["a b", "b b b a"],
                                             max_unary=2)
  forest = batch[0]
  assert forest.nodes.shape[0] == 9 and forest.edge_rule.shape[0] == 15
  # Root last: the top copy of (0, 2).
  assert tuple(forest.nodes[-1, :2]) == (0, 2)
  # The binary edges of the root span read the children's top copies.
  binary = forest.edge_rule == 2
  assert set(map(tuple, forest.edge_children[binary].tolist())) == {(2, 5)}
  # Unary edges read the copy below their own.
  unary = forest.edge_rule == 3
  np.testing.assert_array_equal(forest.edge_children[unary][:, 0],
                                forest.edge_parent[unary] - 1)
  _assert_same(rules, ["a b", "b b b a", "a", "c"], 2, 2)


def test_no_inputs_and_underivable_inputs_give_empty_forests():
  rules = parse_rules("a ### A\n")
  grammar = encode_qcfg(rules, 1)
  empty = source_forests.source_forest_batch(grammar, [])
  assert len(empty) == 0 and empty.edge_rule.shape == (0,)
  batch = source_forests.source_forest_batch(grammar, ["b", "a", "a a"])
  np.testing.assert_array_equal(batch.node_offsets, [0, 0, 1, 1])
  _assert_same(rules, ["b", "a", "a a"], 1, 2)
