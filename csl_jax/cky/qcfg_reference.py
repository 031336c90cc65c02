"""Pure-Python twin of `qcfg_kernel`: slow, obviously correct, for tests.

Top-down memoized recursion over items (i, j, k, l): a rule derives
<x[i:j], y[k:l]> if its source symbols split x[i:j] (terminals match, each
NT takes a non-empty piece) and its target symbols split y[k:l] the same
way, where every NT's pieces are one derivable item and repeated NTs cover
equal strings. Children are strictly smaller (shorter source, or same source
and shorter target), so the recursion terminates.
"""

import functools
from typing import List, Optional, Sequence, Set, Tuple

from csl_jax.qcfg.rules import Rule, nt_index

Item = Tuple[int, int, int, int]
Edge = Tuple[int, Item, Tuple[Item, ...]]


def _splits(tokens: Sequence[str], symbols: Sequence[str], start: int,
            piece_ok=lambda symbol, a, b, chosen: True):
  """Yields, for each way `symbols` span all of `tokens`, the list of
  (absolute) pieces (a, b) taken by each symbol: a terminal takes the one
  token equal to it, an NT a non-empty piece that `piece_ok` accepts given
  the pieces chosen so far."""

  def extend(s, pos, chosen):
    if s == len(symbols):
      if pos == len(tokens):
        yield list(chosen)
      return
    symbol = symbols[s]
    rest = len(symbols) - s - 1  # every later symbol takes >= 1 token
    if not nt_index(symbol):
      if pos < len(tokens) and tokens[pos] == symbol:
        yield from extend(s + 1, pos + 1, chosen + [(start + pos,
                                                      start + pos + 1)])
      return
    for end in range(pos + 1, len(tokens) - rest + 1):
      piece = (start + pos, start + end)
      if piece_ok(symbol, piece[0], piece[1], chosen):
        yield from extend(s + 1, end, chosen + [piece])

  yield from extend(0, 0, [])


def pair_edges(rules: Sequence[Rule], x: Sequence[str], y: Sequence[str]
               ) -> Set[Edge]:
  """All hyperedges of the derivations of the root item (0, n, 0, m)."""
  x, y = list(x), list(y)

  @functools.lru_cache(maxsize=None)
  def edges(item: Item) -> Tuple[Edge, ...]:
    i, j, k, l = item
    found = []
    for r, rule in enumerate(rules):
      if len(rule.source) > j - i or len(rule.target) > l - k:
        continue
      for src in _splits(x[i:j], rule.source, i):
        child_src = {nt_index(s): p
                     for s, p in zip(rule.source, src, strict=True)
                     if nt_index(s)}

        def piece_ok(symbol, a, b, chosen, child_src=child_src, rule=rule):
          idx = nt_index(symbol)
          for prev_symbol, (c, d) in zip(rule.target, chosen):
            if prev_symbol == symbol:  # a repeated NT: the same string
              return y[a:b] == y[c:d]
          return bool(edges(child_src[idx] + (a, b)))

        for tgt in _splits(y[k:l], rule.target, k, piece_ok):
          child_tgt = {}
          for sym, piece in zip(rule.target, tgt, strict=True):
            if nt_index(sym) and nt_index(sym) not in child_tgt:
              child_tgt[nt_index(sym)] = piece
          children = tuple(child_src[a] + child_tgt[a]
                           for a in range(1, len(child_src) + 1))
          found.append((r, item, children))
    return tuple(found)

  result, stack, seen = set(), [(0, len(x), 0, len(y))], set()
  while stack:
    item = stack.pop()
    if item in seen:
      continue
    seen.add(item)
    for edge in edges(item):
      result.add(edge)
      stack.extend(edge[2])
  return result


def derivable(rules: Sequence[Rule], x: Sequence[str], y: Sequence[str]
              ) -> bool:
  return bool(pair_edges(rules, x, y))


def count_derivations(rules: Sequence[Rule], x: Sequence[str],
                      y: Sequence[str]) -> int:
  edges = pair_edges(rules, x, y)

  @functools.lru_cache(maxsize=None)
  def count(item: Item) -> int:
    total = 0
    for r, parent, children in edges:
      if parent == item:
        prod = 1
        for c in children:
          prod *= count(c)
        total += prod
    return total

  return count((0, len(x), 0, len(y))) if edges else 0


def _span_edges(rules: Sequence[Rule], x: Sequence[str]):
  """span -> the hyperedges over it: each way a rule's source splits the
  span (NT pieces derivable), then, if there is one, a self-loop per
  unary-source rule."""
  x = list(x)

  @functools.lru_cache(maxsize=None)
  def derives(span: Tuple[int, int]) -> bool:
    return bool(binary_edges(span))

  @functools.lru_cache(maxsize=None)
  def binary_edges(span):
    i, j = span
    found = []
    for r, rule in enumerate(rules):
      if rule.is_unary_source or len(rule.source) > j - i:
        continue
      for src in _splits(x[i:j], rule.source, i,
                         lambda symbol, a, b, chosen: derives((a, b))):
        children = tuple(p for s, p in zip(rule.source, src, strict=True)
                         if nt_index(s))
        found.append((r, span, children))
    return tuple(found)

  def all_edges(span):
    out = list(binary_edges(span))
    if out:
      out += [(r, span, (span,)) for r, rule in enumerate(rules)
              if rule.is_unary_source]
    return out

  return all_edges


def source_edges(rules: Sequence[Rule], x: Sequence[str]
                 ) -> Set[Tuple[int, Tuple[int, int], Tuple]]:
  """Hyperedges over source spans reachable from (0, n); unary-source rules
  give self-loops on every derivable span."""
  all_edges = _span_edges(rules, x)
  result, stack, seen = set(), [(0, len(x))], set()
  while stack:
    span = stack.pop()
    if span in seen:
      continue
    seen.add(span)
    for edge in all_edges(span):
      result.add(edge)
      stack.extend(edge[2])
  return result


def source_chart(rules: Sequence[Rule], x: Sequence[str],
                 max_edges: Optional[int] = None
                 ) -> Optional[List[Tuple[int, Tuple[int, int], Tuple]]]:
  """Every hyperedge of x's source chart, over every span, reached from
  (0, n) or not (what `qcfg_kernel.source_chart` builds before pruning);
  None when there are more than `max_edges` (the kernel's bound)."""
  all_edges = _span_edges(rules, x)
  n = len(x)
  edges = [e for i in range(n) for j in range(i + 1, n + 1)
           for e in all_edges((i, j))]
  if max_edges is not None and len(edges) > max_edges:
    return None
  return edges
