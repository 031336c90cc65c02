"""CSL as a parser (Qiu et al., 2022, §3.1.5): the best derivation of x.

Scores are kept per (source span, context): the context (parent rule, NT
index) fixes p(r | r_p, i) for the rule that expands the span, so
best(span, c) = max over edges e of log_p[c, r_e] + sum_i best(child_i,
ctx_index[r_e, i]), and the answer is best((0, n), ROOT).

Unary-source rules wrap a span in itself (a cyclic chart). They are unrolled:
level 0 of a (span, context) cell holds derivations whose top rule is not
unary, level t adds one unary rule over level t - 1, so the top level holds
those with at most `max_unary_chain` unary rules in a row (as in
`source_forests`; a longer chain only multiplies in more probabilities < 1).

Each cell keeps its k best derivations. An edge combines its children's lists
by enumerating rank tuples whose product of (rank + 1) is <= k: any other
tuple is beaten by >= k tuples of the same edge. With an output CFG the root's
k best are tried in order and the first whose output it accepts wins.

Inputs are bounded (as in induce/coverage): longer than `max_source_len`
tokens, or a chart whose estimated memory (`chart_bytes`: dense
(span, context) tables, n^2 x contexts, plus k-best lists per needed cell and
the source chart's edges, up to n^3 per two-NT rule) exceeds
`max_chart_bytes`, is an InputError naming the input, or with
`skip_too_long` gets no parse and a `skipped` reason. The source chart
stops growing once its edges alone are over `max_chart_bytes` (such an
input is refused the same way), so a raised `max_source_len` cannot grow
it to the machine's memory first. Inputs are parsed one at a time, so
memory stays bounded.

The loop over inputs is Python, calling the chart and the read-out of its
root hypotheses per input: a jitted loop would re-optimize both (numba links
a kernel's callees into its own code) and cost more CPU time on a first run
(BENCHMARKS "Issue 17 → Fewer numba compiles").

The brute-force twin is `viterbi_reference.py`; tests cross-check the two.
"""

import dataclasses
from typing import Any, List, Optional, Sequence, Tuple

import numba
import numpy as np

from csl_jax.cky import forest as forest_lib
from csl_jax.cky.grammar_arrays import QCFGArrays
from csl_jax.errors import InputError
from csl_jax.model.contexts import ROOT
from csl_jax import numba_fixes  # noqa: F401  pylint: disable=unused-import

DEFAULT_MAX_UNARY_CHAIN = 3
DEFAULT_CFG_K = 16  # `csl-jax parse --help` says 16 too
DEFAULT_MAX_OUTPUT_LEN = 10_000  # longer outputs (copy blow-up) are dropped
DEFAULT_MAX_SOURCE_LEN = forest_lib.DEFAULT_MAX_SOURCE_LEN
DEFAULT_MAX_CHART_BYTES = 2 << 30  # per input: 2 GiB

Derivation = Tuple[int, Tuple[Any, ...]]  # (rule id, child derivations)


@dataclasses.dataclass(frozen=True)
class ParseResult:
  """The output (None: no parse), its log p(z), and z as nested tuples;
  `skipped`: why the input was not parsed (too long), else None."""
  target: Optional[Tuple[str, ...]]
  score: float
  derivation: Optional[Derivation]
  skipped: Optional[str] = None

  @property
  def parsed(self) -> bool:
    return self.target is not None


NO_PARSE = ParseResult(None, float("-inf"), None)


@numba.njit(cache=True)
def _insert(p_score, p_code, p_rank, p_cnt, s, lv, k, score, code, ranks,
            nnt):
  """Adds a hypothesis to the sorted list of cell (s, lv); False if it is not
  among the k best (so no lower candidate is either)."""
  c = p_cnt[s, lv]
  if c == k:
    if score <= p_score[s, lv, k - 1]:
      return False
    pos = k - 1
  else:
    pos = c
    p_cnt[s, lv] = c + 1
  while pos > 0 and p_score[s, lv, pos - 1] < score:
    p_score[s, lv, pos] = p_score[s, lv, pos - 1]
    p_code[s, lv, pos] = p_code[s, lv, pos - 1]
    p_rank[s, lv, pos, :] = p_rank[s, lv, pos - 1, :]
    pos -= 1
  p_score[s, lv, pos] = score
  p_code[s, lv, pos] = code
  for a in range(nnt):
    p_rank[s, lv, pos, a] = ranks[a]
  return True


@numba.njit(cache=True)
def _combos(nnt, ch_slot, ch_lvl, p_score, p_cnt, k, c_score, c_rank, cur):
  """The k best sums of one child hypothesis per NT, sorted, with their
  ranks; returns how many. Only tuples with prod(rank + 1) <= k can be among
  the k best, which keeps the enumeration small."""
  if nnt == 0:
    c_score[0] = 0.0
    return 1
  count = 0
  cur[:nnt] = 0
  while True:
    total = 0.0
    for a in range(nnt):
      total += p_score[ch_slot[a], ch_lvl[a], cur[a]]
    if count < k or total > c_score[count - 1]:
      pos = count if count < k else k - 1
      if count < k:
        count += 1
      while pos > 0 and c_score[pos - 1] < total:
        c_score[pos] = c_score[pos - 1]
        c_rank[pos, :] = c_rank[pos - 1, :]
        pos -= 1
      c_score[pos] = total
      c_rank[pos, :nnt] = cur[:nnt]
    a = nnt - 1
    while a >= 0:
      cur[a] += 1
      if cur[a] < p_cnt[ch_slot[a], ch_lvl[a]]:
        prod = 1
        for b in range(a + 1):
          prod *= cur[b] + 1
        if prod <= k:
          break
      cur[a] = 0
      a -= 1
    if a < 0:
      return count


@numba.njit(cache=True)
def _grow(arr, need):
  if need <= arr.shape[0]:
    return arr
  out = np.empty((max(need, 2 * arr.shape[0]),) + arr.shape[1:], arr.dtype)
  out[:arr.shape[0]] = arr
  return out


@numba.njit(cache=True)
def _chart(n, e_rule, e_parent, e_child, num_nts, is_unary, ctx_index, log_p,
           k, max_chain, ctx_local, ctx_list):
  """The k-best chart of one input (its source chart edges, grouped by parent
  span, shortest first). Numbers the chart's contexts in ctx_local (the
  caller resets it); the root cell is slot_of[n * nc] (ROOT is local 0)."""
  n1 = n + 1
  ne = e_rule.shape[0]
  width = e_child.shape[1]
  # Contexts that occur in this chart, numbered locally.
  nc = 1
  ctx_local[ROOT] = 0
  ctx_list[0] = ROOT
  chain = 0
  for e in range(ne):
    r = e_rule[e]
    if is_unary[r]:
      chain = max_chain
    for a in range(num_nts[r]):
      g = ctx_index[r, a]
      if ctx_local[g] < 0:
        ctx_local[g] = nc
        ctx_list[nc] = g
        nc += 1
  # Top-down: the (span, context) cells that some parent reads. Unary edges
  # mark their child context whatever the parent context (a superset).
  need = np.zeros(n1 * n1 * nc, np.bool_)
  span_used = np.zeros(n1 * n1, np.bool_)
  root = n
  need[root * nc] = True
  span_used[root] = True
  for e in range(ne - 1, -1, -1):
    if not span_used[e_parent[e]]:
      continue
    r = e_rule[e]
    for a in range(num_nts[r]):
      ch = e_child[e, a]
      need[ch * nc + ctx_local[ctx_index[r, a]]] = True
      span_used[ch] = True
  slot_of = np.full(n1 * n1 * nc, -1, np.int64)
  num_slots = 0
  for f in range(need.shape[0]):
    if need[f]:
      slot_of[f] = num_slots
      num_slots += 1
  levels = chain + 1
  p_score = np.empty((num_slots, levels, k), np.float64)
  p_code = np.empty((num_slots, levels, k), np.int64)
  p_rank = np.zeros((num_slots, levels, k, width), np.int32)
  p_cnt = np.zeros((num_slots, levels), np.int32)
  top = np.zeros(num_slots, np.int32)
  ch_slot = np.empty(width, np.int64)
  ch_lvl = np.empty(width, np.int64)
  cur = np.zeros(width, np.int32)
  c_score = np.empty(k, np.float64)
  c_rank = np.zeros((k, width), np.int32)
  one = np.zeros(1, np.int32)
  g0 = 0
  while g0 < ne:
    p = e_parent[g0]
    g1 = g0
    unary_here = False
    while g1 < ne and e_parent[g1] == p:
      unary_here = unary_here or is_unary[e_rule[g1]]
      g1 += 1
    if span_used[p]:
      for e in range(g0, g1):
        r = e_rule[e]
        if is_unary[r]:
          continue
        nnt = num_nts[r]
        ok = True
        for a in range(nnt):
          cs = slot_of[e_child[e, a] * nc + ctx_local[ctx_index[r, a]]]
          ch_slot[a] = cs
          ch_lvl[a] = top[cs]
          if p_cnt[cs, top[cs]] == 0:
            ok = False
        if not ok:
          continue
        count = _combos(nnt, ch_slot, ch_lvl, p_score, p_cnt, k, c_score,
                        c_rank, cur)
        for cl in range(nc):
          s = slot_of[p * nc + cl]
          if s < 0:
            continue
          lp = log_p[ctx_list[cl], r]
          if lp == -np.inf:
            continue
          for q in range(count):
            # Typed, not literal, arguments: one compiled _insert.
            if not _insert(p_score, p_code, p_rank, p_cnt, s, np.int64(0), k,
                           lp + c_score[q], e, c_rank[q], nnt):
              break
      if unary_here:
        for t in range(1, levels):
          for cl in range(nc):
            s = slot_of[p * nc + cl]
            if s < 0:
              continue
            top[s] = t
            c0 = p_cnt[s, 0]
            p_cnt[s, t] = c0
            for q in range(c0):
              p_score[s, t, q] = p_score[s, 0, q]
              p_code[s, t, q] = p_code[s, 0, q]
              for a in range(width):
                p_rank[s, t, q, a] = p_rank[s, 0, q, a]
            for e in range(g0, g1):
              u = e_rule[e]
              if not is_unary[u]:
                continue
              lp = log_p[ctx_list[cl], u]
              if lp == -np.inf:
                continue
              cs = slot_of[p * nc + ctx_local[ctx_index[u, 0]]]
              for j in range(p_cnt[cs, t - 1]):
                one[0] = j
                if not _insert(p_score, p_code, p_rank, p_cnt, s, t, k,
                               lp + p_score[cs, t - 1, j], -(u + 1), one,
                               np.int32(1)):
                  break
    g0 = g1
  return p_score, p_code, p_rank, p_cnt, top, slot_of, nc


@numba.njit(cache=True)
def _derivation(h, n, e_rule, e_child, num_nts, ctx_index, ctx_local, nc,
                p_code, p_rank, top, slot_of, width):
  """Root hypothesis h as nodes in preorder: (rule, child node ids)."""
  cap = 16
  node_rule = np.empty(cap, np.int32)
  node_child = np.full((cap, width), -1, np.int32)
  st_slot = np.empty(cap, np.int64)
  st_span = np.empty(cap, np.int64)
  st_lvl = np.empty(cap, np.int64)
  st_rank = np.empty(cap, np.int64)
  st_par = np.empty(cap, np.int64)
  st_pos = np.empty(cap, np.int64)
  root_slot = slot_of[n * nc]
  st_slot[0] = root_slot
  st_span[0] = n
  st_lvl[0] = top[root_slot]
  st_rank[0] = h
  st_par[0] = -1
  st_pos[0] = 0
  depth = 1
  m = 0
  while depth > 0:
    depth -= 1
    s, span, lv = st_slot[depth], st_span[depth], st_lvl[depth]
    rank, par, pos = st_rank[depth], st_par[depth], st_pos[depth]
    if m == node_rule.shape[0]:
      node_rule = _grow(node_rule, m + 1)
      grown = np.full((node_rule.shape[0], width), -1, np.int32)
      for q in range(m):
        for a in range(width):
          grown[q, a] = node_child[q, a]
      node_child = grown
    if par >= 0:
      node_child[par, pos] = m
    code = p_code[s, lv, rank]
    r = e_rule[code] if code >= 0 else -code - 1
    node_rule[m] = r
    nnt = num_nts[r]
    need = depth + nnt
    if need > st_slot.shape[0]:
      st_slot, st_span = _grow(st_slot, need), _grow(st_span, need)
      st_lvl, st_rank = _grow(st_lvl, need), _grow(st_rank, need)
      st_par, st_pos = _grow(st_par, need), _grow(st_pos, need)
    for a in range(nnt - 1, -1, -1):
      cl = ctx_local[ctx_index[r, a]]
      if code >= 0:
        ch_span = e_child[code, a]
        cs = slot_of[ch_span * nc + cl]
        st_lvl[depth] = top[cs]
      else:
        ch_span = span
        cs = slot_of[span * nc + cl]
        st_lvl[depth] = lv - 1
      st_slot[depth] = cs
      st_span[depth] = ch_span
      st_rank[depth] = p_rank[s, lv, rank, a]
      st_par[depth] = m
      st_pos[depth] = a
      depth += 1
    m += 1
  return node_rule[:m], node_child[:m]


@numba.njit(cache=True)
def _target(node_rule, node_child, tgt_sym, tgt_len, max_len):
  """The output of a derivation (target vocabulary ids) and True, or False
  when it is longer than max_len (copies can blow it up)."""
  m = node_rule.shape[0]
  size = np.zeros(m, np.int64)
  for v in range(m - 1, -1, -1):  # Preorder: children after parents.
    r = node_rule[v]
    total = 0
    for t in range(tgt_len[r]):
      sym = tgt_sym[r, t]
      total += 1 if sym >= 0 else size[node_child[v, -sym - 1]]
    size[v] = min(total, max_len + 1)
  if size[0] > max_len:
    return np.zeros(0, np.int32), False
  out = np.empty(size[0], np.int32)
  st_node = np.empty(m + 1, np.int64)
  st_pos = np.empty(m + 1, np.int64)
  st_node[0] = 0
  st_pos[0] = 0
  depth = 1
  o = 0
  while depth > 0:
    v = st_node[depth - 1]
    t = st_pos[depth - 1]
    r = node_rule[v]
    if t == tgt_len[r]:
      depth -= 1
      continue
    st_pos[depth - 1] = t + 1
    sym = tgt_sym[r, t]
    if sym >= 0:
      out[o] = sym
      o += 1
    else:
      st_node[depth] = node_child[v, -sym - 1]
      st_pos[depth] = 0
      depth += 1
  return out, True


@numba.njit(cache=True)
def _hypotheses(n, e_rule, e_child, num_nts, ctx_index, ctx_local, nc,
                p_score, p_code, p_rank, p_cnt, top, slot_of, tgt_sym,
                tgt_len, max_len):
  """The root hypotheses of one input's chart (best first) whose outputs
  have at most max_len tokens: their scores, output ids and preorder
  derivation nodes, concatenated (offsets per hypothesis)."""
  width = e_child.shape[1]
  root_slot = slot_of[n * nc]
  num = p_cnt[root_slot, top[root_slot]]
  score = np.empty(num, np.float64)
  tgt_off = np.zeros(num + 1, np.int64)
  node_off = np.zeros(num + 1, np.int64)
  tgt_ids = np.empty(64, np.int32)
  node_rule = np.empty(64, np.int32)
  node_child = np.empty((64, width), np.int32)
  nh = 0
  for h in range(num):
    rules, children = _derivation(
        h, n, e_rule, e_child, num_nts, ctx_index, ctx_local, nc, p_code,
        p_rank, top, slot_of, width)
    ids, ok = _target(rules, children, tgt_sym, tgt_len, max_len)
    if not ok:
      continue
    score[nh] = p_score[root_slot, top[root_slot], h]
    t0, m0 = tgt_off[nh], node_off[nh]
    tgt_ids = _grow(tgt_ids, t0 + ids.shape[0])
    for q in range(ids.shape[0]):
      tgt_ids[t0 + q] = ids[q]
    tgt_off[nh + 1] = t0 + ids.shape[0]
    node_rule = _grow(node_rule, m0 + rules.shape[0])
    node_child = _grow(node_child, m0 + rules.shape[0])
    for q in range(rules.shape[0]):
      node_rule[m0 + q] = rules[q]
      for a in range(width):
        node_child[m0 + q, a] = children[q, a]
    node_off[nh + 1] = m0 + rules.shape[0]
    nh += 1
  return (score[:nh], tgt_off[:nh + 1], tgt_ids[:tgt_off[nh]],
          node_off[:nh + 1], node_rule[:node_off[nh]],
          node_child[:node_off[nh]])


@dataclasses.dataclass(frozen=True)
class _Model:
  """Checked, kernel-ready arrays of one (grammar, log_p, ctx_index)."""
  grammar: QCFGArrays
  log_p: np.ndarray
  ctx_index: np.ndarray
  is_unary: np.ndarray
  target_words: Tuple[str, ...]


def _model(rules, grammar: QCFGArrays, log_p, ctx_index) -> _Model:
  if len(rules) != grammar.num_rules:
    raise ValueError(f"{len(rules)} rules but the encoded grammar has "
                     f"{grammar.num_rules}")
  log_p = np.ascontiguousarray(log_p, np.float64)
  ctx_index = np.ascontiguousarray(ctx_index, np.int64)
  num_rules = grammar.num_rules
  if log_p.ndim != 2 or log_p.shape[1] != num_rules or not log_p.shape[0]:
    raise ValueError(f"log_p must be [contexts, {num_rules}], got "
                     f"{log_p.shape}")
  if np.isnan(log_p).any() or (log_p == np.inf).any():
    raise ValueError("log_p has NaN or +inf entries")
  most = int(grammar.num_nts.max(initial=0))
  if ctx_index.ndim != 2 or ctx_index.shape[0] != num_rules or (
      ctx_index.shape[1] < most):
    raise ValueError(f"ctx_index must be [{num_rules}, >= {most}], got "
                     f"{ctx_index.shape}")
  used = np.arange(ctx_index.shape[1])[None, :] < grammar.num_nts[:, None]
  ids = ctx_index[used]
  if ids.size and (ids.min() < 0 or ids.max() >= log_p.shape[0]):
    raise ValueError(f"ctx_index has ids outside [0, {log_p.shape[0]})")
  is_unary = np.array([r.is_unary_source for r in grammar.rules], np.bool_)
  words = [""] * len(grammar.target_vocab)
  for word, i in grammar.target_vocab.items():
    words[i] = word
  return _Model(grammar, log_p, ctx_index, is_unary, tuple(words))


def chart_bytes(n: int, num_edges: int, num_contexts: int, width: int,
                levels: int, k: int) -> int:
  """Bytes `_chart` allocates for an n-token input with `num_edges` source
  chart edges and `num_contexts` contexts in them (an upper bound), plus
  the edges themselves."""
  cells = (n + 1) ** 2
  dense = cells * num_contexts * 9 + cells  # need, slot_of, span_used
  slots = min(cells * num_contexts, 1 + num_edges * width)
  lists = slots * (levels * (k * (16 + 4 * width) + 4) + 4)
  return dense + lists + num_edges * _edge_bytes(width)


def _edge_bytes(width: int) -> int:
  """A source chart edge's bytes: rule (int32), parent and children."""
  return 12 + 8 * width


def _chart_contexts(e_rule, num_nts, ctx_index) -> int:
  """The number of contexts `_chart` numbers for these edges (with ROOT)."""
  used = np.arange(ctx_index.shape[1]) < num_nts[e_rule][:, None]
  return 1 + np.count_nonzero(np.bincount(ctx_index[e_rule][used]))


def _too_long(reason: str, index: int, skip_too_long: bool,
              source: Optional[str]) -> str:
  if not skip_too_long:
    raise InputError(f"input {index + 1}: {reason} (raise the bound or skip "
                     "such inputs with skip_too_long)", source, index + 1)
  return reason


def _source_charts(model: "_Model", inputs, k: int, levels: int,
                   max_source_len: int, max_chart_bytes: int,
                   skip_too_long: bool, source: Optional[str],
                   skipped: dict):
  """The source chart of each input whose root span derives: yields (input
  index, n, e_rule, e_parent, e_child). Too long inputs get no chart; their
  reason goes to `skipped` (or raises, see `_too_long`)."""
  grammar = model.grammar
  width = max(grammar.max_nts, 1)
  present = forest_lib.source_chart_scratch(grammar)
  for b, x in enumerate(inputs):
    tokens = x.split() if isinstance(x, str) else list(x)
    if len(tokens) > max_source_len:
      skipped[b] = _too_long(f"{len(tokens)} tokens, more than "
                             f"{max_source_len}", b, skip_too_long, source)
      continue
    if not tokens:
      continue
    # Edges alone over the budget: refused, as the estimate below would
    # refuse them, before the chart grows past it (n^3 edges for a long
    # input).
    max_edges = max_chart_bytes // _edge_bytes(width)
    chart = forest_lib.source_chart(grammar, tokens, present, max_edges)
    if chart is None:
      skipped[b] = _too_long(
          f"its source chart has more than {max_edges:,} edges: its chart "
          f"needs more than max_chart_bytes ({max_chart_bytes / 2**30:.2f} "
          "GiB)", b, skip_too_long, source)
      continue
    has, e_rule, e_parent, e_child = chart
    if not has[len(tokens)]:  # The root span (0, n).
      continue
    # The contexts counted only when a bound on them does not fit.
    bound = min(model.log_p.shape[0], 1 + len(e_rule) * width)
    need = chart_bytes(len(tokens), len(e_rule), bound, width, levels, k)
    if need > max_chart_bytes:
      need = chart_bytes(
          len(tokens), len(e_rule),
          _chart_contexts(e_rule, grammar.num_nts, model.ctx_index), width,
          levels, k)
    if need > max_chart_bytes:
      skipped[b] = _too_long(
          f"its chart needs about {need / 2**30:.2f} GiB, more than "
          f"max_chart_bytes ({max_chart_bytes / 2**30:.2f} GiB)", b,
          skip_too_long, source)
      continue
    yield b, len(tokens), e_rule, e_parent, e_child


def _nested(rules: List[int], children: List[List[int]]) -> Derivation:
  built: List[Any] = [None] * len(rules)
  for v in range(len(rules) - 1, -1, -1):
    built[v] = (rules[v], tuple(built[c] for c in children[v] if c >= 0))
  return built[0]


class _Hypotheses:
  """One input's root hypotheses, best first, as the kernel returns them:
  their outputs and scores, and the derivation of one built on demand (a
  nested tuple per node; building every hypothesis's was most of a parse
  with an output CFG, which keeps one)."""

  def __init__(self, words, score, tgt_off, tgt_ids, node_off, node_rule,
               node_child):
    tgt_ids, tgt_off = tgt_ids.tolist(), tgt_off.tolist()
    self.targets = [tuple(words[i] for i in tgt_ids[tgt_off[h]:tgt_off[h + 1]])
                    for h in range(len(score))]
    self.scores = score.tolist()
    self._node_off = node_off.tolist()
    self._node_rule, self._node_child = node_rule.tolist(), node_child.tolist()

  def result(self, h: int) -> ParseResult:
    m0, m1 = self._node_off[h], self._node_off[h + 1]
    return ParseResult(self.targets[h], self.scores[h], _nested(
        self._node_rule[m0:m1], self._node_child[m0:m1]))


def _each_input(rules, encoded_grammar: QCFGArrays, log_p, ctx_index,
                inputs: Sequence, k: int, max_unary_chain: int,
                max_output_len: int, max_source_len: int,
                max_chart_bytes: int, skip_too_long: bool,
                source: Optional[str], skipped: dict):
  """(index, `_Hypotheses`) of each input with a chart (see kbest_batch)."""
  if k < 1 or max_unary_chain < 0:
    raise ValueError("need k >= 1 and max_unary_chain >= 0")
  model = _model(rules, encoded_grammar, log_p, ctx_index)
  g = model.grammar
  ctx_local = np.full(model.log_p.shape[0], -1, np.int64)
  ctx_list = np.empty(model.log_p.shape[0], np.int64)
  for b, n, e_rule, e_parent, e_child in _source_charts(
      model, inputs, k, max_unary_chain + 1, max_source_len,
      max_chart_bytes, skip_too_long, source, skipped):
    p_score, p_code, p_rank, p_cnt, top, slot_of, nc = _chart(
        n, e_rule, e_parent, e_child, g.num_nts, model.is_unary,
        model.ctx_index, model.log_p, k, max_unary_chain, ctx_local,
        ctx_list)
    found = _hypotheses(
        n, e_rule, e_child, g.num_nts, model.ctx_index, ctx_local, nc,
        p_score, p_code, p_rank, p_cnt, top, slot_of, g.tgt_sym, g.tgt_len,
        max_output_len)
    ctx_local[ctx_list[:nc]] = -1
    yield b, _Hypotheses(model.target_words, *found)


def kbest_batch(rules, encoded_grammar: QCFGArrays, log_p, ctx_index,
                inputs: Sequence, k: int = 1,
                max_unary_chain: int = DEFAULT_MAX_UNARY_CHAIN,
                max_output_len: int = DEFAULT_MAX_OUTPUT_LEN, *,
                max_source_len: int = DEFAULT_MAX_SOURCE_LEN,
                max_chart_bytes: int = DEFAULT_MAX_CHART_BYTES,
                skip_too_long: bool = False, source: Optional[str] = None,
                skipped: Optional[dict] = None
                ) -> List[List[ParseResult]]:
  """The k best derivations of each input (strings or token lists), best
  first; derivations with outputs over max_output_len tokens are dropped.

  An input over max_source_len tokens, or whose chart would need more than
  max_chart_bytes, is an InputError naming `source` and the input's 1-based
  number; with skip_too_long it gets no derivations and its reason is put
  in `skipped` (index -> reason).
  """
  inputs = list(inputs)
  out: List[List[ParseResult]] = [[] for _ in inputs]
  for b, hyps in _each_input(
      rules, encoded_grammar, log_p, ctx_index, inputs, k, max_unary_chain,
      max_output_len, max_source_len, max_chart_bytes, skip_too_long,
      source, {} if skipped is None else skipped):
    out[b] = [hyps.result(h) for h in range(len(hyps.scores))]
  return out


def parse_batch(rules, encoded_grammar: QCFGArrays, log_p, ctx_index,
                inputs: Sequence, k: Optional[int] = None, output_cfg=None,
                max_unary_chain: int = DEFAULT_MAX_UNARY_CHAIN,
                max_output_len: int = DEFAULT_MAX_OUTPUT_LEN, *,
                max_source_len: int = DEFAULT_MAX_SOURCE_LEN,
                max_chart_bytes: int = DEFAULT_MAX_CHART_BYTES,
                skip_too_long: bool = False, source: Optional[str] = None
                ) -> List[ParseResult]:
  """`parse` of many inputs. Skipped inputs (skip_too_long) have no parse
  and say why in `ParseResult.skipped`; count them with `num_skipped`."""
  if k is None:
    k = 1 if output_cfg is None else DEFAULT_CFG_K
  inputs = list(inputs)
  results = [NO_PARSE] * len(inputs)
  accepted = {}  # output -> recognized, shared by hypotheses and inputs
  skipped = {}
  for b, hyps in _each_input(
      rules, encoded_grammar, log_p, ctx_index, inputs, k, max_unary_chain,
      max_output_len, max_source_len, max_chart_bytes, skip_too_long,
      source, skipped):
    for h, target in enumerate(hyps.targets):
      if output_cfg is not None:
        if target not in accepted:
          accepted[target] = output_cfg.recognizes(target)
        if not accepted[target]:
          continue
      results[b] = hyps.result(h)
      break
  for b, reason in skipped.items():
    results[b] = ParseResult(None, float("-inf"), None, reason)
  return results


def num_skipped(results: Sequence[ParseResult]) -> int:
  """How many inputs `parse_batch` skipped as too long."""
  return sum(r.skipped is not None for r in results)


def parse(rules, encoded_grammar: QCFGArrays, log_p, ctx_index,
          x_tokens, k: Optional[int] = None, output_cfg=None,
          max_unary_chain: int = DEFAULT_MAX_UNARY_CHAIN,
          max_output_len: int = DEFAULT_MAX_OUTPUT_LEN,
          **bounds) -> ParseResult:
  """The output of the highest scoring derivation of x (§3.1.5).

  Args:
    rules: the grammar's rules (rule ids index them).
    encoded_grammar: `encode_qcfg(rules)`.
    log_p: [C, R] log p(r | context c).
    ctx_index: [R, >= max NTs] context id of (parent rule, NT index - 1).
    x_tokens: the input, a token list or a space-separated string.
    k: hypotheses kept per (span, context) cell; default 1, or
      DEFAULT_CFG_K with an output CFG.
    output_cfg: if given, the best of the k root derivations whose output it
      recognizes (start category) wins; none: no parse.
    max_unary_chain: most unary-source rules applied in a row on one span.
    max_output_len: derivations with longer outputs are skipped.
    **bounds: max_source_len, max_chart_bytes, skip_too_long, source (see
      `kbest_batch`).

  Returns:
    A ParseResult; its target is None when there is no parse (also for an
    empty input).
  """
  return parse_batch(rules, encoded_grammar, log_p, ctx_index, [x_tokens], k,
                     output_cfg, max_unary_chain, max_output_len, **bounds)[0]
