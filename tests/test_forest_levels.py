"""`forest_arrays._levels` (Numba) against its pure-Python twin
(`forest_arrays_reference.levels`), by hand and on random forests."""

import hypothesis
from hypothesis import strategies as st
import numpy as np

from csl_jax.cky import forest as forest_lib
from csl_jax.cky.grammar_arrays import encode_qcfg
from csl_jax.model import forest_arrays
from csl_jax.model import forest_arrays_reference
from csl_jax.qcfg.rules import parse_rules


def _both(num_nodes, edge_parent, edge_children, width=2):
  got = forest_arrays._levels(
      num_nodes, np.asarray(edge_parent, np.int32),
      np.asarray(edge_children, np.int32).reshape(len(edge_parent), width))
  want = forest_arrays_reference.levels(num_nodes, edge_parent,
                                        edge_children)
  return got.tolist(), want


def test_by_hand():
  # Node 0 is a middle node (a child of 3), node 4 has a leaf edge and one
  # with a child, node 2 has no edge; -1 pads. Edges children-first,
  # grouped by parent:
  #   e0: 1 leaf   e1: 4 leaf   e2: 4 <- (1)   e3: 0 <- (4)
  #   e4: 3 <- (1, 0)   e5: 3 <- (4)   e6: 5 <- (1, 3)
  edge_parent = [1, 4, 4, 0, 3, 3, 5]
  edge_children = [[-1, -1], [-1, -1], [1, -1], [4, -1], [1, 0], [4, -1],
                   [1, 3]]
  got, want = _both(6, edge_parent, edge_children)
  # 1: leaf; 4: 1 + level(1); 0: 1 + level(4); 2: no edge;
  # 3: 1 + max(level(1), level(0), level(4)); 5: 1 + max(level(1), level(3)).
  assert want == [2, 0, 0, 3, 1, 4]
  assert got == want


def test_a_real_batch_by_hand():
  # "walk twice" (W W): walk -> W is a leaf node (0), the root is the twice
  # rule over it (1). Two forests concatenated as `Layout` does: the second
  # one's nodes after the first's.
  rules = parse_rules("NT_1 twice ### NT_1 NT_1\nwalk ### W\n")
  batch, _ = forest_lib.build_forests(encode_qcfg(rules, 1), [
      ("walk twice", "W W"), ("walk", "W")])
  layout = forest_arrays.Layout(batch, [0, 1], np.zeros((2, 1), np.int32))
  got, want = _both(layout.num_nodes, layout.edge_parent.tolist(),
                    layout.edge_children.tolist(), width=1)
  assert want == [0, 1, 0]
  assert got == want


@st.composite
def _forests(draw):
  """A random packed forest: nodes in a random topological order, each
  node's edges together, a node's edges after every edge of its children
  (as the CKY core writes them); node ids shuffled."""
  n = draw(st.integers(1, 12))
  width = draw(st.integers(1, 3))
  ids = draw(st.permutations(range(n)))
  edge_parent, edge_children = [], []
  for rank in range(n):  # children: nodes of lower rank
    for _ in range(draw(st.integers(0, 3))):
      kids = [ids[k] for k in draw(st.lists(
          st.integers(0, rank - 1), max_size=width))] if rank else []
      edge_parent.append(ids[rank])
      edge_children.append(kids + [-1] * (width - len(kids)))
  return n, edge_parent, edge_children, width


@hypothesis.settings(max_examples=200, deadline=None)
@hypothesis.given(_forests())
def test_random_forests_match_the_twin(forest):
  got, want = _both(*forest)
  assert got == want
