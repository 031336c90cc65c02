"""Pure-Python twin of `sample_kernel`: the exact distribution of sampled
(input, output) pairs, by enumerating derivations up to the depth limit
(`pair_distribution`: the plain sampler; `local_distribution`: the
intersected sampler's local mode), from p(r | context) computed here too
(`rule_distributions`), not with the sampler's code."""

import collections
import math
from typing import Dict, List, Sequence, Tuple

import numpy as np

from csl_jax.qcfg.rules import nt_index


def _num_nts(rule) -> int:
  return len({t for t in rule.source if t.startswith("NT_")})


def _normalized(logits: List[float]) -> List[float]:
  top = max(logits)  # the largest weight is exp(0): no overflow
  weights = [math.exp(x - top) for x in logits]
  total = sum(weights)
  return [w / total for w in weights]


def rule_distributions(rules, rule_logits, context_logits,
                       temperature: float, depth_bias: float,
                       depth_bias_min_nts: int):
  """(p, leaf) as lists [C][R]: p[c][r] = sum_s p(s | c) p(r | s), where
  p(r | s) ~ exp(theta[s][r] / T + depth_bias if r has more than
  depth_bias_min_nts NTs) (T = inf: theta ignored, uniform but for the
  bias) and p(s | c) ~ exp(context_logits[c][s]); leaf[c][r] = p[c][r] for
  the rules without NTs, else 0 (renormalized where it is drawn)."""
  p_rule = []
  for theta in rule_logits:
    logits = []
    for r, rule in enumerate(rules):
      x = 0.0 if math.isinf(temperature) else float(theta[r]) / temperature
      if _num_nts(rule) > depth_bias_min_nts:
        x += depth_bias
      logits.append(x)
    p_rule.append(_normalized(logits))
  p, leaf = [], []
  for theta in context_logits:
    p_state = _normalized([float(x) for x in theta])
    row = [sum(p_state[s] * p_rule[s][r] for s in range(len(p_rule)))
           for r in range(len(rules))]
    p.append(row)
    leaf.append([q if _num_nts(rules[r]) == 0 else 0.0
                 for r, q in enumerate(row)])
  return p, leaf


def sampler_distribution(model, config) -> Dict[Tuple[str, str], float]:
  """P(x, y) of `sampler.sample(model, n, config)` without an output CFG."""
  p, leaf = rule_distributions(
      model.rules, model.rule_logits, model.context_logits,
      config.temperature, config.depth_bias, config.depth_bias_min_nts)
  return pair_distribution(model.rules, p, leaf, model.ctx_index,
                           config.max_depth)


def pair_distribution(rules, p, leaf, ctx_index, max_depth: int
                      ) -> Dict[Tuple[str, str], float]:
  """P(x, y) of the sampler: from context c at depth d, rule r is drawn with
  p[c, r] (leaf[c, r] at d >= max_depth, both renormalized per row)."""

  def expand(ctx, depth):
    row = leaf[ctx] if depth >= max_depth else p[ctx]
    total = float(np.sum(row))
    out = collections.Counter()
    if total <= 0:
      return out
    for r, rule in enumerate(rules):
      if row[r] <= 0:
        continue
      kids = []
      for i in range(rule.num_nts):
        kids.append(expand(ctx_index[r, i], depth + 1))
      partial = [({}, row[r] / total)]
      for i, dist in enumerate(kids):
        partial = [({**b, i + 1: pair}, q * w) for b, q in partial
                   for pair, w in dist.items()]
      for binding, q in partial:
        x = tuple(t for s in rule.source for t in (
            binding[nt_index(s)][0] if nt_index(s) else (s,)))
        y = tuple(t for s in rule.target for t in (
            binding[nt_index(s)][1] if nt_index(s) else (s,)))
        out[(x, y)] += q
    return out

  dist = expand(0, 1)
  return {(" ".join(x), " ".join(y)): q for (x, y), q in dist.items()}


def _spell(rule, binding):
  x = tuple(t for s in rule.source for t in (
      binding[nt_index(s)][0] if nt_index(s) else (s,)))
  y = tuple(t for s in rule.target for t in (
      binding[nt_index(s)][1] if nt_index(s) else (s,)))
  return x, y


def local_distribution(rules, p, ctx_index,
                       options: Sequence[Dict[str, List[tuple]]],
                       start: str, max_depth: int
                       ) -> Dict[Tuple[str, str], float]:
  """P(x, y) of the intersected sampler's local mode: a node of category A
  in context c at depth d draws among the rules r with a child-category
  tuple (`options[r][A]`, e.g. `intersection.target_options`) whose
  children can all complete within the depth limit, with p[c, r]
  renormalized over them, then one such tuple uniformly; at d >=
  max_depth only NT-free rules."""

  def can_finish(ctx, cat, depth):
    return any(True for _ in choices(ctx, cat, depth))

  def choices(ctx, cat, depth):
    for r, rule in enumerate(rules):
      if p[ctx, r] <= 0 or (depth >= max_depth and rule.num_nts):
        continue
      good = [t for t in options[r].get(cat, [])
              if all(can_finish(ctx_index[r, i], b, depth + 1)
                     for i, b in enumerate(t))]
      if good:
        yield r, good

  def expand(ctx, cat, depth):
    picks = list(choices(ctx, cat, depth))
    total = sum(p[ctx, r] for r, _ in picks)
    out = collections.Counter()
    for r, tuples in picks:
      for t in tuples:
        partial = [({}, p[ctx, r] / total / len(tuples))]
        for i, b in enumerate(t):
          kid = expand(ctx_index[r, i], b, depth + 1)
          partial = [({**bind, i + 1: pair}, q * w) for bind, q in partial
                     for pair, w in kid.items()]
        for binding, q in partial:
          out[_spell(rules[r], binding)] += q
    return out

  dist = expand(0, start, 1)
  return {(" ".join(x), " ".join(y)): q for (x, y), q in dist.items()}
