"""Packed forests as padded, level-blocked arrays for the JAX inside pass.

A node's level is 1 + the highest level of its children (0 if it has only
leaf edges). Nodes and edges of all examples in a batch are renumbered so
that each level is one contiguous block; the inside pass then visits every
edge once, level by level. Each block is padded to a power of two (few jit
variants) and ends with a dummy node that padding edges point to.
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
  edge_children: np.ndarray  # [E, K] int32 global node ids, -1 for none
  edge_child_ctx: np.ndarray  # [E, K] int32 context of each child, -1
  roots: np.ndarray  # [B] int32 global root node ids (padding: node 0)
  weights: np.ndarray  # [B] float32 example weights (padding: 0)
  # Static: per level (edge start, edge count, node start, node count).
  blocks: Tuple[Tuple[int, int, int, int], ...]

  @property
  def num_nodes(self) -> int:
    last = self.blocks[-1]
    return last[2] + last[3]


jax.tree_util.register_dataclass(
    PaddedForests,
    data_fields=["edge_rule", "edge_parent", "edge_children",
                 "edge_child_ctx", "roots", "weights"],
    meta_fields=["blocks"])


def _bucket(n: int) -> int:
  return 1 << max(int(n - 1).bit_length(), 3)


@numba.njit(cache=True)
def _levels(num_nodes, edge_parent, edge_children):
  """Node levels; edges are grouped by parent, children before parents."""
  level = np.zeros(num_nodes, np.int32)
  for e in range(edge_parent.shape[0]):
    for c in edge_children[e]:
      if c >= 0 and level[c] + 1 > level[edge_parent[e]]:
        level[edge_parent[e]] = level[c] + 1
  return level


def pad_forests(batch: ForestBatch, examples: Sequence[int],
                weights: Sequence[float], ctx_index: np.ndarray
                ) -> PaddedForests:
  """Concatenates the forests of `examples` (indices into batch)."""
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
  edge_rule = np.concatenate(rules).astype(np.int32) if rules else \
      np.zeros(0, np.int32)
  edge_parent = np.concatenate(parents).astype(np.int32) if rules else \
      np.zeros(0, np.int32)
  edge_children = (np.concatenate(children) if rules else
                   np.zeros((0, width))).astype(np.int32).reshape(-1, width)
  level = _levels(base, edge_parent, edge_children)
  num_levels = int(level.max()) + 1 if base else 1

  # New node ids: level blocks, each padded, dummy last in each block.
  new_id = np.zeros(base, np.int64)
  blocks = []
  edge_order = np.argsort(level[edge_parent], kind="stable")
  e_sorted = level[edge_parent][edge_order]
  e_start = n_start = 0
  parts = []
  for h in range(num_levels):
    nodes_h = np.flatnonzero(level == h)
    n_pad = _bucket(len(nodes_h) + 1)
    new_id[nodes_h] = n_start + np.arange(len(nodes_h))
    lo, hi = np.searchsorted(e_sorted, [h, h + 1])
    edges_h = edge_order[lo:hi]
    e_pad = _bucket(len(edges_h))
    parts.append((edges_h, e_pad, n_start, n_pad))
    blocks.append((e_start, e_pad, n_start, n_pad))
    e_start += e_pad
    n_start += n_pad
  total_e = e_start
  out_rule = np.zeros(total_e, np.int32)
  out_parent = np.zeros(total_e, np.int32)
  out_children = np.full((total_e, width), -1, np.int32)
  out_ctx = np.full((total_e, width), -1, np.int32)
  for (edges_h, e_pad, n0, n_pad), (e0, _, _, _) in zip(parts, blocks):
    k = len(edges_h)
    out_parent[e0:e0 + e_pad] = n_pad - 1  # padding: the block's dummy
    out_rule[e0:e0 + k] = edge_rule[edges_h]
    out_parent[e0:e0 + k] = new_id[edge_parent[edges_h]] - n0
    ch = edge_children[edges_h]
    out_children[e0:e0 + k] = np.where(ch >= 0, new_id[np.maximum(ch, 0)], -1)
    out_ctx[e0:e0 + k] = np.where(ch >= 0, ctx_index[edge_rule[edges_h]], -1)
  b_pad = _bucket(len(examples))
  out_roots = np.zeros(b_pad, np.int32)
  out_roots[:len(roots)] = new_id[np.array(roots, np.int64)]
  out_weights = np.zeros(b_pad, np.float32)
  out_weights[:len(roots)] = weights
  return PaddedForests(out_rule, out_parent, out_children, out_ctx,
                       out_roots, out_weights, tuple(blocks))
