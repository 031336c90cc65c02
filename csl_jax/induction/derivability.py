"""Is a rule (or example) derivable from other rules? Numba CKY with masks.

A rule r is derivable from a grammar G if the pair (r.source, r.target), with
each NT_k turned into a leaf token that the identity rule <leaf_k, leaf_k>
derives, is derivable: then any derivation that uses r can use G instead, so
r can be removed without losing any example.
"""

from typing import List, Sequence, Tuple

import numpy as np

from csl_jax.cky import forest
from csl_jax.cky.grammar_arrays import encode_qcfg
from csl_jax.qcfg.rules import Rule, nt_index


def leaf(k: int) -> str:
  return f"\u27e8NT_{k}\u27e9"


def as_pair(rule: Rule) -> Tuple[List[str], List[str]]:
  swap = lambda t: leaf(nt_index(t)) if nt_index(t) else t
  return [swap(t) for t in rule.source], [swap(t) for t in rule.target]


class RuleChecker:
  """Rules encoded once; many derivability queries under rule masks."""

  def __init__(self, rules: Sequence[Rule], max_nts: int):
    self.rules = list(rules)
    self.index = {r: i for i, r in enumerate(self.rules)}
    leaves = [Rule((leaf(k),), (leaf(k),)) for k in range(1, max_nts + 1)]
    widest = max([r.num_nts for r in self.rules] + [max_nts, 1])
    self.grammar = encode_qcfg(self.rules + leaves, max_nts=widest)
    self.enabled = np.zeros(len(self.rules) + len(leaves), np.bool_)
    self.enabled[len(self.rules):] = True

  def enable(self, rules: Sequence[Rule], on: bool = True) -> None:
    for r in rules:
      self.enabled[self.index[r]] = on

  def derivable(self, pairs: Sequence[Tuple[Sequence[str], Sequence[str]]],
                include: Sequence[int] = (), exclude: Sequence[int] = ()
                ) -> np.ndarray:
    """pairs[b] derivable with the enabled rules + include[b] - exclude[b]
    (rule indices; -1 for none)."""
    return forest.derivable_masked(
        self.grammar, pairs, self.enabled,
        include if len(include) else None, exclude if len(exclude) else None)

  def rules_derivable(self, targets: Sequence[Rule],
                      include: Sequence[int] = (),
                      exclude: Sequence[int] = ()) -> np.ndarray:
    return self.derivable([as_pair(r) for r in targets], include, exclude)
