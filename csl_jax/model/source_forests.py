"""Forests of an input alone (all outputs), as pair-style forests so that
the same inside pass gives log p(x) = log sum_y p(x, y).

Unary-source rules make the source chart cyclic (a span wraps itself); the
chains are unrolled to at most `max_unary` applications per span, which
truncates p(x) by terms that shrink geometrically with the chain length.

Node (span v, copy k) of an input whose forest has unary edges has id
v * (max_unary + 1) + k (one copy, k = 0, without); spans are ordered
shortest first, so children come first and the root is last. Copy k holds
the span's other edges over the children's top copies, and for k > 0 its
unary edges over copy k - 1. The batch is built with array operations over
all inputs' charts at once (the charts come from the CKY kernel one input
at a time); `source_forests_reference.py` is the per-input twin.
"""

from typing import Sequence

import numpy as np

from csl_jax.cky import forest as forest_lib


def _charts(grammar, inputs: Sequence[str]):
  """Every input's source chart, concatenated: per input its size n + 1 and
  whether the root span derives; per edge its input, rule, parent and
  children (flat spans i * (n + 1) + j, -1 padded to `max(max_nts, 1)`)."""
  width = max(grammar.max_nts, 1)
  scratch = forest_lib.source_chart_scratch(grammar)
  n1, has_root, rule, parent, child, owner = [], [], [], [], [], []
  for b, x in enumerate(inputs):
    tokens = x.split()
    has, e_rule, e_parent, e_child = forest_lib.source_chart(
        grammar, tokens, scratch)
    n1.append(len(tokens) + 1)
    has_root.append(bool(has[len(tokens)]))
    rule.append(e_rule)
    parent.append(e_parent)
    child.append(e_child[:, :width])
    owner.append(np.full(len(e_rule), b, np.int64))
  cat = lambda xs, empty: np.concatenate(xs) if xs else empty
  return (np.asarray(n1, np.int64), np.asarray(has_root, np.bool_),
          cat(rule, np.zeros(0, np.int64)).astype(np.int64),
          cat(parent, np.zeros(0, np.int64)).astype(np.int64),
          cat(child, np.zeros((0, width), np.int64)).astype(np.int64),
          cat(owner, np.zeros(0, np.int64)))


def source_forest_batch(grammar, inputs: Sequence[str],
                        max_unary: int = 2) -> forest_lib.ForestBatch:
  """The unrolled source forests of `inputs` (an input the grammar does not
  derive gets an empty forest)."""
  n1, has_root, rule, parent, child, owner = _charts(grammar, inputs)
  # Spans as global ids: input b's flat span f is base[b] + f.
  base = np.concatenate([[0], np.cumsum(n1 * n1)])
  g_parent = base[owner] + parent
  g_child = np.where(child >= 0, base[owner][:, None] + child, -1)
  reached = _reached(n1, has_root, base, parent, owner, g_parent, g_child)
  spans, span_owner, node_of = _numbered(reached, n1, base, len(inputs))
  # Edges out of reached spans, grouped by their parent's node, each group
  # in the chart's edge order.
  keep = np.flatnonzero(reached[g_parent])
  keep = keep[np.lexsort((keep, node_of[g_parent[keep]], owner[keep]))]
  kids = g_child[keep]
  unary = np.zeros(max(grammar.num_rules, 1), np.bool_)
  unary[[r for r, x in enumerate(grammar.rules) if x.is_unary_source]] = True
  return _unrolled(spans, span_owner, n1, base, len(inputs), max_unary,
                   owner[keep], rule[keep], unary[rule[keep]],
                   node_of[g_parent[keep]],
                   np.where(kids >= 0, node_of[np.maximum(kids, 0)], -1))


def _span_length(f, n1):
  """j - i of flat span f = i * n1 + j."""
  return f % n1 - f // n1


def _reached(n1, has_root, base, parent, owner, g_parent, g_child):
  """Which (global) spans the roots reach. Children are shorter than their
  parent except along unary edges (a span wraps itself), so one sweep from
  the longest parents down marks everything."""
  reached = np.zeros(base[-1], np.bool_)
  roots = np.flatnonzero(has_root)
  reached[base[roots] + n1[roots] - 1] = True
  p_len = _span_length(parent, n1[owner])
  for span_len in range(int(p_len.max(initial=0)), 0, -1):
    at = np.flatnonzero(p_len == span_len)
    at = at[reached[g_parent[at]]]
    kids = g_child[at].ravel()
    reached[kids[kids >= 0]] = True
  return reached


def _numbered(reached, n1, base, num_inputs):
  """Reached spans ordered per input shortest first, then by flat index:
  (global span ids, their inputs, node id of each global span or -1)."""
  spans = np.flatnonzero(reached)
  span_owner = np.searchsorted(base, spans, side="right") - 1
  local = spans - base[span_owner]
  order = np.lexsort((local, _span_length(local, n1[span_owner]),
                      span_owner))
  spans, span_owner = spans[order], span_owner[order]
  first = np.concatenate([[0], np.cumsum(np.bincount(
      span_owner, minlength=num_inputs))])
  node_of = np.full(base[-1], -1, np.int32)
  node_of[spans] = np.arange(len(spans)) - first[span_owner]
  return spans, span_owner, node_of


def _unrolled(spans, span_owner, n1, base, num_inputs, max_unary, e_owner,
              e_rule, e_unary, e_span, e_child) -> forest_lib.ForestBatch:
  """The batch of forests with max_unary + 1 copies of every span of an
  input that has a unary edge: its other edges in every copy k over the
  children's top copies, its unary edges in copies k >= 1 over copy k - 1."""
  width = e_child.shape[1]
  copies = np.ones(num_inputs, np.int64)
  copies[np.unique(e_owner[e_unary])] = max_unary + 1
  c_edge = copies[e_owner]
  reps = np.where(e_unary, c_edge - 1, c_edge)
  src = np.repeat(np.arange(len(e_rule)), reps)
  start = np.repeat(np.cumsum(reps) - reps, reps)
  k = np.arange(len(src)) - start + e_unary[src]
  order = np.lexsort((src, e_unary[src], k, e_span[src], e_owner[src]))
  src, k = src[order], k[order]
  c = c_edge[src][:, None]
  out_parent = e_span[src] * c[:, 0] + k
  below = np.full((len(src), width), -1, np.int64)
  below[:, 0] = out_parent - 1
  top = np.where(e_child[src] >= 0, e_child[src] * c + c - 1, -1)
  out_child = np.where(e_unary[src][:, None], below, top)
  num_spans = np.bincount(span_owner, minlength=num_inputs)
  node_off = np.concatenate([[0], np.cumsum(num_spans * copies)])
  edge_off = np.concatenate([[0], np.cumsum(np.bincount(
      e_owner[src], minlength=num_inputs))])
  span_rep = np.repeat(spans, copies[span_owner])
  owner_rep = np.repeat(span_owner, copies[span_owner])
  local = span_rep - base[owner_rep]
  nodes = np.zeros((int(node_off[-1]), 4), np.int32)
  nodes[:, 0] = local // n1[owner_rep]
  nodes[:, 1] = local % n1[owner_rep]
  return forest_lib.ForestBatch(node_off, edge_off, nodes,
                                e_rule[src].astype(np.int32),
                                out_parent.astype(np.int32),
                                out_child.astype(np.int32))
