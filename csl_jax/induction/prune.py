"""Drop rules that no training example needs (checked on parse forests).

Greedy steps only remove a rule that other rules derive, so a rule can
outlive its use once better rules cover its examples. Here each rule, most
costly first, is dropped if every example whose forest uses it still has a
derivation without it and without the rules dropped before it.
"""

from typing import Callable, Dict, List, Sequence, Tuple

import numba
import numpy as np

from csl_jax.cky import forest as forest_lib
from csl_jax.cky.grammar_arrays import encode_qcfg
from csl_jax.qcfg.rules import Rule, format_rule
from csl_jax import numba_fixes  # noqa: F401  pylint: disable=unused-import


@numba.njit(cache=True)
def roots_alive(node_off, edge_off, edge_rule, edge_parent, edge_children,
                examples, dead):
  """For each example id, whether its forest's root has a derivation that
  uses no rule r with dead[r]. Edges are grouped by parent bottom-up."""
  out = np.zeros(examples.shape[0], np.bool_)
  for i in range(examples.shape[0]):
    b = examples[i]
    n0, n1 = node_off[b], node_off[b + 1]
    alive = np.zeros(n1 - n0, np.bool_)
    for e in range(edge_off[b], edge_off[b + 1]):
      if dead[edge_rule[e]] or alive[edge_parent[e]]:
        continue
      ok = True
      for c in edge_children[e]:
        if c >= 0 and not alive[c]:
          ok = False
          break
      if ok:
        alive[edge_parent[e]] = True
    out[i] = n1 > n0 and alive[n1 - n0 - 1]
  return out


def prune(rules: Sequence[Rule], pairs: Sequence[Tuple], max_nts: int,
          cost: Callable[[Rule], float], keep: Sequence[Rule] = ()
          ) -> List[Rule]:
  """Rules minus those no example needs; rules in `keep` always stay."""
  return prune_and_cover(rules, pairs, max_nts, cost, keep)[0]


def prune_and_cover(rules: Sequence[Rule], pairs: Sequence[Tuple],
                    max_nts: int, cost: Callable[[Rule], float],
                    keep: Sequence[Rule] = ()
                    ) -> Tuple[List[Rule], np.ndarray]:
  """`prune`, and whether the pruned rules derive each pair (read off the
  same forests: no second parse of the training set)."""
  rules = list(rules)
  grammar = encode_qcfg(rules, max_nts=max(
      [r.num_nts for r in rules] + [max_nts]))
  # Each distinct pair parsed once (SCAN's training sets repeat 10%).
  distinct: Dict[Tuple[Tuple[str, ...], Tuple[str, ...]], int] = {}
  pair_of = np.array([distinct.setdefault((tuple(x), tuple(y)), len(distinct))
                      for x, y in pairs], np.int64)
  batch, _ = forest_lib.build_forests(grammar, list(distinct),
                                      max_source_len=10**9,
                                      max_target_len=10**9)
  users: List[List[int]] = [[] for _ in rules]
  for b in range(len(distinct)):
    e0, e1 = batch.edge_offsets[b], batch.edge_offsets[b + 1]
    for r in set(batch.edge_rule[e0:e1].tolist()):
      users[r].append(b)
  dead = np.zeros(len(rules), np.bool_)
  protected = set(keep)
  order = sorted(range(len(rules)),
                 key=lambda r: (-cost(rules[r]), format_rule(rules[r])))
  for r in order:
    if rules[r] in protected:
      continue
    dead[r] = True
    examples = np.array(users[r], np.int64)
    if examples.size and not roots_alive(
        batch.node_offsets, batch.edge_offsets, batch.edge_rule,
        batch.edge_parent, batch.edge_children, examples, dead).all():
      dead[r] = False
  derived = roots_alive(batch.node_offsets, batch.edge_offsets,
                        batch.edge_rule, batch.edge_parent,
                        batch.edge_children, np.arange(len(distinct)), dead)
  return [r for i, r in enumerate(rules) if not dead[i]], derived[pair_of]
