"""Sampling only outputs of the output CFG: the QCFG intersected with it.

Each NT of a derivation is annotated with the output-CFG category its output
must have (the root: the start category); a rule r may expand an NT of
category A with child categories (B_1..B_k) if r's target, with NT_i read as
B_i, derives from A (the paper's "some replacement of the nonterminal
symbols with nonterminals from the output CFG"). With Z_d(c, A), the
mass of the annotated subtrees started in context c at depth d whose output
has category A within the depth limit (at the limit, as the plain sampler,
over the NT-free rules renormalized), drawing (r, B) in proportion to
p(r | c) prod_i Z_{d+1}(ctx(r, i), B_i) draws each annotated derivation
with the model's probability of the derivation. A derivation with m > 1
annotations (an output CFG with unit productions, e.g. FunQL's `Query ->
City`, lets a slot be several categories) is thus drawn m times too often:
keeping it with probability 1 / m (`annotations`, counted on the drawn
tree) samples exactly from the model conditioned on a valid output.
"""

import dataclasses
import functools
from typing import Dict, FrozenSet, List, Sequence, Tuple

import numba
import numpy as np

from csl_jax import progress as progress_lib
from csl_jax.qcfg.output_cfg import OutputCFG
from csl_jax.qcfg.rules import Rule, nt_index
from csl_jax import numba_fixes  # noqa: F401  pylint: disable=unused-import

Assignment = Tuple[Tuple[int, str], ...]  # sorted (target position, category)


def _unit_closure(cfg: OutputCFG) -> Dict[str, FrozenSet[str]]:
  """X -> the categories X derives through unit productions (X included)."""
  step = {c: set() for c in cfg.categories}
  for p in cfg.productions:
    if len(p.rhs) == 1 and not p.rhs[0].terminal:
      step[p.lhs].add(p.rhs[0].name)
  closure = {}
  for c in cfg.categories:
    seen, stack = {c}, [c]
    while stack:
      for d in step[stack.pop()]:
        if d not in seen:
          seen.add(d)
          stack.append(d)
    closure[c] = frozenset(seen)
  return closure


def target_options(cfg: OutputCFG, target: Sequence[str]
                   ) -> Dict[str, List[Tuple[str, ...]]]:
  """For each category A, the child-category tuples (one per NT index, in
  order) with which `target` derives from A. Repeated NTs take one
  category."""
  tokens = list(target)
  n = len(tokens)
  slot = [nt_index(t) for t in tokens]
  closure = _unit_closure(cfg)
  by_lhs: Dict[str, list] = {c: [] for c in cfg.categories}
  for p in cfg.productions:
    if not (len(p.rhs) == 1 and not p.rhs[0].terminal):
      by_lhs[p.lhs].append(p.rhs)

  @functools.lru_cache(maxsize=None)
  def sequence(rhs, i, j) -> FrozenSet[Assignment]:
    """Assignments with which the symbols rhs derive tokens[i:j]."""
    if not rhs:
      return frozenset([()]) if i == j else frozenset()
    head, rest = rhs[0], rhs[1:]
    out = set()
    for k in range(i + 1, j - len(rest) + 1):
      left = symbol(head, i, k)
      if not left:
        continue
      for a in left:
        for b in sequence(rest, k, j):
          out.add(tuple(sorted(a + b)))
    return frozenset(out)

  @functools.lru_cache(maxsize=None)
  def symbol(sym, i, k) -> FrozenSet[Assignment]:
    name, terminal = sym
    if terminal:
      ok = k == i + 1 and not slot[i] and tokens[i] == name
      return frozenset([()]) if ok else frozenset()
    return category(name, i, k)

  @functools.lru_cache(maxsize=None)
  def category(name, i, k) -> FrozenSet[Assignment]:
    out = set()
    for c in closure[name]:
      if k == i + 1 and slot[i]:
        out.add(((i, c),))
      for rhs in by_lhs[c]:
        out |= sequence(tuple((s.name, s.terminal) for s in rhs), i, k)
    return frozenset(out)

  num_nts = max(slot + [0])
  result: Dict[str, List[Tuple[str, ...]]] = {}
  for a in cfg.categories:
    tuples = set()
    for assignment in category(a, 0, n):
      cats: Dict[int, str] = {}
      if all(cats.setdefault(slot[p], c) == c for p, c in assignment):
        tuples.add(tuple(cats[k] for k in range(1, num_nts + 1)))
    if tuples:
      result[a] = _undominated(sorted(tuples), closure)
  return result


def _undominated(tuples: List[Tuple[str, ...]],
                 closure: Dict[str, FrozenSet[str]]
                 ) -> List[Tuple[str, ...]]:
  """The tuples no other one covers. t' covers t if each t'_i derives t_i
  through unit productions (so every child output of t is one of t' too,
  and a child subtree annotated t_i is also annotated t'_i): t adds no
  derivation, only a second annotation of derivations t' has (which the
  sampler would drop again, `annotations`). Of tuples that cover each
  other (a unit cycle), the first is kept."""
  def covers(big, small):
    return all(s in closure[b] for b, s in zip(big, small, strict=True))
  return [t for k, t in enumerate(tuples)
          if not any(u != t and covers(u, t) and (not covers(t, u) or j < k)
                     for j, u in enumerate(tuples))]


@dataclasses.dataclass(frozen=True)
class Intersection:
  """Options (rule, parent category, child categories) as arrays, grouped by
  parent category (CSR), and Z over depths."""
  categories: Tuple[str, ...]
  start: int
  opt_off: np.ndarray  # [K + 1]
  opt_rule: np.ndarray  # [O]
  opt_child: np.ndarray  # [O, max_nts] category ids, -1 padded
  z: np.ndarray  # [max_depth + 2, C, K]
  # The options by rule (CSR over rules: option ids) and each option's
  # parent category, for counting a drawn tree's annotations.
  rule_opt_off: np.ndarray  # [R + 1]
  rule_opt: np.ndarray  # [O]
  opt_parent: np.ndarray  # [O]


def build(rules: Sequence[Rule], cfg: OutputCFG, p: np.ndarray,
          ctx_index: np.ndarray, max_depth: int, progress: bool = False
          ) -> Intersection:
  """p: [C, R] rule probabilities per context (tempered as sampled).
  `progress`: a line per tenth of the rules in a log file (COGS's build:
  BENCHMARKS "Issue 10 → A pass over progress, TensorBoard and resuming")."""
  cats = tuple(cfg.categories)
  cat_id = {c: i for i, c in enumerate(cats)}
  width = max(ctx_index.shape[1], 1)
  per_parent: List[List[Tuple[int, Tuple[int, ...]]]] = [[] for _ in cats]
  cache: Dict[Tuple[str, ...], Dict[str, List[Tuple[str, ...]]]] = {}
  for r, rule in enumerate(progress_lib.progress(
      rules, desc="output-CFG intersection", unit="rule",
      disable=not progress, mininterval=1.0)):
    if rule.target not in cache:
      cache[rule.target] = target_options(cfg, rule.target)
    for a, tuples in cache[rule.target].items():
      for t in tuples:
        per_parent[cat_id[a]].append((r, tuple(cat_id[c] for c in t)))
  off = np.zeros(len(cats) + 1, np.int64)
  off[1:] = np.cumsum([len(o) for o in per_parent])
  flat = [o for group in per_parent for o in group]
  opt_rule = np.array([r for r, _ in flat], np.int32)
  opt_child = np.full((len(flat), width), -1, np.int32)
  for i, (_, t) in enumerate(flat):
    opt_child[i, :len(t)] = t
  leaf = np.array([r.num_nts == 0 for r in rules], bool)
  z = _completion_mass(p, ctx_index, off, opt_rule, opt_child, max_depth,
                       p[:, leaf].sum(axis=1))
  opt_parent = np.repeat(np.arange(len(cats), dtype=np.int32), np.diff(off))
  rule_opt = np.argsort(opt_rule, kind="stable").astype(np.int32)
  rule_opt_off = np.zeros(len(rules) + 1, np.int64)
  rule_opt_off[1:] = np.cumsum(np.bincount(opt_rule, minlength=len(rules)))
  return Intersection(cats, cat_id[cfg.start], off, opt_rule, opt_child, z,
                      rule_opt_off, rule_opt, opt_parent)


@numba.njit(cache=True)
def _completion_mass(p, ctx_index, off, opt_rule, opt_child, max_depth,
                     leaf_mass):
  """z[d, c, A]: mass of annotated subtrees from context c at depth d whose
  output has category A, with depth <= max_depth (z[max_depth + 1] = 0); at
  max_depth a rule's p(r | c) over `leaf_mass[c]`, the NT-free rules' mass,
  as the plain sampler draws there."""
  num_ctx = p.shape[0]
  num_cat = off.shape[0] - 1
  z = np.zeros((max_depth + 2, num_ctx, num_cat))
  for d in range(max_depth, 0, -1):
    for a in range(num_cat):
      for o in range(off[a], off[a + 1]):
        r = opt_rule[o]
        leaf = opt_child[o, 0] < 0
        if d == max_depth and not leaf:
          continue
        for c in range(num_ctx):
          w = p[c, r]
          if w == 0.0:
            continue
          if d == max_depth:
            w /= leaf_mass[c]  # > 0: p[c, r] > 0 for this leaf rule
          for i in range(opt_child.shape[1]):
            b = opt_child[o, i]
            if b < 0:
              break
            w *= z[d + 1, ctx_index[r, i], b]
          z[d, c, a] += w
  return z

