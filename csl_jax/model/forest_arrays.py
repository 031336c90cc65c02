"""Packed forests as padded, level-blocked arrays for the JAX inside pass.

A node's level is 1 + the highest level of its children (0 if it has only
leaf edges). Nodes and edges of all examples in a batch are renumbered so
that each level is one contiguous block; the inside pass then visits every
edge once, level by level. Each block is padded to a power of two (few jit
variants) and ends with a dummy node that padding edges point to. Children
are stored as a flat list of (edge, child, context) slots per level rather
than an [E, max_nts] grid: most edges have fewer than max_nts children (COGS:
half are leaves), and the inside pass's work is per slot (BENCHMARKS
"Issue 17 → COGS fit").
"""

import dataclasses
from typing import Sequence, Tuple

import jax
import numba
import numpy as np

from csl_jax.cky.forest import ForestBatch
from csl_jax import numba_fixes  # noqa: F401  pylint: disable=unused-import


@dataclasses.dataclass(frozen=True)
class PaddedForests:
  edge_rule: np.ndarray  # [E] int32
  edge_parent: np.ndarray  # [E] int32, index within its level's node block
  slot_edge: np.ndarray  # [M] int32 edge of each child slot, within its block
  slot_child: np.ndarray  # [M] int32 global node id, -1 for padding
  slot_ctx: np.ndarray  # [M] int32 context of the child, -1 for padding
  roots: np.ndarray  # [B] int32 global root node ids (padding: node 0)
  weights: np.ndarray  # [B] float32 example weights (padding: 0)
  # Static: per level (edge start, edge count, node start, node count,
  # slot start, slot count); a level of leaf edges has no slots.
  blocks: Tuple[Tuple[int, int, int, int, int, int], ...]

  @property
  def num_nodes(self) -> int:
    last = self.blocks[-1]
    return last[2] + last[3]


jax.tree_util.register_dataclass(
    PaddedForests,
    data_fields=["edge_rule", "edge_parent", "slot_edge", "slot_child",
                 "slot_ctx", "roots", "weights"],
    meta_fields=["blocks"])


def _bucket(n: int) -> int:
  return 1 << max(int(n - 1).bit_length(), 3)


def _slot_bucket(n: int) -> int:
  return _bucket(n) if n else 0


@numba.njit(cache=True)
def _levels(num_nodes, edge_parent, edge_children):
  """Node levels; edges are grouped by parent, children before parents."""
  level = np.zeros(num_nodes, np.int32)
  for e in range(edge_parent.shape[0]):
    for c in edge_children[e]:
      if c >= 0 and level[c] + 1 > level[edge_parent[e]]:
        level[edge_parent[e]] = level[c] + 1
  return level


class Layout:
  """The forests of `examples` concatenated and sorted into levels, not yet
  padded: `shape()` says the padded sizes they need, `pad` pads them to a
  shape at least that large (so that batches of one dataset can share one
  shape, and so one compiled program)."""

  def __init__(self, batch: ForestBatch, examples: Sequence[int],
               ctx_index: np.ndarray):
    width = ctx_index.shape[1]
    rules, parents, children, roots = [], [], [], []
    base = 0
    for b in examples:
      f = batch[b]
      rules.append(f.edge_rule)
      parents.append(f.edge_parent + base)
      ch = np.asarray(f.edge_children)[:, :width]
      children.append(np.where(ch >= 0, ch + base, -1))
      base += f.nodes.shape[0]
      roots.append(base - 1)
    self.edge_rule = np.concatenate(rules).astype(np.int32) if rules else \
        np.zeros(0, np.int32)
    self.edge_parent = np.concatenate(parents).astype(np.int32) if rules \
        else np.zeros(0, np.int32)
    self.edge_children = (np.concatenate(children) if rules else np.zeros(
        (0, width))).astype(np.int32).reshape(-1, width)
    self.ctx_index = ctx_index
    self.roots = np.array(roots, np.int64)
    self.num_nodes = base
    level = _levels(base, self.edge_parent, self.edge_children)
    num_levels = int(level.max()) + 1 if base else 1
    edge_order = np.argsort(level[self.edge_parent], kind="stable")
    e_sorted = level[self.edge_parent][edge_order]
    self.nodes, self.edges, self.slots = [], [], []
    for h in range(num_levels):
      self.nodes.append(np.flatnonzero(level == h))
      lo, hi = np.searchsorted(e_sorted, [h, h + 1])
      self.edges.append(edge_order[lo:hi])
      # edge-major, children in rule order
      self.slots.append(np.nonzero(self.edge_children[self.edges[-1]] >= 0))

  def shape(self) -> Tuple[Tuple[Tuple[int, int, int], ...], int]:
    """Per level (edges, nodes, slots) padded sizes, and the roots' size."""
    levels = tuple((_bucket(len(e)), _bucket(len(n) + 1),
                    _slot_bucket(len(s[0])))
                   for n, e, s in zip(self.nodes, self.edges, self.slots,
                                      strict=True))
    return levels, _bucket(len(self.roots))

  def pad(self, weights: Sequence[float], shape=None) -> PaddedForests:
    """Level blocks of at least `shape`'s sizes (default: `self.shape()`),
    each padded, its dummy node last; new node ids block by block."""
    levels, b_pad = common_shape([self.shape()] + ([shape] if shape else []))
    new_id = np.zeros(self.num_nodes, np.int64)
    blocks = []
    e0 = n0 = s0 = 0
    for h, (e_pad, n_pad, s_pad) in enumerate(levels):
      if h < len(self.nodes):
        new_id[self.nodes[h]] = n0 + np.arange(len(self.nodes[h]))
      blocks.append((e0, e_pad, n0, n_pad, s0, s_pad))
      e0, n0, s0 = e0 + e_pad, n0 + n_pad, s0 + s_pad
    out_rule = np.zeros(e0, np.int32)
    out_parent = np.zeros(e0, np.int32)
    slot_edge = np.zeros(s0, np.int32)
    slot_child = np.full(s0, -1, np.int32)
    slot_ctx = np.full(s0, -1, np.int32)
    for h, (e0, e_pad, n0, n_pad, s0, _) in enumerate(blocks):
      out_parent[e0:e0 + e_pad] = n_pad - 1  # padding: the block's dummy
      if h >= len(self.nodes):
        continue
      edges = self.edges[h]
      rule = self.edge_rule[edges]
      out_rule[e0:e0 + len(edges)] = rule
      out_parent[e0:e0 + len(edges)] = new_id[self.edge_parent[edges]] - n0
      edge, pos = self.slots[h]
      k = len(edge)
      slot_edge[s0:s0 + k] = edge
      slot_child[s0:s0 + k] = new_id[self.edge_children[edges][edge, pos]]
      slot_ctx[s0:s0 + k] = self.ctx_index[rule[edge], pos]
    out_roots = np.zeros(b_pad, np.int32)
    out_roots[:len(self.roots)] = new_id[self.roots]
    out_weights = np.zeros(b_pad, np.float32)
    out_weights[:len(self.roots)] = weights
    return PaddedForests(out_rule, out_parent, slot_edge, slot_child,
                         slot_ctx, out_roots, out_weights, tuple(blocks))


def common_shape(shapes):
  """The smallest shape at least as large as each of `shapes`."""
  depth = max(len(levels) for levels, _ in shapes)
  levels = tuple(
      tuple(max(lv[h][i] if h < len(lv) else (i < 2) * 8
                for lv, _ in shapes) for i in range(3))
      for h in range(depth))
  return levels, max(b for _, b in shapes)


def pad_forests(batch: ForestBatch, examples: Sequence[int],
                weights: Sequence[float], ctx_index: np.ndarray
                ) -> PaddedForests:
  """Concatenates the forests of `examples` (indices into batch)."""
  return Layout(batch, examples, ctx_index).pad(weights)
