"""Hypothesis strategies for random QCFGs over a two-word language."""

import functools
from typing import Sequence, Tuple

import hypothesis
from hypothesis import strategies as st

from csl_jax.induction.unify import canonical
from csl_jax.qcfg.rules import validate_rule

SRC = ["a", "b"]
TGT = ["A", "B"]


# The composites below draw through strategies made once per argument:
# a strategy made inside a draw (of a list, which Hypothesis cannot cache)
# is validated and measured again each time, for every drawn rule
# (BENCHMARKS "Issue 10 → Test suite").
# The values drawn are the same.
@functools.lru_cache(maxsize=None)
def integers(low: int, high: int):
  return st.integers(low, high)


@functools.lru_cache(maxsize=None)
def token_lists(tokens: Tuple[str, ...], min_size: int = 0,
                max_size: int = 2):
  return st.lists(st.sampled_from(tokens), min_size=min_size,
                  max_size=max_size)


@functools.lru_cache(maxsize=None)
def _orders(n: int):
  return st.permutations(range(n))


def permutation(draw, items: Sequence):
  """`draw(st.permutations(items))`: the same swaps, one strategy per
  length."""
  return [items[i] for i in draw(_orders(len(items)))]


@st.composite
def rules_strategy(draw, max_nts=2):
  """A well-formed rule with up to `max_nts` NTs, in canonical NT order."""
  num_nts = draw(integers(0, max_nts))
  source = draw(token_lists(tuple(SRC)))
  for k in range(1, num_nts + 1):
    source.insert(draw(integers(0, len(source))), f"NT_{k}")
  nts = [f"NT_{k}" for k in range(1, num_nts + 1)]
  target = nts + draw(token_lists(tuple(TGT + nts)))
  rule = canonical(source, permutation(draw, target))
  hypothesis.assume(not validate_rule(rule))
  return rule


def expand(draw, rules, depth):
  """Samples a derivation; returns its (source, target) token lists."""
  choices = rules if depth > 0 else [r for r in rules if not r.num_nts]
  rule = draw(st.sampled_from(choices))
  children = [expand(draw, rules, depth - 1) for _ in range(rule.num_nts)]
  pick = lambda side, tokens: [t for tok in tokens for t in (
      children[int(tok[3:]) - 1][side] if tok.startswith("NT_") else [tok])]
  return pick(0, rule.source), pick(1, rule.target)
