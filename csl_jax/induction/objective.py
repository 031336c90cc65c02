"""CSL's grammar induction objective (Qiu et al., 2022, Eqs. 6-7).

L(G) = sum over rules of |alpha| + |beta| - c(alpha, beta), where |.| counts
terminals at `terminal_cost` (k_t) and NTs at `nonterminal_cost`, and
c = k_alpha ln p(alpha|beta) + k_beta ln p(beta|alpha) <= 0. Lower is better.
The paper writes ln; the authors' code takes log2 (`objective_utils.py`), so
their k values weigh the penalty 1/ln 2 = 1.44 times as much: `log_base` 2
reproduces their objective (BENCHMARKS.md issue 17, GeoQuery).
"""

import dataclasses
import math
from typing import Dict, Iterable

from csl_jax import configs
from csl_jax.induction.statistics import PairStatistics
from csl_jax.qcfg.rules import Rule, nt_index


@dataclasses.dataclass(frozen=True)
class ObjectiveConfig:
  terminal_cost: float = 1.0  # k_t
  nonterminal_cost: float = 1.0
  source_given_target: float = 1.0  # k_alpha
  target_given_source: float = 1.0  # k_beta
  log_base: float = math.e  # the paper's ln; 2.0: the authors' code

  def __post_init__(self):
    configs.check_types(self)
    if self.log_base <= 0 or self.log_base == 1:
      raise ValueError(f"log_base must be > 0 and != 1, not {self.log_base}")


class Objective:

  def __init__(self, config: ObjectiveConfig, stats: PairStatistics):
    self.config = config
    self.stats = stats
    self._cache: Dict[Rule, float] = {}
    self._token_cost: Dict[str, float] = {}
    base = config.log_base
    self._log = (math.log if base == math.e else math.log2 if base == 2
                 else lambda p: math.log(p, base))

  def size(self, tokens) -> float:
    try:
      return sum(map(self._token_cost.__getitem__, tokens))
    except KeyError:  # new tokens (the sum adds in the same order)
      c = self.config
      for t in tokens:
        self._token_cost[t] = (c.nonterminal_cost if nt_index(t)
                               else c.terminal_cost)
      return sum(map(self._token_cost.__getitem__, tokens))

  def correlation(self, rule: Rule) -> float:
    """c(alpha, beta); -inf if the sides never occur together."""
    c = self.config
    p_src, p_tgt = self.stats.conditionals(rule.source, rule.target)
    total = 0.0
    for coef, p in ((c.source_given_target, p_src),
                    (c.target_given_source, p_tgt)):
      if coef:
        total += coef * self._log(p) if p > 0 else -math.inf
    return total

  def rule_cost(self, rule: Rule) -> float:
    cost = self._cache.get(rule)
    if cost is None:
      cost = (self.size(rule.source) + self.size(rule.target)
              - self.correlation(rule))
      self._cache[rule] = cost
    return cost

  def is_priced(self, rule: Rule) -> bool:
    return rule in self._cache

  def prime(self, rule: Rule, cost: float) -> None:
    """Records a cost computed elsewhere (by a worker process)."""
    self._cache.setdefault(rule, cost)

  def total(self, rules: Iterable[Rule]) -> float:
    return sum(self.rule_cost(r) for r in rules)
