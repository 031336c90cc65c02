"""Probabilistic CFGs over programs: estimation, criticality, sampling.

Yao & Koller 2024 (§3, App. B.2, D.2) sample programs from a PCFG over a
task's output grammar whose probabilities come three ways: `train` and
`test` (relative frequencies of the productions in the parses of that
part's outputs, an output with N parses counting 1/N to each: `counts.py`)
and `uniform` (1/k for each of the k productions of a category). Productions
unseen in the estimation data get probability 0.

A uniform PCFG can be supercritical (the expected number of expansions is
infinite, e.g. `tasks/geoquery/funql.cfg`): `criticality` is the spectral
radius of the expected-offspring matrix, and sampling takes a depth bound
and reports the samples it rejected.
"""

import collections
import dataclasses
import functools
import math
from typing import (Any, Collection, Dict, List, Mapping, Optional, Sequence,
                    Tuple)

import numpy as np

from csl_jax.errors import InputError
from csl_jax.pcfg import counts as counts_lib


@dataclasses.dataclass(frozen=True)
class PCFG:
  cfg: Any  # csl_jax.qcfg.output_cfg.OutputCFG
  probs: np.ndarray  # [P], summing to 1 over each category's productions
  name: str = ""

  @functools.cached_property
  def tables(self) -> counts_lib.CFGTables:
    return counts_lib.encode(self.cfg)


def _normalize(cfg, weights: np.ndarray) -> np.ndarray:
  totals = collections.defaultdict(float)
  for p, w in zip(cfg.productions, weights, strict=True):
    totals[p.lhs] += w
  return np.asarray([w / totals[p.lhs] if totals[p.lhs] else 0.0
                     for p, w in zip(cfg.productions, weights, strict=True)])


def uniform(cfg, tokens: Optional[Collection[str]] = None,
            factored: bool = False) -> PCFG:
  """1/k for each of a category's k productions.

  With `tokens`, only the productions whose terminals are all in `tokens`
  and whose categories still derive a string of them count (1/k over
  those, 0 for the rest): e.g. a grammar's constants `m0 ... m9` where the
  data has only m0 and m1.

  With `factored`, uniform in Y&K's factorization of each category X into
  `X -> XNonterm [0.5] | XTerm [0.5]` (their GeoQuery grammar): half to the
  productions that may recurse (a category on the right that reaches a
  cycle), half to the others, 1/k within each half (all to one half where
  the other is empty). A grammar whose plain uniform PCFG is supercritical
  (FunQL: 1.011) can be subcritical so (0.58).

  Raises:
    InputError: with `tokens`, the start category derives no string of them.
  """
  if tokens is None:
    weights = np.ones(len(cfg.productions))
    return PCFG(cfg, _normalize(cfg, _factored(cfg, weights) if factored
                                else weights), "uniform")
  tokens = set(tokens)
  known = [all(s.name in tokens for s in p.rhs if s.terminal)
           for p in cfg.productions]
  productive: set = set()
  grew = True
  while grew:  # least fixed point: categories deriving a string of tokens
    grew = False
    for p, ok in zip(cfg.productions, known, strict=True):
      if ok and p.lhs not in productive and all(
          s.terminal or s.name in productive for s in p.rhs):
        productive.add(p.lhs)
        grew = True
  if cfg.start not in productive:
    raise InputError(f"no string of the grammar's start category "
                     f"{cfg.start!r} uses only the given tokens")
  weights = np.asarray([
      float(ok and all(s.terminal or s.name in productive for s in p.rhs))
      for p, ok in zip(cfg.productions, known, strict=True)])
  return PCFG(cfg, _normalize(cfg, _factored(cfg, weights) if factored
                              else weights), "uniform")


def recursive_categories(cfg) -> set:
  """The categories from which a derivation can grow without bound: those
  that reach a cycle of categories (themselves included)."""
  children = collections.defaultdict(set)
  for p in cfg.productions:
    children[p.lhs].update(s.name for s in p.rhs if not s.terminal)

  def reach(category):
    seen, todo = set(), [category]
    while todo:
      for child in children[todo.pop()]:
        if child not in seen:
          seen.add(child)
          todo.append(child)
    return seen

  reached = {c: reach(c) for c in list(children)}
  cyclic = {c for c, r in reached.items() if c in r}
  return {c for c, r in reached.items() if c in cyclic or r & cyclic}


def _factored(cfg, weights: np.ndarray) -> np.ndarray:
  """`weights` (1 or 0 per production) as `uniform(factored=True)` has
  them: per category, half to each nonempty group, 1/k within it."""
  recursive = recursive_categories(cfg)
  groups = collections.defaultdict(lambda: ([], []))
  for i, p in enumerate(cfg.productions):
    if weights[i] > 0:
      grows = any(not s.terminal and s.name in recursive for s in p.rhs)
      groups[p.lhs][grows].append(i)
  out = np.zeros(len(cfg.productions))
  for stops, grows in groups.values():
    share = 0.5 if stops and grows else 1.0
    for group in (stops, grows):
      out[group] = share / max(len(group), 1)
  return out


def estimate(cfg, outputs: Sequence[str], name: str = "train"
             ) -> Tuple[PCFG, Dict[str, Any]]:
  """Relative frequencies of the productions in the parses of `outputs`
  (whitespace-tokenized; ambiguous ones count 1/N per parse). Returns the
  PCFG and {num_outputs, num_unparsed, unparsed (the first 5),
  num_ambiguous, num_productions_used}."""
  tables = counts_lib.encode(cfg)
  total = np.zeros(len(cfg.productions))
  unparsed, ambiguous = [], 0
  cache: Dict[str, Tuple[float, np.ndarray]] = {}
  for output in outputs:
    if output not in cache:
      cache[output] = counts_lib.expected_counts(tables, output.split())
    z, c = cache[output]
    if z == 0.0:
      unparsed.append(output)
      continue
    ambiguous += z > 1.0
    total += c
  if outputs and len(unparsed) == len(outputs):
    raise InputError(f"none of the {len(outputs)} {name} outputs parses "
                     f"with the grammar, e.g. {unparsed[0]!r}")
  probs = _normalize(cfg, total)
  return PCFG(cfg, probs, name), {
      "num_outputs": len(outputs), "num_unparsed": len(unparsed),
      "unparsed": unparsed[:5], "num_ambiguous": int(ambiguous),
      "num_productions_used": int((probs > 0).sum())}


def _reachable(pcfg: PCFG) -> List[str]:
  """The categories a derivation from the start can reach (through
  productions of positive probability), the start first."""
  children = collections.defaultdict(set)
  for p, w in zip(pcfg.cfg.productions, pcfg.probs, strict=True):
    if w > 0:
      children[p.lhs].update(s.name for s in p.rhs if not s.terminal)
  order, todo = [pcfg.cfg.start], [pcfg.cfg.start]
  seen = {pcfg.cfg.start}
  while todo:
    for c in sorted(children[todo.pop()]):
      if c not in seen:
        seen.add(c)
        order.append(c)
        todo.append(c)
  return order


def criticality(pcfg: PCFG) -> float:
  """Spectral radius of M[A, B] = sum over A's productions of p times the
  number of B on the right-hand side, over the categories the start
  reaches; < 1: finite expected size."""
  index = {c: k for k, c in enumerate(_reachable(pcfg))}
  m = np.zeros((len(index), len(index)))
  for p, w in zip(pcfg.cfg.productions, pcfg.probs, strict=True):
    if w == 0 or p.lhs not in index:
      continue
    for s in p.rhs:
      if not s.terminal:
        m[index[p.lhs], index[s.name]] += w
  return float(np.max(np.abs(np.linalg.eigvals(m)))) if len(m) else 0.0


def log_prob(pcfg: PCFG, output: str) -> float:
  """log p(output) summed over its parses; -inf without a parse."""
  z, _ = counts_lib.expected_counts(pcfg.tables, output.split(), pcfg.probs)
  return math.log(z) if z > 0 else -math.inf


def log_probs(pcfg: PCFG, outputs: Sequence[str]) -> Dict[str, float]:
  """log p(y) of each distinct output (a test set repeats outputs)."""
  return {y: log_prob(pcfg, y) for y in set(outputs)}


def perplexity(pcfg: PCFG, outputs: Sequence[str],
               scored: Optional[Mapping[str, float]] = None) -> float:
  """Per-token perplexity exp(-sum log p(y) / sum |y|) (Y&K Table 6);
  inf when an output has probability 0. `scored`: `log_probs`' of them."""
  scored = log_probs(pcfg, outputs) if scored is None else scored
  total = sum(scored[y] for y in outputs)
  tokens = sum(len(y.split()) for y in outputs)
  return math.exp(-total / max(tokens, 1)) if total > -math.inf else math.inf


class _Sampler:
  """Ancestral sampling; a derivation deeper than `max_depth` is rejected."""

  def __init__(self, pcfg: PCFG, max_depth: Optional[int]):
    self.max_depth = max_depth
    self.options = collections.defaultdict(list)
    for p, w in zip(pcfg.cfg.productions, pcfg.probs, strict=True):
      if w > 0:
        self.options[p.lhs].append((p.rhs, w))
    self.cumulative = {c: np.cumsum([w for _, w in o])
                       for c, o in self.options.items()}
    self.start = pcfg.cfg.start

  def sample(self, rng: np.random.Generator) -> Optional[List[str]]:
    out: List[str] = []
    stack = [(self.start, 0)]  # (symbol or terminal marker, depth)
    while stack:
      symbol, depth = stack.pop()
      if isinstance(symbol, tuple):  # ("t", name): a terminal
        out.append(symbol[1])
        continue
      if self.max_depth is not None and depth >= self.max_depth:
        return None
      cum = self.cumulative[symbol]
      k = min(int(np.searchsorted(cum, rng.random() * cum[-1], "right")),
              len(cum) - 1)
      rhs = self.options[symbol][k][0]
      for s in reversed(rhs):
        stack.append((("t", s.name), depth) if s.terminal
                     else (s.name, depth + 1))
    return out


def sample_unique(pcfg: PCFG, num: int, seed: int = 0,
                  max_consecutive_duplicates: int = 100_000,
                  max_depth: Optional[int] = None,
                  max_attempts: Optional[int] = None
                  ) -> Tuple[List[str], Dict[str, Any]]:
  """Up to `num` distinct outputs, in the order drawn (App. B.2: stop after
  `max_consecutive_duplicates` draws in a row gave nothing new). Returns the
  outputs and {attempts, rejected (over max_depth), stopped_by}: "num",
  "max_attempts", or, for a run of draws that gave nothing new, what most
  of them were, "duplicates" or "rejections" (over max_depth)."""
  if pcfg.cfg.start not in {p.lhs for p, w in zip(pcfg.cfg.productions,
                                                   pcfg.probs, strict=True)
                            if w > 0}:
    raise InputError(f"PCFG {pcfg.name!r}: the start category has no "
                     "production of positive probability")
  if seed < 0:
    raise InputError(f"the sampling seed must be >= 0, got {seed}")
  if max_depth is None:
    rho = criticality(pcfg)
    if rho >= 1.0:  # some draws would never end
      raise InputError(f"PCFG {pcfg.name!r} is not subcritical (criticality "
                       f"{rho:.3f} >= 1: a derivation can grow forever); "
                       f"sample it with a depth bound (max_depth)")
  sampler = _Sampler(pcfg, max_depth)
  rng = np.random.default_rng(seed)
  seen: Dict[str, None] = {}
  attempts = rejected = run = run_rejected = 0
  stopped_by = "num"
  while len(seen) < num:
    if max_attempts is not None and attempts >= max_attempts:
      stopped_by = "max_attempts"
      break
    if run >= max_consecutive_duplicates:
      stopped_by = ("rejections" if 2 * run_rejected > run
                    else "duplicates")
      break
    attempts += 1
    tokens = sampler.sample(rng)
    if tokens is None:
      rejected += 1
      run += 1
      run_rejected += 1
      continue
    text = " ".join(tokens)
    if text in seen:
      run += 1
    else:
      seen[text] = None
      run = run_rejected = 0
  return list(seen), {"attempts": attempts, "rejected": rejected,
                      "rejection_rate": rejected / max(attempts, 1),
                      "stopped_by": stopped_by}


def language(cfg, limit: int = 1_000_000) -> List[str]:
  """Every string of a finite (non-recursive) grammar, sorted; ValueError
  for a recursive one or more than `limit` strings."""
  by_lhs = collections.defaultdict(list)
  for p in cfg.productions:
    by_lhs[p.lhs].append(p.rhs)
  memo: Dict[str, frozenset] = {}
  active = set()

  def strings(category):
    if category in memo:
      return memo[category]
    if category in active:
      raise ValueError(f"recursive category {category!r}: infinite language")
    active.add(category)
    out = set()
    for rhs in by_lhs[category]:
      partial = {()}
      for s in rhs:
        parts = {(s.name,)} if s.terminal else strings(s.name)
        partial = {a + b for a in partial for b in parts}
        if len(partial) > limit:
          raise ValueError(f"more than {limit} strings")
      out |= partial
      if len(out) > limit:
        raise ValueError(f"more than {limit} strings")
    active.discard(category)
    memo[category] = frozenset(out)
    return memo[category]

  return sorted(" ".join(t) for t in strings(cfg.start))
