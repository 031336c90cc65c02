"""Y&K Table 5's coverage figures (csl_jax/data/overlap.py), by hand."""

import pytest

from csl_jax.data import overlap


def test_bigrams_have_sentence_boundaries():
  assert overlap.bigrams(["a b"]) == {("<s>", "a"), ("a", "b"), ("b", "</s>")}


def test_table5_by_hand():
  train = ["a b", "a b", "c"]
  test = ["a b", "b c", "a b"]
  got = overlap.table5(train, test)
  # Distinct test bigrams: <s> a, a b, b </s>, <s> b, b c, c </s>; the
  # training side has <s> a, a b, b </s>, <s> c, c </s>: 4 of 6.
  assert got == {"average_length": pytest.approx(5 / 3),
                 "bigram_coverage": pytest.approx(4 / 6),
                 "instance_coverage": 0.5,  # `a b` of {a b, b c}
                 "instance_examples": pytest.approx(2 / 3)}


def test_table5_of_nothing_is_zero_not_an_error():
  assert overlap.table5([], []) == {"average_length": 0.0,
                                    "bigram_coverage": 0.0,
                                    "instance_coverage": 0.0,
                                    "instance_examples": 0.0}
