"""Derivability checks and packed parse forests of QCFGs (Numba-backed).

A pair forest is a hypergraph: nodes are (source span, target span) items
(i, j, k, l) meaning NT derives <x[i:j], y[k:l]>; a hyperedge is a rule
application with one child node per source NT, in NT-index order. Nodes are
bottom-up (children before parents; the root, the whole pair, is last).
"""

import dataclasses
import threading
from typing import Iterable, List, Optional, Sequence, Tuple

import numba
import numpy as np

from csl_jax.cky import qcfg_kernel
from csl_jax.cky.grammar_arrays import QCFGArrays
from csl_jax.errors import InputError

DEFAULT_MAX_SOURCE_LEN = 64
DEFAULT_MAX_TARGET_LEN = 256
# Derivability checks of fewer pairs than this per thread stay on one thread:
# starting threads costs more than the work.
_PAIRS_PER_THREAD = 32


@dataclasses.dataclass(frozen=True)
class Forest:
  nodes: np.ndarray  # [N, 4] int32 (i, j, k, l), bottom-up, root last
  edge_rule: np.ndarray  # [E] int32
  edge_parent: np.ndarray  # [E] int32, grouped by parent
  edge_children: np.ndarray  # [E, max_nts] int32, -1 padded

  @property
  def derivable(self) -> bool:
    return self.nodes.shape[0] > 0

  @property
  def root(self) -> int:
    return self.nodes.shape[0] - 1

  def hyperedges(self) -> List[Tuple[int, Tuple[int, ...], Tuple]]:
    """(rule, parent item, child items) triples, for comparisons."""
    item = lambda v: tuple(int(t) for t in self.nodes[v])
    return [(int(r), item(p), tuple(item(c) for c in cs if c >= 0))
            for r, p, cs in zip(self.edge_rule, self.edge_parent,
                                self.edge_children, strict=True)]

  def count_derivations(self) -> int:
    """Number of derivations of the root (exact, Python integers)."""
    if not self.derivable:
      return 0
    count = [0] * self.nodes.shape[0]
    for r, p, cs in zip(self.edge_rule, self.edge_parent,
                        self.edge_children, strict=True):
      prod = 1
      for c in cs:
        if c >= 0:
          prod *= count[c]
      count[p] += prod
    return count[self.root]


@dataclasses.dataclass(frozen=True)
class ForestBatch:
  """Forests of many examples, concatenated (node ids local per example)."""
  node_offsets: np.ndarray  # [B + 1]
  edge_offsets: np.ndarray  # [B + 1]
  nodes: np.ndarray
  edge_rule: np.ndarray
  edge_parent: np.ndarray
  edge_children: np.ndarray

  def __len__(self) -> int:
    return self.node_offsets.shape[0] - 1

  def __getitem__(self, b: int) -> Forest:
    n0, n1 = self.node_offsets[b], self.node_offsets[b + 1]
    e0, e1 = self.edge_offsets[b], self.edge_offsets[b + 1]
    return Forest(self.nodes[n0:n1], self.edge_rule[e0:e1],
                  self.edge_parent[e0:e1], self.edge_children[e0:e1])


def _check_lengths(pairs, max_source_len, max_target_len, skip_too_long,
                   source, lines=None):
  """Returns indices of pairs within the bounds; errors otherwise, naming
  `source` and the pair's line (`lines[i]`, else its 1-based number)."""
  keep = []
  for idx, (x, y) in enumerate(pairs):
    reason = ""
    if len(x) > max_source_len:
      reason = f"input has {len(x)} tokens, more than {max_source_len}"
    elif len(y) > max_target_len:
      reason = f"output has {len(y)} tokens, more than {max_target_len}"
    elif not x or not y:
      reason = "empty input or output"
    if reason:
      if not skip_too_long:
        raise InputError(reason + " (raise the bound or skip such "
                         "examples)", source,
                         lines[idx] if lines is not None else idx + 1)
      continue
    keep.append(idx)
  return keep


def _pack(grammar: QCFGArrays, pairs, keep):
  xs = [grammar.encode_source(pairs[i][0]) for i in keep]
  ys = [grammar.encode_target(pairs[i][1]) for i in keep]

  def cat(seqs):
    off = np.zeros(len(seqs) + 1, np.int64)
    off[1:] = np.cumsum([len(s) for s in seqs])
    flat = np.concatenate(seqs) if seqs else np.zeros(0, np.int32)
    return flat.astype(np.int32), off

  return cat(xs) + cat(ys)


def _tokenize(pairs) -> List[Tuple[Sequence[str], Sequence[str]]]:
  return [(x.split() if isinstance(x, str) else x,
           y.split() if isinstance(y, str) else y) for x, y in pairs]


def grammar_args(g: QCFGArrays):
  """The grammar's arrays as the derivability kernels take them."""
  return (g.src_sym, g.src_len, g.tgt_sym, g.tgt_len, g.tgt_first, g.num_nts,
          g.max_nts, len(g.source_vocab), len(g.target_vocab), g.anchor_off,
          g.anchor_rules, g.free_rules)


@dataclasses.dataclass
class BatchResult:
  """Which pairs were processed (`kept`, indices into the input) and the
  number skipped for exceeding the length bounds."""
  kept: List[int]
  num_skipped: int


def derivable(grammar: QCFGArrays, pairs: Iterable,
              max_source_len: int = DEFAULT_MAX_SOURCE_LEN,
              max_target_len: int = DEFAULT_MAX_TARGET_LEN,
              skip_too_long: bool = False,
              source: Optional[str] = None,
              lines: Optional[Sequence[int]] = None) -> np.ndarray:
  """Whether each (input, output) pair (strings or token lists) is derivable.

  Pairs over the length bounds raise InputError naming `source` and the
  pair's line in it (`lines`, e.g. `tsv.ReadStats.lines`; else the 1-based
  example number), or with `skip_too_long` count as not derivable.
  """
  pairs = _tokenize(pairs)
  keep = _check_lengths(pairs, max_source_len, max_target_len, skip_too_long,
                        source, lines)
  out = np.zeros(len(pairs), np.bool_)
  if keep:
    out[keep] = derivable_masked(grammar, [pairs[i] for i in keep],
                                 np.ones(grammar.num_rules, np.bool_))
  return out


def derivable_masked(grammar: QCFGArrays, pairs, enabled: np.ndarray,
                     include=None, exclude=None) -> np.ndarray:
  """Derivability of token-list pairs with the rules in `enabled`, plus rule
  include[b] and minus rule exclude[b] for pair b (-1: none); no length
  checks. Large batches run on numba's number of threads."""
  if not len(pairs):
    return np.zeros(0, np.bool_)
  return derivable_masked_packed(grammar, *_pack(grammar, pairs,
                                                 range(len(pairs))),
                                 enabled, include, exclude)


def derivable_masked_packed(grammar: QCFGArrays, xs, x_off, ys, y_off,
                            enabled: np.ndarray, include=None,
                            exclude=None) -> np.ndarray:
  """`derivable_masked` of pairs already encoded and concatenated
  (token ids of `grammar`'s vocabulary, int32; offsets, int64)."""
  size = x_off.shape[0] - 1
  none = np.full(size, -1, np.int64)
  include = none if include is None else np.asarray(include, np.int64)
  exclude = none if exclude is None else np.asarray(exclude, np.int64)
  # Rule include[b] as pair b's one extra (bit 0); no extra: bit 0 says
  # derivable with `enabled` alone.
  extra_off = np.zeros(size + 1, np.int64)
  np.cumsum(include >= 0, out=extra_off[1:])
  bits = derivable_each_packed(grammar, xs, x_off, ys, y_off, enabled,
                               exclude, extra_off, include[include >= 0])
  return (bits & np.uint64(1)).astype(np.bool_)


def derivable_each_packed(grammar: QCFGArrays, xs, x_off, ys, y_off,
                          enabled: np.ndarray, exclude, extra_off,
                          extra_rules) -> np.ndarray:
  """For pair b (packed as in `derivable_masked_packed`), a uint64 whose bit
  k says: derivable with the rules in `enabled`, minus rule exclude[b] (-1:
  none), plus rule extra_rules[extra_off[b] + k]; at most 64 extras a pair.
  The same answers as one `derivable_masked` query per extra, from one
  chart per pair. `enabled`: bools, or `rule_values` of them."""
  size = x_off.shape[0] - 1
  extra_off = np.asarray(extra_off, np.int64)
  if size and np.diff(extra_off).max() > 64:
    raise ValueError("at most 64 extra rules per pair")
  out = np.zeros(size, np.uint64)
  _on_threads(qcfg_kernel.derivable_each, size, (
      out, xs, x_off, ys, y_off, *grammar_args(grammar),
      rule_values(enabled), np.bool_(_num_threads(size) > 1),
      np.asarray(exclude, np.int64),
      extra_off, np.asarray(extra_rules, np.int64)))
  return out


def rule_values(enabled: np.ndarray) -> np.ndarray:
  """The derivability kernel's rule values: all ones for an enabled rule,
  0 for the others (already uint64: as they are)."""
  enabled = np.asarray(enabled)
  if enabled.dtype == np.uint64:
    return enabled
  return np.where(enabled, ~np.uint64(0), np.uint64(0))


def _num_threads(size: int) -> int:
  return min(numba.get_num_threads(), size // _PAIRS_PER_THREAD)


def _on_threads(kernel, size: int, args) -> None:
  """kernel(lo, hi, *args) over [0, size): large batches in small slices on
  numba's number of threads (the kernels release the GIL)."""
  if not size:
    return
  threads = _num_threads(size)
  if threads <= 1:
    kernel(0, size, *args)
    return
  # Small slices, taken in turn: pairs differ a lot in cost.
  step = max(1, size // (8 * threads))
  slices = iter([(lo, min(lo + step, size)) for lo in range(0, size, step)])
  errors = []

  def work():
    try:
      for lo, hi in slices:  # a list iterator is safe to share by threads
        kernel(lo, hi, *args)
    except BaseException as e:  # pylint: disable=broad-except
      errors.append(e)

  pool = [threading.Thread(target=work) for _ in range(threads)]
  for thread in pool:
    thread.start()
  for thread in pool:
    thread.join()
  if errors:
    raise errors[0]


def build_forests(grammar: QCFGArrays, pairs: Iterable,
                  max_source_len: int = DEFAULT_MAX_SOURCE_LEN,
                  max_target_len: int = DEFAULT_MAX_TARGET_LEN,
                  skip_too_long: bool = False,
                  source: Optional[str] = None
                  ) -> Tuple[ForestBatch, BatchResult]:
  """Packed forests of all derivations of each pair (empty if none)."""
  pairs = _tokenize(pairs)
  keep = _check_lengths(pairs, max_source_len, max_target_len, skip_too_long,
                        source)
  xs, x_off, ys, y_off = _pack(grammar, pairs, keep)
  batch = ForestBatch(*qcfg_kernel.forest_batch(xs, x_off, ys, y_off,
                                                *grammar_args(grammar)))
  return batch, BatchResult(keep, len(pairs) - len(keep))


def build_forest(grammar: QCFGArrays, x, y) -> Forest:
  batch, _ = build_forests(grammar, [(x, y)], max_source_len=10**9,
                           max_target_len=10**9)
  return batch[0]


@dataclasses.dataclass(frozen=True)
class SourceForest:
  """Derivations of an input alone: nodes are source spans (i, j)."""
  num_tokens: int
  spans: np.ndarray  # [N, 2] spans NT derives, shortest first
  edge_rule: np.ndarray  # [E]
  edge_parent: np.ndarray  # [E] node ids
  edge_children: np.ndarray  # [E, max_nts] node ids, -1 padded

  @property
  def parses(self) -> bool:
    n = self.num_tokens
    return any(int(i) == 0 and int(j) == n for i, j in self.spans)

  def hyperedges(self):
    span = lambda v: tuple(int(t) for t in self.spans[v])
    return [(int(r), span(p), tuple(span(c) for c in cs if c >= 0))
            for r, p, cs in zip(self.edge_rule, self.edge_parent,
                                self.edge_children, strict=True)]


def source_chart_scratch(grammar: QCFGArrays) -> np.ndarray:
  """The kernel's per-call scratch (source tokens present), reusable across
  calls: the kernel clears what it set."""
  return np.zeros(max(len(grammar.source_vocab), 1), np.bool_)


NO_EDGE_LIMIT = np.iinfo(np.int64).max - 1


def source_chart(grammar: QCFGArrays, tokens, scratch: np.ndarray,
                 max_edges: int = NO_EDGE_LIMIT):
  """`qcfg_kernel.source_chart` of one input's tokens: (derivable flat
  spans, edge rules, parent spans, child spans); None when the chart has
  more than `max_edges` edges (built no further)."""
  has, e_rule, e_parent, e_child = qcfg_kernel.source_chart(
      grammar.encode_source(tokens), grammar.src_sym, grammar.src_len,
      grammar.max_nts, scratch, np.int64(max_edges))
  if len(e_rule) > max_edges:
    return None
  return has, e_rule, e_parent, e_child


def parse_source(grammar: QCFGArrays, x,
                 max_source_len: int = DEFAULT_MAX_SOURCE_LEN,
                 source: Optional[str] = None, line: Optional[int] = None
                 ) -> SourceForest:
  """Source-side chart of one input, pruned to what the root can reach."""
  tokens = x.split() if isinstance(x, str) else list(x)
  if not tokens:
    raise InputError("empty input", source, line)
  if len(tokens) > max_source_len:
    raise InputError(f"input has {len(tokens)} tokens, more than "
                     f"{max_source_len}", source, line)
  n1 = len(tokens) + 1
  has, e_rule, e_parent, e_child = source_chart(
      grammar, tokens, source_chart_scratch(grammar))
  root = len(tokens)  # flat index of span (0, n)
  if not has[root]:
    width = max(grammar.max_nts, 1)
    return SourceForest(len(tokens), np.zeros((0, 2), np.int32),
                        np.zeros(0, np.int32), np.zeros(0, np.int32),
                        np.zeros((0, width), np.int32))
  by_parent = {}
  for e, p in enumerate(e_parent):
    by_parent.setdefault(int(p), []).append(e)
  reached, stack = {root}, [root]
  while stack:
    for e in by_parent.get(stack.pop(), ()):
      for c in e_child[e]:
        if c >= 0 and int(c) not in reached:
          reached.add(int(c))
          stack.append(int(c))
  order = sorted(reached, key=lambda f: (f % n1 - f // n1, f))
  node_of = {f: v for v, f in enumerate(order)}
  spans = np.array([(f // n1, f % n1) for f in order], np.int32)
  edges = [e for f in order for e in by_parent.get(f, ())]
  child = np.array([[node_of[int(c)] if c >= 0 else -1 for c in e_child[e]]
                    for e in edges], np.int32).reshape(len(edges), -1)
  return SourceForest(len(tokens), spans,
                      np.asarray(e_rule[edges], np.int32),
                      np.array([node_of[int(e_parent[e])] for e in edges],
                               np.int32), child)
