"""Is a rule (or example) derivable from other rules? Numba CKY with masks.

A rule r is derivable from a grammar G if the pair (r.source, r.target), with
each NT_k turned into a leaf token that the identity rule <leaf_k, leaf_k>
derives, is derivable: then any derivation that uses r can use G instead, so
r can be removed without losing any example.
"""

from typing import List, Sequence, Tuple

import numpy as np

from csl_jax.cky import qcfg_kernel
from csl_jax.cky.grammar_arrays import encode_grammar
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
    self.grammar = encode_grammar(self.rules + leaves, max_nts=widest)
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
    size = len(pairs)
    if not size:
      return np.zeros(0, np.bool_)
    g = self.grammar
    xs = [g.encode_source(x) for x, _ in pairs]
    ys = [g.encode_target(y) for _, y in pairs]
    x_off = np.zeros(size + 1, np.int64)
    x_off[1:] = np.cumsum([len(x) for x in xs])
    y_off = np.zeros(size + 1, np.int64)
    y_off[1:] = np.cumsum([len(y) for y in ys])
    inc = np.asarray(include if len(include) else [-1] * size, np.int64)
    exc = np.asarray(exclude if len(exclude) else [-1] * size, np.int64)
    kernel = (qcfg_kernel.derivable_masked if size >= 64
              else qcfg_kernel.derivable_masked_serial)
    return kernel(
        np.concatenate(xs).astype(np.int32), x_off,
        np.concatenate(ys).astype(np.int32), y_off, g.src_sym, g.src_len,
        g.tgt_sym, g.tgt_len, g.tgt_first, g.num_nts, g.max_nts,
        len(g.source_vocab), len(g.target_vocab), g.anchor_off,
        g.anchor_rules, g.free_rules, self.enabled, inc, exc)

  def rules_derivable(self, targets: Sequence[Rule],
                      include: Sequence[int] = (),
                      exclude: Sequence[int] = ()) -> np.ndarray:
    return self.derivable([as_pair(r) for r in targets], include, exclude)
