"""Expected production counts of a string under a CFG, all parses equal.

Yao & Koller 2024 (App. D.2) count an output with N parses 1/N to the
productions of each parse. That is the expectation under the uniform
distribution over parses, which inside-outside with every weight 1 computes
in O(R · n^3) (inside = number of parses) instead of enumerating the parses:
count(p) = sum over spans of outside(lhs, span) · inside_p(span) / inside(S).

Productions keep their n-ary right-hand sides (no binarization): a left to
right prefix pass gives the ways the first m symbols derive i..k, a right to
left one the ways the rest derive k..j. Unary chains (`C -> Walk`) are
ordered topologically within a span; a unary cycle is an error. The twin is
`counts_reference.py` (every parse enumerated).
"""

from typing import NamedTuple, Optional, Sequence, Tuple

import numba
import numpy as np

from csl_jax import numba_fixes  # noqa: F401  pylint: disable=unused-import
from csl_jax.errors import InputError


class CFGTables(NamedTuple):
  """A CFG as arrays: categories 0..C-1; a symbol code >= 0 is a category,
  -1 - t is terminal t. Productions are grouped by LHS (`by_lhs`)."""
  start: int
  num_categories: int
  lhs_start: np.ndarray  # int64[C + 1]: by_lhs[lhs_start[c]:lhs_start[c+1]]
  by_lhs: np.ndarray  # int64[P]: production indices
  rhs_start: np.ndarray  # int64[P + 1]
  rhs: np.ndarray  # int64: symbol codes
  order: np.ndarray  # int64[C]: a unary child before its parent
  terminals: Tuple[str, ...]


def encode(cfg) -> CFGTables:
  """Tables of an `OutputCFG` (or anything with .productions/.start)."""
  categories = list(dict.fromkeys(p.lhs for p in cfg.productions))
  index = {c: k for k, c in enumerate(categories)}
  terminals = list(dict.fromkeys(s.name for p in cfg.productions
                                 for s in p.rhs if s.terminal))
  t_index = {t: k for k, t in enumerate(terminals)}
  rhs, rhs_start = [], [0]
  unary = [[] for _ in categories]  # parent -> unary children
  for p in cfg.productions:
    for s in p.rhs:
      rhs.append(-1 - t_index[s.name] if s.terminal else index[s.name])
    rhs_start.append(len(rhs))
    if len(p.rhs) == 1 and not p.rhs[0].terminal:
      unary[index[p.lhs]].append(index[p.rhs[0].name])
  by_lhs = sorted(range(len(cfg.productions)),
                  key=lambda k: index[cfg.productions[k].lhs])
  counts = np.bincount([index[p.lhs] for p in cfg.productions],
                       minlength=len(categories))
  return CFGTables(index[cfg.start], len(categories),
                   np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
                   np.asarray(by_lhs, np.int64),
                   np.asarray(rhs_start, np.int64),
                   np.asarray(rhs, np.int64), _unary_order(unary, categories),
                   tuple(terminals))


def _unary_order(unary, categories) -> np.ndarray:
  """Categories with every unary child before its parent (DFS post-order)."""
  state = [0] * len(categories)  # 0 new, 1 on the stack, 2 done
  order = []
  for root in range(len(categories)):
    stack = [(root, iter(unary[root]))]
    if state[root]:
      continue
    state[root] = 1
    while stack:
      node, children = stack[-1]
      child = next(children, None)
      if child is None:
        state[node] = 2
        order.append(node)
        stack.pop()
      elif state[child] == 1:
        raise InputError(f"unary cycle through category {categories[child]!r}"
                         ": infinitely many parses (counting over parses "
                         "needs a grammar without one)")
      elif state[child] == 0:
        state[child] = 1
        stack.append((child, iter(unary[child])))
  return np.asarray(order, np.int64)


def token_ids(tables: CFGTables, tokens: Sequence[str]) -> np.ndarray:
  """Terminal ids of `tokens`; -1 for a token the grammar never produces."""
  index = {t: k for k, t in enumerate(tables.terminals)}
  return np.asarray([index.get(t, -1) for t in tokens], np.int64)


@numba.njit(cache=True)
def _cannot_match(rhs, r0, r1, tokens, i, j):
  """A cheap no: too long, or a terminal at either end that differs. (Most
  productions of program grammars are spelled-out token sequences.)"""
  if r1 - r0 > j - i:
    return True
  first, last = rhs[r0], rhs[r1 - 1]
  if first < 0 and tokens[i] != -1 - first:
    return True
  if last < 0 and tokens[j - 1] != -1 - last:
    return True
  if r1 - r0 == j - i:  # one token per symbol: the terminals must match
    for m in range(r1 - r0):
      s = rhs[r0 + m]
      if s < 0 and tokens[i + m] != -1 - s:
        return True
  return False


@numba.njit(cache=True)
def _prefix(rhs, r0, r1, tokens, inside, i, j):
  """fwd[m, k]: ways rhs[r0:r0+m] derives tokens i..k (k in i..j)."""
  n_sym = r1 - r0
  fwd = np.zeros((n_sym + 1, j - i + 1))
  fwd[0, 0] = 1.0
  for m in range(n_sym):
    s = rhs[r0 + m]
    for k in range(i, j):
      w = fwd[m, k - i]
      if w == 0.0:
        continue
      if s < 0:
        if tokens[k] == -1 - s:
          fwd[m + 1, k + 1 - i] += w
      else:
        for k2 in range(k + 1, j + 1):
          v = inside[s, k, k2]
          if v != 0.0:
            fwd[m + 1, k2 - i] += w * v
  return fwd


@numba.njit(cache=True)
def _suffix(rhs, r0, r1, tokens, inside, i, j):
  """bwd[m, k]: ways rhs[r0+m:r1] derives tokens k..j (k in i..j)."""
  n_sym = r1 - r0
  bwd = np.zeros((n_sym + 1, j - i + 1))
  bwd[n_sym, j - i] = 1.0
  for m in range(n_sym - 1, -1, -1):
    s = rhs[r0 + m]
    for k2 in range(i + 1, j + 1):
      w = bwd[m + 1, k2 - i]
      if w == 0.0:
        continue
      if s < 0:
        if tokens[k2 - 1] == -1 - s:
          bwd[m, k2 - 1 - i] += w
      else:
        for k in range(i, k2):
          v = inside[s, k, k2]
          if v != 0.0:
            bwd[m, k - i] += w * v
  return bwd


@numba.njit(cache=True)
def _inside_outside(start, lhs_start, by_lhs, rhs_start, rhs, order,
                    num_categories, weights, tokens):
  n = tokens.shape[0]
  inside = np.zeros((num_categories, n + 1, n + 1))
  counts = np.zeros(weights.shape[0])
  for length in range(1, n + 1):
    for i in range(0, n - length + 1):
      j = i + length
      for c in order:
        total = 0.0
        for q in range(lhs_start[c], lhs_start[c + 1]):
          p = by_lhs[q]
          r0, r1 = rhs_start[p], rhs_start[p + 1]
          if weights[p] == 0.0 or _cannot_match(rhs, r0, r1, tokens, i, j):
            continue
          total += weights[p] * _prefix(rhs, r0, r1, tokens, inside, i,
                                        j)[r1 - r0, j - i]
        inside[c, i, j] = total
  z = inside[start, 0, n] if n > 0 else 0.0
  if z == 0.0:
    return z, counts
  outside = np.zeros((num_categories, n + 1, n + 1))
  outside[start, 0, n] = 1.0
  for length in range(n, 0, -1):
    for i in range(0, n - length + 1):
      j = i + length
      for o_index in range(num_categories - 1, -1, -1):
        c = order[o_index]  # parents before their unary children
        out = outside[c, i, j]
        if out == 0.0 or inside[c, i, j] == 0.0:
          continue
        for q in range(lhs_start[c], lhs_start[c + 1]):
          p = by_lhs[q]
          r0, r1 = rhs_start[p], rhs_start[p + 1]
          if weights[p] == 0.0 or _cannot_match(rhs, r0, r1, tokens, i, j):
            continue
          fwd = _prefix(rhs, r0, r1, tokens, inside, i, j)
          here = fwd[r1 - r0, j - i]
          if here == 0.0:
            continue
          counts[p] += out * weights[p] * here / z
          bwd = _suffix(rhs, r0, r1, tokens, inside, i, j)
          for m in range(r1 - r0):
            s = rhs[r0 + m]
            if s < 0:
              continue
            for k in range(i, j):
              left = fwd[m, k - i]
              if left == 0.0:
                continue
              for k2 in range(k + 1, j + 1):
                right = bwd[m + 1, k2 - i]
                if right != 0.0:
                  outside[s, k, k2] += out * weights[p] * left * right
  return z, counts


def expected_counts(tables: CFGTables, tokens: Sequence[str],
                    weights: Optional[np.ndarray] = None
                    ) -> Tuple[float, np.ndarray]:
  """(inside score, expected per-production counts) of `tokens`.

  Without `weights` (all 1): (number of parses, counts averaged over the
  parses), Y&K's fractional counts. With production probabilities: (p(y),
  the posterior expected counts). (0, zeros) when there is no parse.
  """
  if weights is None:
    weights = np.ones(len(tables.rhs_start) - 1)
  return _inside_outside(tables.start, tables.lhs_start, tables.by_lhs,
                         tables.rhs_start, tables.rhs, tables.order,
                         tables.num_categories,
                         np.asarray(weights, np.float64),
                         token_ids(tables, tokens))
