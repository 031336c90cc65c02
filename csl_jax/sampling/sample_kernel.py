"""Numba forward sampling of derivations (Qiu et al., 2022, §3.2).

Each NT is expanded top-down with p(r | context) from per-context cumulative
distributions; at the maximum depth only rules without NTs may be used.
Strings are then built bottom-up (children before parents), a repeated
target NT copying its child's output. The twin is `sample_reference.py`.
"""

import numba
import numpy as np

from csl_jax import numba_fixes  # noqa: F401  pylint: disable=unused-import


@numba.njit(cache=True)
def _draw(cdf_row):
  """np.searchsorted(cdf_row, u, side="right") written out (numba's
  compiles again in every kernel), capped at the last index."""
  u = np.random.random() * cdf_row[-1]
  lo, hi = 0, cdf_row.shape[0]
  while lo < hi:
    mid = (lo + hi) // 2
    if cdf_row[mid] <= u:
      lo = mid + 1
    else:
      hi = mid
  return min(lo, cdf_row.shape[0] - 1)


@numba.njit(cache=True)
def _spell(v, symbols, length, node_child, start, size, buf, pos):
  """Writes node v's string (one side of its rule, children's strings
  copied in for NTs) at buf[pos:]; returns (new pos, fits in buf)."""
  for k in range(length):
    sym = symbols[k]
    if sym >= 0:
      if pos >= buf.shape[0]:
        return pos, False
      buf[pos] = sym
      pos += 1
    else:
      ch = node_child[v, -sym - 1]
      if pos + size[ch] > buf.shape[0]:
        return pos, False
      for q in range(size[ch]):  # the child's string lies below pos
        buf[pos + q] = buf[start[ch] + q]
      pos += size[ch]
  return pos, True


@numba.njit(cache=True)
def _spell_tree(count, node_rule, node_child, src_sym, src_len, tgt_sym,
                tgt_len, s_start, s_len, t_start, t_len, s_buf, t_buf,
                max_len):
  """Both strings of every node, bottom-up (children have larger ids than
  their parents). Returns 1, 0 if a string exceeds max_len (every node's
  string is in the root's: the root's would too), or 2 if the buffers are
  full (the caller grows them and calls again)."""
  pos_s = np.int64(0)  # not literals: one compiled _spell
  pos_t = np.int64(0)
  for v in range(count - 1, -1, -1):
    r = node_rule[v]
    s_start[v] = pos_s
    pos_s, good = _spell(v, src_sym[r], src_len[r], node_child, s_start,
                         s_len, s_buf, pos_s)
    s_len[v] = pos_s - s_start[v]
    t_start[v] = pos_t
    if good:
      pos_t, good = _spell(v, tgt_sym[r], tgt_len[r], node_child, t_start,
                           t_len, t_buf, pos_t)
    t_len[v] = pos_t - t_start[v]
    if not good:
      return 2
    if s_len[v] > max_len or t_len[v] > max_len:
      return 0
  return 1


@numba.njit(cache=True)
def _expand_plain(cdf, leaf_cdf, ctx_index, num_nts, max_depth, max_nodes,
                  node_rule, node_child):
  """One derivation top-down with p(r | context); only NT-free rules at
  max_depth. Returns (number of nodes, deepest level); -1 nodes if a
  context has no usable rule or the tree outgrows max_nodes."""
  node_depth = np.empty(max_nodes, np.int32)
  node_ctx = np.empty(max_nodes, np.int32)
  stack = np.empty(max_nodes, np.int32)
  node_ctx[0] = 0
  node_depth[0] = 1
  count = 1
  top = 0
  stack[0] = 0
  deepest = 1
  while top >= 0:
    v = stack[top]
    top -= 1
    row = leaf_cdf[node_ctx[v]] if node_depth[v] >= max_depth \
        else cdf[node_ctx[v]]
    if row[-1] <= 0.0:
      return -1, deepest
    r = _draw(row)
    node_rule[v] = r
    for i in range(node_child.shape[1]):
      node_child[v, i] = -1
    for i in range(num_nts[r]):
      if count >= max_nodes:
        return -1, deepest
      node_child[v, i] = count
      node_depth[count] = node_depth[v] + 1
      deepest = max(deepest, node_depth[count])
      node_ctx[count] = ctx_index[r, i]
      top += 1
      stack[top] = count
      count += 1
  return count, deepest


@numba.njit(cache=True)
def expand_with_categories(p, ctx_index, opt_off, opt_rule,
                           opt_child, z, start, max_depth, max_nodes,
                           node_rule, node_child, local=False):
  """One derivation top-down, each node drawing (rule, child categories) in
  proportion to p(r | c) prod_i z[d + 1, ctx_i, B_i]; with `local`, a rule
  whose categories can complete at all (some z > 0) in proportion to
  p(r | c), then one of its complete-able child-category tuples uniformly
  (the options of a rule under a category are consecutive). Returns
  (number of nodes, deepest level), or (-1, 0) if no valid output exists /
  max_nodes."""
  node_ctx = np.empty(max_nodes, np.int32)
  node_cat = np.empty(max_nodes, np.int32)
  node_depth = np.empty(max_nodes, np.int32)
  stack = np.empty(max_nodes, np.int32)
  node_ctx[0] = 0
  node_cat[0] = start
  node_depth[0] = 1
  count = 1
  top = 0
  stack[0] = 0
  deepest = 1
  weights = np.empty(opt_rule.shape[0], np.float64)
  while top >= 0:
    v = stack[top]
    top -= 1
    c, a, d = node_ctx[v], node_cat[v], node_depth[v]
    total = 0.0
    lo, hi = opt_off[a], opt_off[a + 1]
    for o in range(lo, hi):
      r = opt_rule[o]
      w = p[c, r]
      if d >= max_depth and opt_child[o, 0] >= 0:
        w = 0.0
      for i in range(opt_child.shape[1]):
        b = opt_child[o, i]
        if b < 0 or w == 0.0:
          break
        w *= z[d + 1, ctx_index[r, i], b]
      if local and w > 0.0:
        w = p[c, r]
      weights[o - lo] = w
      total += w
    if local:  # a rule's p(r | c) shared by its options that can complete
      total = 0.0
      o = lo
      while o < hi:
        end = o
        n = 0
        while end < hi and opt_rule[end] == opt_rule[o]:
          if weights[end - lo] > 0.0:
            n += 1
          end += 1
        for k in range(o, end):
          if weights[k - lo] > 0.0:
            weights[k - lo] /= n
            total += weights[k - lo]
        o = end
    if total <= 0.0:
      return -1, 0
    u = np.random.random() * total
    pick = hi - 1
    acc = 0.0
    for o in range(lo, hi):
      acc += weights[o - lo]
      if u < acc:
        pick = o
        break
    r = opt_rule[pick]
    node_rule[v] = r
    for i in range(node_child.shape[1]):
      node_child[v, i] = -1
    for i in range(opt_child.shape[1]):
      b = opt_child[pick, i]
      if b < 0:
        break
      if count >= max_nodes:
        return -1, 0
      node_child[v, i] = count
      node_ctx[count] = ctx_index[r, i]
      node_cat[count] = b
      node_depth[count] = d + 1
      if d + 1 > deepest:
        deepest = d + 1
      top += 1
      stack[top] = count
      count += 1
  return count, deepest


@numba.njit(cache=True)
def annotations(count, node_rule, node_child, rule_opt_off, rule_opt,
                opt_parent, opt_child, m):
  """m[v, A]: in how many ways node v's subtree is annotated with output-CFG
  categories, its root with A (`intersection`: the options of its rule);
  children have larger ids than their parents. Fills m[:count]."""
  for v in range(count - 1, -1, -1):
    for a in range(m.shape[1]):
      m[v, a] = 0.0
    r = node_rule[v]
    for k in range(rule_opt_off[r], rule_opt_off[r + 1]):
      o = rule_opt[k]
      w = 1.0
      for i in range(opt_child.shape[1]):
        b = opt_child[o, i]
        if b < 0:
          break
        w *= m[node_child[v, i], b]
      m[v, opt_parent[o]] += w


@numba.njit(cache=True)
def sample_batch(num, seed, intersected, cdf, leaf_cdf, num_nts, p,
                 opt_off, opt_rule, opt_child, z, start, rule_opt_off,
                 rule_opt, opt_parent, ctx_index, src_sym,
                 src_len, tgt_sym, tgt_len, max_depth, max_nodes, max_len,
                 local=False):
  """Samples `num` derivations from the ROOT context: with p(r | context)
  (cdf, leaf_cdf, num_nts), or, if `intersected`, with output-CFG
  categories (p, opt_*, z, start, rule_opt*, opt_parent; see
  `intersection`), a derivation with m annotations kept with probability
  1 / m; with `local` too, drawn as `expand_with_categories` says and
  kept (a local draw is not the conditioned model: nothing to correct).

  Returns (ok [num], src tokens flat, src offsets [num+1], tgt tokens flat,
  tgt offsets [num+1], depth [num], num_nodes [num], number dropped for
  their annotations); a sample is not ok if it needed a rule where none is
  usable, grew past max_nodes nodes or max_len tokens, or was dropped.
  """
  np.random.seed(seed)
  ok = np.zeros(num, np.bool_)
  depths = np.zeros(num, np.int32)
  sizes = np.zeros(num, np.int32)
  src_out = np.empty(num * 8, np.int32)
  tgt_out = np.empty(num * 16, np.int32)
  src_off = np.zeros(num + 1, np.int64)
  tgt_off = np.zeros(num + 1, np.int64)
  node_rule = np.empty(max_nodes, np.int32)
  node_child = np.full((max_nodes, max(ctx_index.shape[1], 1)), -1, np.int32)
  # Per node: its strings in scratch buffers.
  s_start = np.empty(max_nodes, np.int64)
  s_len = np.empty(max_nodes, np.int64)
  t_start = np.empty(max_nodes, np.int64)
  t_len = np.empty(max_nodes, np.int64)
  s_buf = np.empty(max_len * 8 + 64, np.int32)
  t_buf = np.empty(max_len * 8 + 64, np.int32)
  m = np.empty((max_nodes if intersected else 1, opt_off.shape[0] - 1))
  dropped = 0
  ns = 0
  nt = 0
  for b in range(num):
    if intersected:
      count, deepest = expand_with_categories(
          p, ctx_index, opt_off, opt_rule, opt_child, z, start, max_depth,
          max_nodes, node_rule, node_child, local)
      if count > 0 and not local:
        annotations(count, node_rule, node_child, rule_opt_off, rule_opt,
                    opt_parent, opt_child, m)
        if np.random.random() * m[0, start] >= 1.0:  # drawn m times
          count = -1
          dropped += 1
    else:
      count, deepest = _expand_plain(cdf, leaf_cdf, ctx_index, num_nts,
                                     max_depth, max_nodes, node_rule,
                                     node_child)
    spelled = 0
    if count > 0:
      spelled = _spell_tree(count, node_rule, node_child, src_sym, src_len,
                            tgt_sym, tgt_len, s_start, s_len, t_start, t_len,
                            s_buf, t_buf, max_len)
      while spelled == 2:  # the nodes' strings together outgrew the buffers
        s_buf = np.empty(2 * s_buf.shape[0], np.int32)
        t_buf = np.empty(2 * t_buf.shape[0], np.int32)
        spelled = _spell_tree(count, node_rule, node_child, src_sym, src_len,
                              tgt_sym, tgt_len, s_start, s_len, t_start,
                              t_len, s_buf, t_buf, max_len)
    good = spelled == 1
    ok[b] = good
    depths[b] = deepest
    sizes[b] = max(count, 0)
    if good:
      need_s = ns + s_len[0]
      need_t = nt + t_len[0]
      if need_s > src_out.shape[0]:
        grown = np.empty(max(2 * src_out.shape[0], need_s), np.int32)
        grown[:ns] = src_out[:ns]
        src_out = grown
      if need_t > tgt_out.shape[0]:
        grown = np.empty(max(2 * tgt_out.shape[0], need_t), np.int32)
        grown[:nt] = tgt_out[:nt]
        tgt_out = grown
      src_out[ns:need_s] = s_buf[s_start[0]:s_start[0] + s_len[0]]
      tgt_out[nt:need_t] = t_buf[t_start[0]:t_start[0] + t_len[0]]
      ns = need_s
      nt = need_t
    src_off[b + 1] = ns
    tgt_off[b + 1] = nt
  return (ok, src_out[:ns], src_off, tgt_out[:nt], tgt_off, depths, sizes,
          dropped)
