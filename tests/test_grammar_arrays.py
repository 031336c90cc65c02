"""encode_qcfg (numpy, from per-rule symbols) against its plain-loop twin."""

import dataclasses

import hypothesis
from hypothesis import strategies as st
import numpy as np
import pytest

from csl_jax.cky import grammar_arrays, grammar_arrays_reference
from csl_jax.errors import InputError
from csl_jax.qcfg.rules import Rule

tokens = st.sampled_from(["a", "b", "c", "d", "NT_1", "NT_2", "NT_3"])
rules = st.builds(lambda s, t: Rule(tuple(s), tuple(t)),
                  st.lists(tokens, max_size=5), st.lists(tokens, max_size=6))


def _same(a, b):
  for field in dataclasses.fields(a):
    x, y = getattr(a, field.name), getattr(b, field.name)
    if isinstance(x, np.ndarray):
      assert x.dtype == y.dtype and x.shape == y.shape, field.name
      assert (x == y).all(), field.name
    else:
      assert x == y, field.name


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(st.lists(rules, max_size=12), st.lists(rules, max_size=6),
                  st.booleans())
def test_encode_qcfg_matches_twin(first, second, cached):
  # Two grammars sharing a vocabulary, as the induction's checkers do.
  vocab, ref_vocab = ({}, {}), ({}, {})
  cache = {}

  def symbols(rule):
    if rule not in cache:
      cache[rule] = grammar_arrays.rule_symbols(rule, vocab)
    return cache[rule]

  for grammar in (first, second + first):
    got = grammar_arrays.encode_qcfg(grammar, max_nts=5, vocab=vocab,
                                     symbols=symbols if cached else None)
    want = grammar_arrays_reference.encode_qcfg(grammar, max_nts=5,
                                                vocab=ref_vocab)
    _same(got, want)
  _same(grammar_arrays.encode_qcfg(first, max_nts=5),
        grammar_arrays_reference.encode_qcfg(first, max_nts=5))


def test_too_many_nts_names_the_first_rule():
  grammar = [Rule(("a",), ("A",)), Rule(("NT_1", "NT_2"), ("NT_2", "NT_1"))]
  with pytest.raises(InputError, match="rule 2 .* 2 NTs"):
    grammar_arrays.encode_qcfg(grammar, max_nts=1)
