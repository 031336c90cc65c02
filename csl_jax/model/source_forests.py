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

from csl_jax.cky import qcfg_kernel
from csl_jax.cky.forest import ForestBatch


def _charts(grammar, inputs: Sequence[str]):
  """Every input's source chart, concatenated: per input its size n + 1 and
  whether the root span derives; per edge its input, rule, parent and
  children (flat spans i * (n + 1) + j, -1 padded to `max(max_nts, 1)`)."""
  width = max(grammar.max_nts, 1)
  present = np.zeros(max(len(grammar.source_vocab), 1), np.bool_)
  n1, has_root, rule, parent, child, owner = [], [], [], [], [], []
  for b, x in enumerate(inputs):
    tokens = x.split()
    has, e_rule, e_parent, e_child = qcfg_kernel.source_chart(
        grammar.encode_source(tokens), grammar.src_sym, grammar.src_len,
        grammar.max_nts, present)
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
                        max_unary: int = 2) -> ForestBatch:
  """The unrolled source forests of `inputs` (an input the grammar does not
  derive gets an empty forest)."""
  n1, has_root, rule, parent, child, owner = _charts(grammar, inputs)
  num_inputs, width = len(inputs), child.shape[1]
  # Spans as global ids: input b's flat span f is base[b] + f.
  base = np.concatenate([[0], np.cumsum(n1 * n1)])
  g_parent = base[owner] + parent
  g_child = np.where(child >= 0, base[owner][:, None] + child, -1)
  length = lambda f, b: f % n1[b] - f // n1[b]  # f: a flat span of input b
  # What the root reaches: children are shorter than their parent except
  # along unary edges (a span wraps itself), so one sweep from the longest
  # parents down marks everything.
  reached = np.zeros(base[-1], np.bool_)
  roots = np.flatnonzero(has_root)
  reached[base[roots] + n1[roots] - 1] = True
  p_len = length(parent, owner) if len(rule) else np.zeros(0, np.int64)
  for span_len in range(int(p_len.max(initial=0)), 0, -1):
    at = np.flatnonzero(p_len == span_len)
    at = at[reached[g_parent[at]]]
    kids = g_child[at].ravel()
    reached[kids[kids >= 0]] = True
  # Reached spans, per input shortest first then by flat index: their
  # positions are the node ids of the input's source forest.
  spans = np.flatnonzero(reached)
  span_owner = np.searchsorted(base, spans, side="right") - 1
  local = spans - base[span_owner]
  order = np.lexsort((local, length(local, span_owner), span_owner))
  spans, span_owner, local = spans[order], span_owner[order], local[order]
  num_spans = np.bincount(span_owner, minlength=num_inputs)
  first_span = np.concatenate([[0], np.cumsum(num_spans)])
  node_of = np.full(base[-1], -1, np.int32)
  node_of[spans] = np.arange(len(spans)) - first_span[span_owner]
  # Edges out of reached spans, grouped by their parent's node, each group
  # in the chart's edge order.
  keep = np.flatnonzero(reached[g_parent]) if len(rule) else \
      np.zeros(0, np.int64)
  keep = keep[np.lexsort((keep, node_of[g_parent[keep]], owner[keep]))]
  e_owner, e_rule = owner[keep], rule[keep]
  e_span = node_of[g_parent[keep]]
  e_child = np.where(g_child[keep] >= 0, node_of[np.maximum(g_child[keep],
                                                             0)], -1)
  unary = np.zeros(max(grammar.num_rules, 1), np.bool_)
  unary[[r for r, x in enumerate(grammar.rules) if x.is_unary_source]] = True
  e_unary = unary[e_rule]
  # Copies: max_unary + 1 per span where the input has a unary edge.
  copies = np.ones(num_inputs, np.int64)
  copies[np.unique(e_owner[e_unary])] = max_unary + 1
  c_edge = copies[e_owner]
  # Non-unary edges appear in every copy k = 0..c-1, unary ones in k >= 1.
  reps = np.where(e_unary, c_edge - 1, c_edge)
  src = np.repeat(np.arange(len(keep)), reps)
  start = np.repeat(np.cumsum(reps) - reps, reps)
  k = np.arange(len(src)) - start + e_unary[src]
  order = np.lexsort((src, e_unary[src], k, e_span[src], e_owner[src]))
  src, k = src[order], k[order]
  c = c_edge[src]
  out_parent = e_span[src] * c + k
  top = np.where(e_child[src] >= 0, e_child[src] * c[:, None] + c[:, None]
                 - 1, -1)
  below = np.full((len(src), width), -1, np.int64)
  below[:, 0] = out_parent - 1
  out_child = np.where(e_unary[src][:, None], below, top)
  num_nodes = num_spans * copies
  node_off = np.concatenate([[0], np.cumsum(num_nodes)])
  edge_off = np.concatenate([[0], np.cumsum(np.bincount(
      e_owner[src], minlength=num_inputs))])
  nodes = np.zeros((int(node_off[-1]), 4), np.int32)
  span_rep = np.repeat(np.arange(len(spans)), copies[span_owner])
  nodes[:, 0] = local[span_rep] // n1[span_owner[span_rep]]
  nodes[:, 1] = local[span_rep] % n1[span_owner[span_rep]]
  return ForestBatch(node_off, edge_off, nodes,
                     e_rule[src].astype(np.int32),
                     out_parent.astype(np.int32), out_child.astype(np.int32))
