"""Is a rule (or example) derivable from other rules? Numba CKY with masks.

A rule r is derivable from a grammar G if the pair (r.source, r.target), with
each NT_k turned into a leaf token that the identity rule <leaf_k, leaf_k>
derives, is derivable: then any derivation that uses r can use G instead, so
r can be removed without losing any example.
"""

import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from csl_jax.cky import forest
from csl_jax.cky import qcfg_kernel
from csl_jax.cky.grammar_arrays import encode_qcfg, rule_symbols
from csl_jax.qcfg.rules import Rule, nt_index


def leaf(k: int) -> str:
  return f"\u27e8NT_{k}\u27e9"


def as_pair(rule: Rule) -> Tuple[List[str], List[str]]:
  if not any(map(nt_index, rule.source)):  # examples: most of the queries
    return list(rule.source), list(rule.target)
  swap = lambda t: leaf(nt_index(t)) if nt_index(t) else t
  return [swap(t) for t in rule.source], [swap(t) for t in rule.target]


def _ids(tokens: Sequence[str], vocab: Dict[str, int]) -> np.ndarray:
  try:
    return np.array(list(map(vocab.__getitem__, tokens)), np.int32)
  except KeyError:  # new tokens: ids in order of first use
    return np.array([vocab.setdefault(t, len(vocab)) for t in tokens],
                    np.int32)


class Encoder:
  """Token ids shared by the checkers of one search, and each rule's pair
  (`as_pair`) encoded once with them: a search asks about the same rules
  many times (COGS: a million queries over ~10^5 rules), under grammars
  that keep changing."""

  def __init__(self):
    self.vocab: Tuple[Dict[str, int], Dict[str, int]] = ({}, {})
    self._pairs: Dict[Rule, Tuple[np.ndarray, np.ndarray]] = {}
    self._symbols: Dict[Rule, Tuple[List[int], List[int]]] = {}
    self._symbol_of: Tuple[Dict[str, int], Dict[str, int]] = ({}, {})

  def pair(self, rule: Rule) -> Tuple[np.ndarray, np.ndarray]:
    found = self._pairs.get(rule)
    if found is None:
      x, y = as_pair(rule)
      found = (_ids(x, self.vocab[0]), _ids(y, self.vocab[1]))
      self._pairs[rule] = found
    return found

  def symbols(self, rule: Rule) -> Tuple[List[int], List[int]]:
    """`grammar_arrays.rule_symbols` with these ids, once per rule."""
    found = self._symbols.get(rule)
    if found is None:
      src, tgt = self._symbol_of
      try:
        found = (list(map(src.__getitem__, rule.source)),
                 list(map(tgt.__getitem__, rule.target)))
      except KeyError:  # new tokens: ids in the order rule_symbols gives
        found = rule_symbols(rule, self.vocab)
        src.update(zip(rule.source, found[0], strict=True))
        tgt.update(zip(rule.target, found[1], strict=True))
      self._symbols[rule] = found
    return found


def _concat(seqs) -> Tuple[np.ndarray, np.ndarray]:
  off = np.zeros(len(seqs) + 1, np.int64)
  np.cumsum([len(s) for s in seqs], out=off[1:])
  return np.concatenate(seqs), off


class RuleChecker:
  """Rules encoded once; many derivability queries under rule masks. With
  an `Encoder`, token ids and rule encodings are shared across checkers."""

  def __init__(self, rules: Sequence[Rule], max_nts: int,
               encoder: Optional[Encoder] = None):
    self.rules = list(rules)
    self.index = {r: i for i, r in enumerate(self.rules)}
    leaves = [Rule((leaf(k),), (leaf(k),)) for k in range(1, max_nts + 1)]
    self._num_leaves = max_nts
    self.encoder = encoder
    # The kernels size their scratch by max_nts: the widest rule's count.
    grammar = encode_qcfg(self.rules + leaves, max_nts=1 << 30,
                          vocab=encoder.vocab if encoder else None,
                          symbols=encoder.symbols if encoder else None)
    widest = max(int(grammar.num_nts.max(initial=0)), max_nts, 1)
    self.grammar = dataclasses.replace(grammar, max_nts=widest)
    # The enabled rules as the kernel's rule values (all ones: enabled,
    # 0: not); the leaves always.
    self._every = ~np.uint64(0)
    self._vals = np.zeros(len(self.rules) + len(leaves), np.uint64)
    self._vals[len(self.rules):] = self._every
    self._packed: Dict[Rule, Tuple[np.ndarray, ...]] = {}
    self._grammar_args = forest.grammar_args(self.grammar)
    self._no_extra_off = np.zeros(2, np.int64)
    self._no_extras = np.zeros(0, np.int64)

  def enable(self, rules: Sequence[Rule], on: bool = True) -> None:
    for r in rules:
      self._vals[self.index[r]] = self._every if on else 0

  def derivable(self, pairs: Sequence[Tuple[Sequence[str], Sequence[str]]],
                include: Sequence[int] = (), exclude: Sequence[int] = ()
                ) -> np.ndarray:
    """pairs[b] derivable with the enabled rules + include[b] - exclude[b]
    (rule indices; -1 for none)."""
    return forest.derivable_masked(
        self.grammar, pairs, self._vals,
        include if len(include) else None, exclude if len(exclude) else None)

  def rules_derivable(self, targets: Sequence[Rule],
                      include: Sequence[int] = (),
                      exclude: Sequence[int] = ()) -> np.ndarray:
    if self.encoder is None:
      return self.derivable([as_pair(r) for r in targets], include, exclude)
    if not len(targets):
      return np.zeros(0, np.bool_)
    encoded = [self.encoder.pair(r) for r in targets]
    xs, x_off = _concat([x for x, _ in encoded])
    ys, y_off = _concat([y for _, y in encoded])
    xs, ys = self.grammar.clamp(xs, ys)
    return forest.derivable_masked_packed(
        self.grammar, xs, x_off, ys, y_off, self._vals,
        include if len(include) else None, exclude if len(exclude) else None)

  def rule_derivable(self, rule: Rule, exclude: int = -1) -> bool:
    """`rules_derivable([rule], exclude=[exclude])[0]` without the batch
    overhead: applying a step's actions asks ~10^4 single questions."""
    if self.encoder is None:
      return bool(self.rules_derivable([rule], exclude=[exclude])[0])
    packed = self._packed.get(rule)
    if packed is None:
      x, y = self.encoder.pair(rule)
      # A rule of this grammar whose NTs have leaves here has only tokens
      # the grammar's snapshot knows: nothing to clamp.
      if rule not in self.index or rule.num_nts > self._num_leaves:
        x, y = self.grammar.clamp(x, y)
      packed = self._packed[rule] = (
          x, np.array([0, len(x)], np.int64), y,
          np.array([0, len(y)], np.int64))
    out = np.zeros(1, np.uint64)
    qcfg_kernel.derivable_each(
        0, 1, out, *packed, *self._grammar_args, self._vals, np.bool_(False),
        np.array([exclude], np.int64), self._no_extra_off, self._no_extras)
    return bool(out[0])

  def rules_derivable_each(self, targets: Sequence[Rule],
                           extras: Sequence[Sequence[int]],
                           exclude: Sequence[int]) -> List[np.ndarray]:
    """For each target b, whether it is derivable with the enabled rules
    minus rule exclude[b], plus each rule of extras[b] alone (indices; a
    bool array per target): `rules_derivable(targets, include=[e],
    exclude=...)` for every e, with one chart per target and 64 extras."""
    rows, extra_off, extra_rules, excl = [], [0], [], []
    for b, more in enumerate(extras):
      for lo in range(0, len(more), 64):
        chunk = more[lo:lo + 64]
        rows.append(b)
        extra_rules.extend(chunk)
        extra_off.append(len(extra_rules))
        excl.append(exclude[b])
    out = [np.zeros(len(more), np.bool_) for more in extras]
    if not rows:
      return out
    if self.encoder is not None:
      encoded = [self.encoder.pair(targets[b]) for b in rows]
    else:
      encoded = [(self.grammar.encode_source(x), self.grammar.encode_target(y))
                 for x, y in (as_pair(targets[b]) for b in rows)]
    xs, x_off = _concat([x for x, _ in encoded])
    ys, y_off = _concat([y for _, y in encoded])
    if self.encoder is not None:
      xs, ys = self.grammar.clamp(xs, ys)
    bits = forest.derivable_each_packed(
        self.grammar, xs, x_off, ys, y_off, self._vals, excl, extra_off,
        extra_rules)
    seen = [0] * len(targets)
    for row, b in enumerate(rows):
      k = extra_off[row + 1] - extra_off[row]
      word = int(bits[row])
      out[b][seen[b]:seen[b] + k] = [(word >> i) & 1 for i in range(k)]
      seen[b] += k
    return out

