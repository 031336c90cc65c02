"""Brute-force twin of `viterbi.py`: every derivation of a tiny input.

Derivations are enumerated by recursion over (span, context, unary budget):
a unary-source rule spends one unit of the budget, any other rule gives its
children a fresh `max_unary_chain`. Exponential; for tests only.
"""

import functools
from typing import List, Optional, Sequence, Tuple

from csl_jax.model.contexts import ROOT
from csl_jax.qcfg.rules import Rule, nt_index

# (log p(z), output tokens, (rule id, child derivations))
Scored = Tuple[float, Tuple[str, ...], tuple]


def _splits(x: Sequence[str], i: int, j: int, source: Sequence[str]):
  """Child spans, per source NT, of each way `source` covers x[i:j]."""
  if not source:
    if i == j:
      yield ()
    return
  head, rest = source[0], source[1:]
  if nt_index(head):
    for e in range(i + 1, j + 1):
      for tail in _splits(x, e, j, rest):
        yield ((i, e),) + tail
  elif i < j and x[i] == head:
    yield from _splits(x, i + 1, j, rest)


def _output(rule: Rule, children: Sequence[Scored]) -> Tuple[str, ...]:
  out = []
  for t in rule.target:
    k = nt_index(t)
    out.extend(children[k - 1][1] if k else (t,))
  return tuple(out)


def all_derivations(rules: Sequence[Rule], log_p, ctx_index,
                    x: Sequence[str], max_unary_chain: int) -> List[Scored]:
  """All derivations of x at the root, best first (ties: any order)."""
  x = tuple(x)

  @functools.lru_cache(maxsize=None)
  def derive(i: int, j: int, ctx: int, budget: int) -> Tuple[Scored, ...]:
    found = []
    for r, rule in enumerate(rules):
      lp = float(log_p[ctx][r])
      if lp == float("-inf"):
        continue
      if rule.is_unary_source:
        if budget:
          for child in derive(i, j, int(ctx_index[r][0]), budget - 1):
            found.append((lp + child[0], _output(rule, [child]),
                          (r, (child[2],))))
        continue
      for spans in _splits(x, i, j, rule.source):
        options = [derive(a, b, int(ctx_index[r][n]), max_unary_chain)
                   for n, (a, b) in enumerate(spans)]
        for combo in _product(options):
          found.append((lp + sum(c[0] for c in combo), _output(rule, combo),
                        (r, tuple(c[2] for c in combo))))
    return tuple(found)

  if not x:
    return []
  return sorted(derive(0, len(x), ROOT, max_unary_chain),
                key=lambda d: -d[0])


def _product(options):
  if not options:
    yield ()
    return
  for head in options[0]:
    for tail in _product(options[1:]):
      yield (head,) + tail


def parse(rules: Sequence[Rule], log_p, ctx_index, x: Sequence[str],
          max_unary_chain: int, k: Optional[int] = None,
          output_cfg=None) -> Optional[Scored]:
  """The best derivation (with a CFG: the best accepted among the k best)."""
  ranked = all_derivations(rules, log_p, ctx_index, x, max_unary_chain)
  if k is not None:
    ranked = ranked[:k]
  for d in ranked:
    if output_cfg is None or output_cfg.recognizes(d[1]):
      return d
  return None


def score(rules: Sequence[Rule], log_p, ctx_index, derivation,
          ctx: int = ROOT) -> float:
  """log p(z) of a (rule id, children) derivation in context ctx."""
  r, children = derivation
  return float(log_p[ctx][r]) + sum(
      score(rules, log_p, ctx_index, c, int(ctx_index[r][n]))
      for n, c in enumerate(children))


def output(rules: Sequence[Rule], derivation) -> Tuple[str, ...]:
  """The output string of a (rule id, children) derivation."""
  r, children = derivation
  subs = [(None, output(rules, c), None) for c in children]
  return _output(rules[r], subs)
