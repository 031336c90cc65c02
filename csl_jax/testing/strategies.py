"""Hypothesis strategies for random QCFGs over a two-word language."""

import hypothesis
from hypothesis import strategies as st

from csl_jax.induction.unify import canonical
from csl_jax.qcfg.rules import validate_rule

SRC = ["a", "b"]
TGT = ["A", "B"]


@st.composite
def rules_strategy(draw, max_nts=2):
  """A well-formed rule with up to `max_nts` NTs, in canonical NT order."""
  num_nts = draw(st.integers(0, max_nts))
  source = draw(st.lists(st.sampled_from(SRC), max_size=2))
  for k in range(1, num_nts + 1):
    source.insert(draw(st.integers(0, len(source))), f"NT_{k}")
  nts = [f"NT_{k}" for k in range(1, num_nts + 1)]
  target = nts + draw(st.lists(st.sampled_from(TGT + nts), max_size=2))
  rule = canonical(source, draw(st.permutations(target)))
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
