"""Terminal-set subset queries: the kernel against its twin, and the index
against the definition on rules."""

import hypothesis
from hypothesis import strategies as st
import numpy as np

from csl_jax.induction import terminal_index_kernel as kernel
from csl_jax.induction import terminal_index_reference as reference
from csl_jax.induction.terminal_index import TerminalIndex, TermIds
from csl_jax.qcfg.rules import Rule

NUM_TERMS = 6
term_sets = st.lists(st.sets(st.integers(0, NUM_TERMS - 1), max_size=4),
                     min_size=1, max_size=12)


def _csr(sets):
  off = np.zeros(len(sets) + 1, np.int64)
  off[1:] = np.cumsum([len(s) for s in sets])
  return np.array([t for s in sets for t in sorted(s)], np.int64), off


def _same(a, b):
  return a[0].tolist() == b[0].tolist() and a[1].tolist() == b[1].tolist()


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(term_sets, term_sets)
def test_kernels_match_twin(rules, queries):
  flat, off = _csr(rules)
  # keyed: each rule under its smallest term (the kernel allows any).
  keyed = [min(s) for s in rules if s]
  has = np.array([r for r, s in enumerate(rules) if s], np.int64)
  korder = np.argsort(np.array(keyed, np.int64), kind="stable")
  keyed_flat = has[korder] if len(has) else has
  keyed_off = np.zeros(NUM_TERMS + 1, np.int64)
  keyed_off[1:] = np.cumsum(np.bincount(np.array(keyed, np.int64),
                                        minlength=NUM_TERMS))
  q_flat, q_off = _csr(queries)
  args = (flat, off, keyed_flat, keyed_off, q_flat, q_off, NUM_TERMS)
  assert _same(kernel.subsets(*args), reference.subsets(*args))


tokens = st.sampled_from(["a", "b", "c", "NT_1"])
rules = st.builds(lambda s, t: Rule(tuple(s), tuple(t)),
                  st.lists(tokens, min_size=1, max_size=4),
                  st.lists(tokens, min_size=1, max_size=4))


def _terms(rule):
  return ({("s", t) for t in rule.source if t != "NT_1"} |
          {("t", t) for t in rule.target if t != "NT_1"})


@hypothesis.settings(max_examples=200, deadline=None)
@hypothesis.given(st.lists(rules, min_size=1, max_size=10),
                  st.lists(rules, min_size=1, max_size=4))
def test_index_matches_definition(grammar, queries):
  term_ids = TermIds()
  term_ids.of(Rule(("z",), ("z",)))  # an id no grammar rule has
  index = TerminalIndex(grammar, term_ids)
  subs = index.subsets(range(len(grammar)))
  for i, rule in enumerate(grammar):
    assert sorted(subs[i]) == [j for j, r in enumerate(grammar)
                               if _terms(r) <= _terms(rule)]
  # Any rule as a query (the additions' index, asked by the grammar's).
  for rule, found in zip(queries, index.within(queries)):
    assert found == [j for j, r in enumerate(grammar)
                     if _terms(r) <= _terms(rule)]
  assert index.within([Rule(("z",), ("z",))]) == [
      [j for j, r in enumerate(grammar) if not _terms(r)]]
