"""Numba CKY kernels for QCFGs over the single nonterminal NT.

A pair chart item is (i, j, k, l): NT derives <x[i:j], y[k:l]>, stored in a
flat boolean array at ((i * n1 + j) * m1 + k) * m1 + l with n1 = n + 1 and
m1 = m + 1. Source spans are built shortest first; a rule with two or more
source symbols has strictly shorter children. Rules whose source is a lone NT
("unary source") keep the source span and grow the target, so within a span
they are closed under a fixpoint before their hyperedges are recorded.

The chart holds a value per item, the OR over its derivations of the AND of
their rules' values (`rule_val`), uint64 bit sets: up to 64 "derivable with
rule a added?" queries in one pass (every other rule all ones, rule a only
bit a; `derivable_each`); all ones for "derivable" (`forest_batch`).

The pure-Python twin is `qcfg_reference.py`; tests cross-check the two.
"""

import numba
import numpy as np

from csl_jax import numba_fixes  # noqa: F401  pylint: disable=unused-import
from csl_jax.sort_kernel import lower_bound, stable_argsort

_BIG = np.int64(1) << 40


@numba.njit(cache=True)
def _append_edge(e_rule, e_parent, e_child, ne, rule, parent, children, nnt):
  if ne == e_rule.shape[0]:
    cap = 2 * ne
    r2 = np.empty(cap, np.int32)
    r2[:ne] = e_rule
    p2 = np.empty(cap, np.int64)
    p2[:ne] = e_parent
    c2 = np.full((cap, e_child.shape[1]), -1, np.int64)
    c2[:ne] = e_child
    e_rule, e_parent, e_child = r2, p2, c2
  e_rule[ne] = rule
  e_parent[ne] = parent
  for a in range(nnt):
    e_child[ne, a] = children[a]
  for a in range(nnt, e_child.shape[1]):
    e_child[ne, a] = -1
  return e_rule, e_parent, e_child, ne + 1


@numba.njit(cache=True)
def _select_rules(x, y, src_sym, src_len, tgt_sym, tgt_len, present_src,
                  present_tgt, enabled, anchor_off, anchor_rules, free_rules):
  """Enabled rules whose terminals all occur in x / y, split into
  (non-unary, unary-source). Only rules anchored on a token of x (or with
  no source terminal) are looked at. present_* are zeroed workspaces."""
  n, m = x.shape[0], y.shape[0]
  for t in y:
    if t >= 0:
      present_tgt[t] = 1
  count = free_rules.shape[0]
  for t in x:
    if t >= 0 and present_src[t] == 0:
      present_src[t] = 1
      count += anchor_off[t + 1] - anchor_off[t]
  binary = np.empty(count, np.int32)
  unary = np.empty(count, np.int32)
  nb = 0
  nu = 0
  for c in range(free_rules.shape[0] + x.shape[0]):
    if c < free_rules.shape[0]:
      lo = c
      hi = c + 1
      rules = free_rules
    else:
      t = x[c - free_rules.shape[0]]
      if t < 0 or present_src[t] == 2:
        continue
      present_src[t] = 2  # each distinct token once
      lo = anchor_off[t]
      hi = anchor_off[t + 1]
      rules = anchor_rules
    for k in range(lo, hi):
      r = rules[k]
      if not (enabled[r] != 0 and src_len[r] <= n and tgt_len[r] <= m):
        continue
      if not _terminals_present(r, src_sym, src_len, tgt_sym, tgt_len,
                                present_src, present_tgt):
        continue
      if src_len[r] == 1 and src_sym[r, 0] < 0:
        unary[nu] = r
        nu += 1
      else:
        binary[nb] = r
        nb += 1
  for t in x:
    if t >= 0:
      present_src[t] = 0
  for t in y:
    if t >= 0:
      present_tgt[t] = 0
  return binary[:nb], unary[:nu]


@numba.njit(cache=True)
def _terminals_present(r, src_sym, src_len, tgt_sym, tgt_len, present_src,
                       present_tgt):
  for s in range(src_len[r]):
    sym = src_sym[r, s]
    if sym >= 0 and present_src[sym] == 0:
      return False
  for s in range(tgt_len[r]):
    sym = tgt_sym[r, s]
    if sym >= 0 and present_tgt[sym] == 0:
      return False
  return True


@numba.njit(cache=True)
def _match_target(r, i, j, cs, y, chart, rule_val, src_has, n1, m1, tgt_sym,
                  tgt_len, tgt_first, nnt, record, e_rule, e_parent, e_child,
                  ne, pos, nxt, ct, children):
  """Adds every item (i, j, k, l) that rule r derives from children whose
  source spans are cs; records hyperedges if `record`. Returns the edge
  arrays, the edge count and the number of items whose value grew."""
  m = y.shape[0]
  length = tgt_len[r]
  value = rule_val[r]
  new_items = 0
  first = tgt_sym[r, 0]
  for k in range(m - length + 1):
    if first >= 0 and y[k] != first:
      continue
    pos[0] = k
    t = 0
    entering = True
    while t >= 0:
      if t == length:
        l = pos[length]
        flat = ((i * n1 + j) * m1 + k) * m1 + l
        val = value
        for a in range(nnt):
          children[a] = ((cs[a, 0] * n1 + cs[a, 1]) * m1
                         + ct[a, 0]) * m1 + ct[a, 1]
          val &= chart[children[a]]
        grown = chart[flat] | val
        if grown != chart[flat]:
          chart[flat] = grown
          src_has[i * n1 + j] = True
          new_items += 1
        if record:
          e_rule, e_parent, e_child, ne = _append_edge(
              e_rule, e_parent, e_child, ne, r, flat, children, np.int64(nnt))
        t -= 1
        entering = False
        continue
      p = pos[t]
      sym = tgt_sym[r, t]
      limit = m - (length - t - 1)
      if entering:
        if sym >= 0:
          nxt[t] = p + 1 if (p < m and y[p] == sym) else _BIG
        elif tgt_first[r, t]:
          nxt[t] = p + 1
        else:  # a repeated NT must derive the same string again
          a = -sym - 1
          size = ct[a, 1] - ct[a, 0]
          q = p + size
          same = q <= m
          if same:
            for d in range(size):
              if y[p + d] != y[ct[a, 0] + d]:
                same = False
                break
          nxt[t] = q if same else _BIG
      e = nxt[t]
      if sym < 0 and tgt_first[r, t]:
        a = -sym - 1
        base = ((cs[a, 0] * n1 + cs[a, 1]) * m1 + p) * m1
        while e <= limit and not chart[base + e]:
          e += 1
        if e > limit:
          t -= 1
          entering = False
          continue
        nxt[t] = e + 1
        ct[a, 0] = p
        ct[a, 1] = e
      else:
        if e > limit:
          t -= 1
          entering = False
          continue
        nxt[t] = _BIG
      pos[t + 1] = e
      t += 1
      entering = True
  return e_rule, e_parent, e_child, ne, new_items


@numba.njit(cache=True)
def _match_source(r, i, j, x, src_has, n1, src_sym, src_len, starts, nxt, cs,
                  out_spans):
  """All ways rule r's source side spans x[i:j]; child spans go to
  out_spans[count, a, :]. Returns the count (out_spans grows if needed)."""
  length = src_len[r]
  if length > j - i:
    return 0, out_spans
  first = src_sym[r, 0]
  last = src_sym[r, length - 1]
  if first >= 0 and x[i] != first:
    return 0, out_spans
  if last >= 0 and x[j - 1] != last:
    return 0, out_spans
  count = 0
  starts[0] = i
  t = 0
  entering = True
  while t >= 0:
    if t == length:
      if starts[length] == j:
        if count == out_spans.shape[0]:
          grown = np.empty((2 * count, out_spans.shape[1], 2), np.int64)
          grown[:count] = out_spans
          out_spans = grown
        out_spans[count] = cs
        count += 1
      t -= 1
      entering = False
      continue
    p = starts[t]
    sym = src_sym[r, t]
    limit = j - (length - t - 1)
    if entering:
      if sym >= 0:
        nxt[t] = p + 1 if (p < j and x[p] == sym) else _BIG
      else:
        nxt[t] = j if t == length - 1 else p + 1
    e = nxt[t]
    if sym < 0:
      while e <= limit and not src_has[p * n1 + e]:
        e += 1
      if e > limit:
        t -= 1
        entering = False
        continue
      nxt[t] = e + 1
      cs[-sym - 1, 0] = p
      cs[-sym - 1, 1] = e
    else:
      if e > limit:
        t -= 1
        entering = False
        continue
      nxt[t] = _BIG
    starts[t + 1] = e
    t += 1
    entering = True
  return count, out_spans


@numba.njit(cache=True)
def pair_chart(x, y, src_sym, src_len, tgt_sym, tgt_len, tgt_first, num_nts,
               max_nts, present_src, present_tgt, record, rule_val,
               anchor_off, anchor_rules, free_rules):
  """Fills the pair chart of (x, y) using the rules with rule_val[r] != 0
  (the chart has rule_val's dtype). Returns (chart, src_has, edge_rule,
  edge_parent, edge_children, num_edges); edges only if `record`."""
  n, m = x.shape[0], y.shape[0]
  n1, m1 = n + 1, m + 1
  chart = np.zeros(n1 * n1 * m1 * m1, rule_val.dtype)
  src_has = np.zeros(n1 * n1, np.bool_)
  binary, unary = _select_rules(x, y, src_sym, src_len, tgt_sym, tgt_len,
                                present_src, present_tgt, rule_val,
                                anchor_off, anchor_rules, free_rules)
  cap = 64
  e_rule = np.empty(cap, np.int32)
  e_parent = np.empty(cap, np.int64)
  e_child = np.full((cap, max(max_nts, 1)), -1, np.int64)
  ne = np.int64(0)  # not the literal 0: one compiled callee per type
  width = max(src_sym.shape[1], tgt_sym.shape[1]) + 1
  starts = np.empty(width, np.int64)
  snxt = np.empty(width, np.int64)
  pos = np.empty(width, np.int64)
  tnxt = np.empty(width, np.int64)
  cs = np.zeros((max(max_nts, 1), 2), np.int64)
  ct = np.zeros((max(max_nts, 1), 2), np.int64)
  children = np.empty(max(max_nts, 1), np.int64)
  spans = np.empty((16, max(max_nts, 1), 2), np.int64)
  # Typed values, not literals: numba compiles a callee once per literal
  # value it is passed (cold compile time, BENCHMARKS.md issue 10).
  one, no, yes = np.int32(1), np.bool_(False), np.bool_(True)
  for span in range(1, n + 1):
    for i in range(n - span + 1):
      j = i + span
      for r in binary:
        # Length and end terminals checked here, written out: most (span,
        # rule) pairs fail them, and a call (even to an inlined helper)
        # costs more than the check (BENCHMARKS.md "Issue 17 → Induction
        # ≥ 10× the reference on the three SCAN splits").
        length = src_len[r]
        first = src_sym[r, 0]
        last = src_sym[r, length - 1]
        if (length > span or (first >= 0 and x[i] != first)
            or (last >= 0 and x[j - 1] != last)):
          continue
        count, spans = _match_source(r, i, j, x, src_has, n1, src_sym,
                                     src_len, starts, snxt, cs, spans)
        for c in range(count):
          e_rule, e_parent, e_child, ne, _ = _match_target(
              r, i, j, spans[c], y, chart, rule_val, src_has, n1, m1, tgt_sym,
              tgt_len, tgt_first, num_nts[r], record, e_rule, e_parent,
              e_child, ne, pos, tnxt, ct, children)
      if unary.shape[0] == 0 or not src_has[i * n1 + j]:
        continue
      cs[0, 0] = i
      cs[0, 1] = j
      added = 1
      while added > 0:  # closure: until no item's value grows
        added = 0
        for r in unary:
          e_rule, e_parent, e_child, ne, new = _match_target(
              r, i, j, cs, y, chart, rule_val, src_has, n1, m1, tgt_sym, tgt_len,
              tgt_first, one, no, e_rule, e_parent, e_child, ne, pos, tnxt,
              ct, children)
          added += new
      if record:
        for r in unary:
          e_rule, e_parent, e_child, ne, _ = _match_target(
              r, i, j, cs, y, chart, rule_val, src_has, n1, m1, tgt_sym, tgt_len,
              tgt_first, one, yes, e_rule, e_parent, e_child, ne, pos, tnxt,
              ct, children)
  return chart, src_has, e_rule, e_parent, e_child, ne


@numba.njit(cache=True)
def prune_pair_forest(n, m, chart, e_rule, e_parent, e_child, ne):
  """Keeps the items reachable from the root (0, n, 0, m).

  Returns (nodes [N, 4] as (i, j, k, l), edge_rule [E], edge_parent [E],
  edge_children [E, max_nts]) with nodes in bottom-up order (by source
  width, then target width, then item; the root is last) and edges grouped
  by parent node, each group in recording order; all empty if no
  derivation. Items are looked up among the edges' distinct parents: an
  item with a value has an edge when `pair_chart` records.
  """
  n1, m1 = n + 1, m + 1
  width = e_child.shape[1]
  root = ((0 * n1 + n) * m1 + 0) * m1 + m
  if not chart[root]:
    return (np.empty((0, 4), np.int32), np.empty(0, np.int32),
            np.empty(0, np.int32), np.empty((0, width), np.int32))
  order = stable_argsort(e_parent[:ne])
  # Distinct parent items, ascending; item u's edges are
  # order[first[u]:first[u + 1]].
  items = np.empty(ne, np.int64)
  first = np.empty(ne + 1, np.int64)
  count = 0
  for s in range(ne):
    p = e_parent[order[s]]
    if count == 0 or p != items[count - 1]:
      items[count] = p
      first[count] = s
      count += 1
  first[count] = ne
  items = items[:count]
  reached = np.zeros(count, np.bool_)
  stack = np.empty(count, np.int64)  # each item pushed once
  u = lower_bound(items, root)
  reached[u] = True
  stack[0] = u
  top = 1
  num_nodes = 1
  while top > 0:
    top -= 1
    u = stack[top]
    for s in range(first[u], first[u + 1]):
      e = order[s]
      for a in range(width):
        c = e_child[e, a]
        if c >= 0:
          v = lower_bound(items, c)
          if items[v] != c:
            raise ValueError("a chart item without a recorded edge")
          if not reached[v]:
            reached[v] = True
            stack[top] = v
            top += 1
            num_nodes += 1
  size = n1 * n1 * m1 * m1
  kept = np.empty(num_nodes, np.int64)
  keys = np.empty(num_nodes, np.int64)
  q = 0
  for u in range(count):
    if reached[u]:
      item = items[u]
      l = item % m1
      k = (item // m1) % m1
      j = (item // (m1 * m1)) % n1
      i = item // (m1 * m1 * n1)
      kept[q] = u
      keys[q] = ((j - i) * m1 + (l - k)) * size + item
      q += 1
  node_order = stable_argsort(keys)
  node_of = np.empty(count, np.int32)
  nodes = np.empty((num_nodes, 4), np.int32)
  num_edges = 0
  for node in range(num_nodes):
    u = kept[node_order[node]]
    item = items[u]
    node_of[u] = node
    nodes[node, 0] = item // (m1 * m1 * n1)
    nodes[node, 1] = (item // (m1 * m1)) % n1
    nodes[node, 2] = (item // m1) % m1
    nodes[node, 3] = item % m1
    num_edges += first[u + 1] - first[u]
  out_rule = np.empty(num_edges, np.int32)
  out_parent = np.empty(num_edges, np.int32)
  out_child = np.full((num_edges, width), -1, np.int32)
  out = 0
  for node in range(num_nodes):
    u = kept[node_order[node]]
    for s in range(first[u], first[u + 1]):
      e = order[s]
      out_rule[out] = e_rule[e]
      out_parent[out] = node
      for a in range(width):
        c = e_child[e, a]
        if c >= 0:
          out_child[out, a] = node_of[lower_bound(items, c)]
      out += 1
  return nodes, out_rule, out_parent, out_child


@numba.njit(cache=True, nogil=True)
def derivable_each(lo, hi, out, xs, x_off, ys, y_off, src_sym, src_len,
                   tgt_sym, tgt_len, tgt_first, num_nts, max_nts,
                   num_src_vocab, num_tgt_vocab, anchor_off, anchor_rules,
                   free_rules, rule_vals, shared, exclude, extra_off,
                   extra_rules):
  """out[b] for b in [lo, hi), a uint64: bit k set iff pair b is derivable
  using the rules whose rule_vals are all ones (the others 0), minus rule
  exclude[b] (-1: none), plus rule extra_rules[extra_off[b] + k] (at most
  64 extras per pair); with no extras every bit says "derivable minus
  exclude[b]". One chart answers what would take one chart per extra.

  rule_vals is changed for each pair and restored; `shared`: work on a
  copy instead (the caller runs slices of a large batch on threads; the
  kernel releases the GIL). The only derivability kernel, calling
  `pair_chart` directly: numba re-optimizes a kernel's whole call tree once
  per level of it, and compiles `pair_chart` once per value type
  (BENCHMARKS.md "Issue 17 → The first run within 2×")."""
  present_src = np.zeros(max(num_src_vocab, 1), np.int8)
  present_tgt = np.zeros(max(num_tgt_vocab, 1), np.int8)
  vals = rule_vals.copy() if shared else rule_vals
  saved = np.empty(65, np.uint64)
  for b in range(lo, hi):
    k0, k1 = extra_off[b], extra_off[b + 1]
    for k in range(k0, k1):
      saved[k - k0] = vals[extra_rules[k]]
      vals[extra_rules[k]] |= np.uint64(1) << np.uint64(k - k0)
    if exclude[b] >= 0:
      saved[k1 - k0] = vals[exclude[b]]
      vals[exclude[b]] = np.uint64(0)
    x = xs[x_off[b]:x_off[b + 1]]
    y = ys[y_off[b]:y_off[b + 1]]
    n, m = x.shape[0], y.shape[0]
    chart, _, _, _, _, _ = pair_chart(
        x, y, src_sym, src_len, tgt_sym, tgt_len, tgt_first, num_nts,
        max_nts, present_src, present_tgt, np.bool_(False), vals,
        anchor_off, anchor_rules, free_rules)
    out[b] = chart[((0 * (n + 1) + n) * (m + 1) + 0) * (m + 1) + m]
    # Restored in reverse order: right when a rule is changed twice.
    if exclude[b] >= 0:
      vals[exclude[b]] = saved[k1 - k0]
    for k in range(k1 - 1, k0 - 1, -1):
      vals[extra_rules[k]] = saved[k - k0]


@numba.njit(cache=True)
def forest_batch(xs, x_off, ys, y_off, src_sym, src_len, tgt_sym, tgt_len,
                 tgt_first, num_nts, max_nts, num_src_vocab, num_tgt_vocab,
                 anchor_off, anchor_rules, free_rules):
  """Pruned forests of a batch, concatenated: per-example node and edge
  offsets, nodes [N, 4], edge_rule, edge_parent, edge_children (node ids
  local to their example)."""
  batch = x_off.shape[0] - 1
  present_src = np.zeros(max(num_src_vocab, 1), np.int8)
  present_tgt = np.zeros(max(num_tgt_vocab, 1), np.int8)
  node_off = np.zeros(batch + 1, np.int64)
  edge_off = np.zeros(batch + 1, np.int64)
  width = max(max_nts, 1)
  all_nodes = np.empty((1024, 4), np.int32)
  all_rule = np.empty(1024, np.int32)
  all_parent = np.empty(1024, np.int32)
  all_child = np.empty((1024, width), np.int32)
  # Every rule, as uint64 like the derivability queries: one compiled
  # pair_chart for both.
  every = np.full(src_len.shape[0], ~np.uint64(0), np.uint64)
  for b in range(batch):
    x = xs[x_off[b]:x_off[b + 1]]
    y = ys[y_off[b]:y_off[b + 1]]
    chart, _, e_rule, e_parent, e_child, ne = pair_chart(
        x, y, src_sym, src_len, tgt_sym, tgt_len, tgt_first, num_nts,
        max_nts, present_src, present_tgt, np.bool_(True), every,
        anchor_off, anchor_rules, free_rules)
    nodes, rule, parent, child = prune_pair_forest(
        x.shape[0], y.shape[0], chart, e_rule, e_parent, e_child, ne)
    n0 = node_off[b]
    e0 = edge_off[b]
    n_need = n0 + nodes.shape[0]
    e_need = e0 + rule.shape[0]
    if n_need > all_nodes.shape[0]:
      grown = np.empty((max(2 * all_nodes.shape[0], n_need), 4), np.int32)
      grown[:n0] = all_nodes[:n0]
      all_nodes = grown
    if e_need > all_rule.shape[0]:
      cap = max(2 * all_rule.shape[0], e_need)
      g1 = np.empty(cap, np.int32)
      g1[:e0] = all_rule[:e0]
      g2 = np.empty(cap, np.int32)
      g2[:e0] = all_parent[:e0]
      g3 = np.empty((cap, width), np.int32)
      g3[:e0] = all_child[:e0]
      all_rule, all_parent, all_child = g1, g2, g3
    all_nodes[n0:n_need] = nodes
    all_rule[e0:e_need] = rule
    all_parent[e0:e_need] = parent
    all_child[e0:e_need] = child
    node_off[b + 1] = n_need
    edge_off[b + 1] = e_need
  return (node_off, edge_off, all_nodes[:node_off[batch]],
          all_rule[:edge_off[batch]], all_parent[:edge_off[batch]],
          all_child[:edge_off[batch]])


@numba.njit(cache=True)
def source_chart(x, src_sym, src_len, max_nts, present_src, max_edges):
  """Source-side chart of x alone: all spans NT derives and the hyperedges
  (rule, parent span, child spans), spans flattened as i * (n + 1) + j.
  Unary-source rules give self-loop edges (a cyclic forest).

  Stops at more than `max_edges` edges, returning max_edges + 1 of them
  (a long input's chart grows as n^3: 4,999 tokens of `walk and walk ...`
  have ~10^10 edges, which grew to the machine's memory before any
  estimate could refuse the input)."""
  n = x.shape[0]
  n1 = n + 1
  src_has = np.zeros(n1 * n1, np.bool_)
  for t in x:
    if t >= 0:
      present_src[t] = True
  num_rules = src_len.shape[0]
  binary = np.empty(num_rules, np.int32)
  unary = np.empty(num_rules, np.int32)
  nb = 0
  nu = 0
  for r in range(num_rules):
    ok = src_len[r] <= n
    for s in range(src_len[r]):
      sym = src_sym[r, s]
      if ok and sym >= 0 and not present_src[sym]:
        ok = False
    if ok:
      if src_len[r] == 1 and src_sym[r, 0] < 0:
        unary[nu] = r
        nu += 1
      else:
        binary[nb] = r
        nb += 1
  for t in x:
    if t >= 0:
      present_src[t] = False
  width = max(max_nts, 1)
  cap = 64
  e_rule = np.empty(cap, np.int32)
  e_parent = np.empty(cap, np.int64)
  e_child = np.full((cap, width), -1, np.int64)
  ne = np.int64(0)  # not the literal 0: one compiled callee per type
  starts = np.empty(src_sym.shape[1] + 1, np.int64)
  snxt = np.empty(src_sym.shape[1] + 1, np.int64)
  cs = np.zeros((width, 2), np.int64)
  children = np.empty(width, np.int64)
  spans = np.empty((16, width, 2), np.int64)
  for span in range(1, n + 1):
    for i in range(n - span + 1):
      j = i + span
      for ri in range(nb):
        r = binary[ri]
        length = src_len[r]  # the checks of pair_chart's loop
        first = src_sym[r, 0]
        last = src_sym[r, length - 1]
        if (length > span or (first >= 0 and x[i] != first)
            or (last >= 0 and x[j - 1] != last)):
          continue
        count, spans = _match_source(r, i, j, x, src_has, n1, src_sym,
                                     src_len, starts, snxt, cs, spans)
        nnt = 0
        for s in range(src_len[r]):
          if src_sym[r, s] < 0:
            nnt += 1
        for c in range(count):
          src_has[i * n1 + j] = True
          for a in range(nnt):
            children[a] = spans[c, a, 0] * n1 + spans[c, a, 1]
          e_rule, e_parent, e_child, ne = _append_edge(
              e_rule, e_parent, e_child, ne, r, i * n1 + j, children,
              np.int64(nnt))
          if ne > max_edges:
            return src_has, e_rule[:ne], e_parent[:ne], e_child[:ne]
      if src_has[i * n1 + j]:
        for ui in range(nu):
          children[0] = i * n1 + j
          e_rule, e_parent, e_child, ne = _append_edge(
              e_rule, e_parent, e_child, ne, unary[ui], i * n1 + j,
              children, np.int64(1))
          if ne > max_edges:
            return src_has, e_rule[:ne], e_parent[:ne], e_child[:ne]
  return src_has, e_rule[:ne], e_parent[:ne], e_child[:ne]
