"""Numba kernels of GECA over integer-encoded joint sequences.

Encoding: word ids are >= 1, the input/output boundary is 0 (`SEP`), hole k
of a template is -(k + 1). A joint sequence lives in `tokens[offsets[q]:
offsets[q + 1]]`. Templates and fragments are interned as 64-bit hashes
(plus an independent 32-bit check hash, so that a 64-bit collision is
detected instead of silently merging two templates); a (template, fragment)
pair is stored as the sequence it came from plus the (position, size) of
each span in the successively templated sequence, from which `replay`
rebuilds both. The pure-Python twin is `kernel_reference.py` (same names).
"""

import numba
import numpy as np

from csl_jax import numba_fixes  # noqa: F401  pylint: disable=unused-import
from csl_jax.sort_kernel import lower_bound

SEP = 0
SPAN_END = -100   # closes a span in a fragment's hash
PAD = -101        # pads an environment window at a sequence boundary
ENV_END = -102    # closes one hole's window in an environment's hash
_TOKEN_SHIFT = 1_000_003  # makes every code positive before hashing

_OFF1 = np.uint64(0xCBF29CE484222325)
_P1 = np.uint64(0x100000001B3)
_OFF2 = np.uint64(0x84222325CBF29CE4)
_P2 = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)

# Columns of the record rows `enumerate_pairs` returns (then 2 per span:
# position, size).
COL_TH, COL_TH2, COL_FH, COL_FH2, COL_UH, COL_SEQ, COL_NS, COL_TWO = range(8)
NUM_FIXED_COLS = 8


@numba.njit(inline="always")
def _step(h, tok, p):
  return (h ^ np.uint64(tok + _TOKEN_SHIFT)) * p


@numba.njit(inline="always")
def _mix(h):
  h ^= h >> np.uint64(30)
  h *= _M1
  h ^= h >> np.uint64(27)
  h *= _M2
  h ^= h >> np.uint64(31)
  return h


@numba.njit(nogil=True, cache=True)
def hash_tokens(seq, start, stop):
  """(64-bit hash, 32-bit check hash) of seq[start:stop]."""
  h1 = _OFF1
  h2 = _OFF2
  for j in range(start, stop):
    h1 = _step(h1, seq[j], _P1)
    h2 = _step(h2, seq[j], _P2)
  return _mix(h1), _mix(h2) >> np.uint64(32)


@numba.njit(nogil=True, cache=True)
def sequence_hashes(tokens, offsets):
  """64-bit hash of every sequence."""
  n = offsets.shape[0] - 1
  out = np.empty(n, np.uint64)
  for q in range(n):
    out[q] = hash_tokens(tokens, offsets[q], offsets[q + 1])[0]
  return out


@numba.njit(nogil=True, cache=True)
def ngram_hashes(tokens, offsets, max_size):
  """Hashes of every n-gram (1 <= n <= max_size) that has no SEP and no hole:
  the release counts n-grams of each side separately."""
  total = 0
  for q in range(offsets.shape[0] - 1):
    total += (offsets[q + 1] - offsets[q]) * max_size
  out = np.empty(total, np.uint64)
  m = 0
  for q in range(offsets.shape[0] - 1):
    a, b = offsets[q], offsets[q + 1]
    for i in range(a, b):
      for size in range(1, max_size + 1):
        if i + size > b or tokens[i + size - 1] <= 0:
          break
        if tokens[i] <= 0:
          break
        out[m] = hash_tokens(tokens, i, i + size)[0]
        m += 1
  return out[:m]


@numba.njit(nogil=True, cache=True)
def _contains_sorted(values, x):
  lo = lower_bound(values, x)
  return lo < values.shape[0] and values[lo] == x


@numba.njit(nogil=True, cache=True)
def _replace_all(src, n, start, size, hole, dst):
  """dst <- src[:n] with every occurrence of src[start:start+size] (greedy,
  left to right) replaced by `hole`; returns the new length."""
  m = 0
  i = 0
  while i < n:
    same = i + size <= n
    if same:
      for d in range(size):
        if src[i + d] != src[start + d]:
          same = False
          break
    if same:
      dst[m] = hole
      i += size
    else:
      dst[m] = src[i]
      i += 1
    m += 1
  return m


@numba.njit(nogil=True, cache=True)
def _env_hash(templ, n, window):
  """Hash of the `window` tokens on each side of every hole (Eq. 3)."""
  h = _OFF1
  for j in range(n):
    if templ[j] < 0:
      for d in range(j - window, j + window + 1):
        h = _step(h, templ[d] if 0 <= d < n else PAD, _P1)
      h = _step(h, ENV_END, _P1)
  return _mix(h)


@numba.njit(nogil=True, cache=True)
def enumerate_pairs(tokens, offsets, seqs, wug_size, wug_count, allowed,
                    use_allowed, window, output_only):
  """All distinct (template, fragment) pairs of the sequences `seqs`.

  Fragments follow the release: up to `wug_count` spans of 1..`wug_size`
  tokens without SEP or holes (and, with `use_allowed`, whose hash is in the
  sorted `allowed`), sharing no token; each span's occurrences are all
  replaced by its hole; each further span starts right of the previous
  span's position in the partly templated sequence. `window` < 0: the unit
  hash is the template hash, else the environment hash.

  Returns:
    uint64 rows, one per pair (duplicates within a sequence removed):
    th, th2, fh, fh2, uh, seq, number of spans, two-sided flag, then
    (position, size) per span.
  """
  c = wug_count
  ncol = NUM_FIXED_COLS + 2 * c
  maxlen = 1
  for q in seqs:
    maxlen = max(maxlen, offsets[q + 1] - offsets[q])
  cur = np.empty((c + 1, maxlen), np.int32)
  lens = np.zeros(c + 1, np.int64)
  sz = np.zeros(c, np.int64)
  ps = np.zeros(c, np.int64)
  begin = np.zeros(c, np.int64)
  cap = 1024
  rows = np.empty((cap, ncol), np.uint64)
  m = 0
  lcap = 256
  local = np.empty((lcap, ncol), np.uint64)
  for q in seqs:
    a = offsets[q]
    n = offsets[q + 1] - a
    for j in range(n):
      cur[0, j] = tokens[a + j]
    lens[0] = n
    nl = 0
    level = 0
    begin[0] = 0
    sz[0] = 1
    ps[0] = -1
    while level >= 0:
      ps[level] += 1
      if ps[level] + sz[level] > lens[level]:
        sz[level] += 1
        ps[level] = begin[level]
        if sz[level] > wug_size or ps[level] + sz[level] > lens[level]:
          level -= 1
          continue
      i = ps[level]
      s = sz[level]
      ok = True
      for d in range(s):
        if cur[level, i + d] <= 0:  # SEP or a hole
          ok = False
          break
      if ok and use_allowed:
        ok = _contains_sorted(allowed, hash_tokens(cur[level], i, i + s)[0])
      if ok:  # spans of one fragment share no token type
        for p in range(level):
          for d in range(s):
            for e in range(sz[p]):
              if cur[level, i + d] == cur[p, ps[p] + e]:
                ok = False
                break
            if not ok:
              break
          if not ok:
            break
      if not ok:
        continue
      ln = _replace_all(cur[level], lens[level], i, s, -(level + 1),
                        cur[level + 1])
      lens[level + 1] = ln
      if nl == lcap:
        bigger = np.empty((2 * lcap, ncol), np.uint64)
        bigger[:lcap] = local
        local = bigger
        lcap *= 2
      th, th2 = hash_tokens(cur[level + 1], 0, ln)
      f1 = _OFF1
      f2 = _OFF2
      for p in range(level + 1):
        for e in range(sz[p]):
          f1 = _step(f1, cur[p, ps[p] + e], _P1)
          f2 = _step(f2, cur[p, ps[p] + e], _P2)
        f1 = _step(f1, SPAN_END, _P1)
        f2 = _step(f2, SPAN_END, _P2)
      local[nl, COL_TH] = th
      local[nl, COL_TH2] = th2
      local[nl, COL_FH] = _mix(f1)
      local[nl, COL_FH2] = _mix(f2) >> np.uint64(32)
      local[nl, COL_UH] = th if window < 0 else _env_hash(
          cur[level + 1], ln, window)
      local[nl, COL_SEQ] = q
      local[nl, COL_NS] = level + 1
      hole_in = False
      hole_out = False
      side_out = output_only
      for j in range(ln):
        t = cur[level + 1, j]
        if t == SEP and not output_only:
          side_out = True
        elif t < 0:
          if side_out:
            hole_out = True
          else:
            hole_in = True
      local[nl, COL_TWO] = 1 if (hole_out and (hole_in or output_only)) else 0
      for p in range(c):
        local[nl, NUM_FIXED_COLS + 2 * p] = ps[p] if p <= level else 0
        local[nl, NUM_FIXED_COLS + 2 * p + 1] = sz[p] if p <= level else 0
      nl += 1
      if level + 1 < c:
        level += 1
        begin[level] = i + 1
        sz[level] = 1
        ps[level] = i
    # The same pair recurs when a span occurs several times (replace-all).
    key = np.empty(nl, np.uint64)
    for r in range(nl):
      key[r] = local[r, COL_TH] * _P2 + local[r, COL_FH]
    order = np.argsort(key)
    for k in range(nl):
      r = order[k]
      if k > 0:
        prev = order[k - 1]
        if (local[r, COL_TH] == local[prev, COL_TH]
            and local[r, COL_FH] == local[prev, COL_FH]):
          continue
      if m == cap:
        bigger = np.empty((2 * cap, ncol), np.uint64)
        bigger[:cap] = rows
        rows = bigger
        cap *= 2
      rows[m] = local[r]
      m += 1
  return rows[:m].copy()


@numba.njit(nogil=True, cache=True)
def _replay(tokens, offsets, seq, pos, size, ns, work, spans):
  """Rebuilds a pair: the template into work[ns] (length returned) and the
  spans' tokens into spans[k, :size[k]]."""
  a = offsets[seq]
  n = offsets[seq + 1] - a
  for j in range(n):
    work[0, j] = tokens[a + j]
  ln = n
  for k in range(ns):
    for e in range(size[k]):
      spans[k, e] = work[k, pos[k] + e]
    ln = _replace_all(work[k], ln, pos[k], size[k], -(k + 1), work[k + 1])
  return ln


@numba.njit(nogil=True, cache=True)
def span_hashes(tokens, offsets, seq, pos, size, ns, max_size):
  """Hash of each span of each given pair (0 where a fragment has fewer
  spans): the release's overlap test compares spans."""
  r = seq.shape[0]
  c = pos.shape[1]
  out = np.zeros((r, c), np.uint64)
  maxlen = 1
  for q in range(offsets.shape[0] - 1):
    maxlen = max(maxlen, offsets[q + 1] - offsets[q])
  work = np.empty((c + 1, maxlen), np.int32)
  spans = np.empty((c, max_size), np.int32)
  for k in range(r):
    _replay(tokens, offsets, seq[k], pos[k], size[k], ns[k], work, spans)
    for p in range(ns[k]):
      out[k, p] = hash_tokens(spans[p], 0, size[k, p])[0]
  return out


@numba.njit(nogil=True, cache=True)
def signature_hashes(ptr, ids):
  """Hash of each sorted id list ids[ptr[k]:ptr[k + 1]] (a fragment set)."""
  n = ptr.shape[0] - 1
  out = np.empty(n, np.uint64)
  for k in range(n):
    out[k] = hash_tokens(ids, ptr[k], ptr[k + 1])[0]
  return out


@numba.njit(nogil=True, cache=True)
def candidates(sig_ptr, sig_fids, sig_excl, inv_ptr, inv_dsig, dsig_ptr,
               dsig_fids, dsig_count, frag_spans, uniform):
  """Candidate fills of each target signature with their weights.

  A target signature is the fragment set S = sig_fids[sig_ptr[k]:...] of a
  target template. Its donors are the donor units (more than one fragment)
  sharing a fragment with S, found through the inverted index fragment ->
  donor signatures (a signature S' stands for dsig_count[S'] units with
  the fragment set S'), less one unit of signature sig_excl[k] where that
  is >= 0: the targets' own environment, where no other template shares a
  fragment with them (the paper's t'1 != t1; window mode). The weight of a
  fill f2 is the number of distinct donor units offering it (the release's
  list with duplicates), or 1 (`uniform`). Fills in S, or sharing a span
  with every fragment of S, are left out (the release's `overlap`).

  Returns:
    (ptr, fids, weights): the candidates of signature k are
    fids[ptr[k]:ptr[k + 1]], in increasing fragment id.
  """
  nsig = sig_ptr.shape[0] - 1
  nfrag = frag_spans.shape[0]
  c = frag_spans.shape[1]
  weight = np.zeros(nfrag, np.int64)
  in_s = np.zeros(nfrag, np.bool_)
  seen = np.zeros(dsig_count.shape[0], np.bool_)
  touched = np.empty(nfrag, np.int64)
  dlist = np.empty(dsig_count.shape[0], np.int64)
  ptr = np.zeros(nsig + 1, np.int64)
  cap = 1024
  fids = np.empty(cap, np.int64)
  wts = np.empty(cap, np.int64)
  m = 0
  for k in range(nsig):
    nd = 0
    for j in range(sig_ptr[k], sig_ptr[k + 1]):
      f = sig_fids[j]
      in_s[f] = True
      for x in range(inv_ptr[f], inv_ptr[f + 1]):
        d = inv_dsig[x]
        if not seen[d]:
          seen[d] = True
          dlist[nd] = d
          nd += 1
    nt = 0
    for y in range(nd):
      d = dlist[y]
      seen[d] = False
      units = dsig_count[d] - (1 if d == sig_excl[k] else 0)
      if units == 0:
        continue
      for j in range(dsig_ptr[d], dsig_ptr[d + 1]):
        f2 = dsig_fids[j]
        if weight[f2] == 0:
          touched[nt] = f2
          nt += 1
        weight[f2] += units
    touched_sorted = np.sort(touched[:nt])
    for y in range(nt):
      f2 = touched_sorted[y]
      w = weight[f2]
      weight[f2] = 0
      if in_s[f2]:
        continue
      # Sharing a span with every fill of the target excludes f2.
      all_share = True
      for j in range(sig_ptr[k], sig_ptr[k + 1]):
        f = sig_fids[j]
        share = False
        for p in range(c):
          if frag_spans[f2, p] == 0:
            break
          for r in range(c):
            if frag_spans[f, r] == 0:
              break
            if frag_spans[f2, p] == frag_spans[f, r]:
              share = True
          if share:
            break
        if not share:
          all_share = False
          break
      if all_share:
        continue
      if m == cap:
        f_big = np.empty(2 * cap, np.int64)
        w_big = np.empty(2 * cap, np.int64)
        f_big[:cap] = fids
        w_big[:cap] = wts
        fids = f_big
        wts = w_big
        cap *= 2
      fids[m] = f2
      wts[m] = 1 if uniform else w
      m += 1
    for j in range(sig_ptr[k], sig_ptr[k + 1]):
      in_s[sig_fids[j]] = False
    ptr[k + 1] = m
  return ptr, fids[:m].copy(), wts[:m].copy()


@numba.njit(nogil=True, cache=True)
def draw_fills(cand_ptr, cand_w, target_sig, variants, uniforms):
  """For each target, `variants` copies drawn without replacement from its
  signature's candidate multiset (the release shuffles the list with
  duplicates and keeps the first `variants`); duplicates collapse.

  Args:
    uniforms: (targets, variants) floats in [0, 1), the randomness (may
      have no columns when no multiset has more than `variants` copies).

  Returns:
    (targets, k) candidate indices into cand_w, -1 where none; k is the
    most fills any target gets.
  """
  n = target_sig.shape[0]
  width = 0
  for t in range(n):
    s = target_sig[t]
    width = max(width, min(variants, cand_ptr[s + 1] - cand_ptr[s]))
  out = np.full((n, width), -1, np.int64)
  for t in range(n):
    s = target_sig[t]
    a, b = cand_ptr[s], cand_ptr[s + 1]
    total = 0
    for j in range(a, b):
      total += cand_w[j]
    if total == 0:
      continue
    if total <= variants:  # every copy is taken
      k = 0
      for j in range(a, b):
        out[t, k] = j
        k += 1
      continue
    taken = np.zeros(b - a, np.int64)
    remaining = total
    k = 0
    for v in range(variants):
      r = int(uniforms[t, v] * remaining)
      if r >= remaining:
        r = remaining - 1
      j = a
      while True:
        left = cand_w[j] - taken[j - a]
        if r < left:
          break
        r -= left
        j += 1
      taken[j - a] += 1
      remaining -= 1
      dup = False
      for e in range(k):
        if out[t, e] == j:
          dup = True
      if not dup:
        out[t, k] = j
        k += 1
  return out


@numba.njit(nogil=True, cache=True)
def fill_pairs(tokens, offsets, t_seq, t_pos, t_size, t_ns, f_seq, f_pos,
               f_size, f_ns, max_size, output_only):
  """Fills each template with a fragment (both rebuilt from their stored
  pairs); returns the filled joint sequences (flat, with offsets) and the
  hashes of their input and output sides (input hash 0 in LM mode)."""
  r = t_seq.shape[0]
  c = t_pos.shape[1]
  maxlen = 1
  for q in range(offsets.shape[0] - 1):
    maxlen = max(maxlen, offsets[q + 1] - offsets[q])
  work = np.empty((c + 1, maxlen), np.int32)
  fwork = np.empty((c + 1, maxlen), np.int32)
  spans = np.empty((c, max_size), np.int32)
  dummy = np.empty((c, max_size), np.int32)
  out_ptr = np.zeros(r + 1, np.int64)
  cap = max(16, r * maxlen)
  flat = np.empty(cap, np.int32)
  in_hash = np.zeros(r, np.uint64)
  out_hash = np.zeros(r, np.uint64)
  m = 0
  for k in range(r):
    _replay(tokens, offsets, f_seq[k], f_pos[k], f_size[k], f_ns[k], fwork,
            spans)
    ln = _replay(tokens, offsets, t_seq[k], t_pos[k], t_size[k], t_ns[k],
                 work, dummy)
    templ = work[t_ns[k]]
    start = m
    for j in range(ln):
      t = templ[j]
      if t < 0:
        h = -t - 1
        for e in range(f_size[k, h]):
          if m == cap:
            bigger = np.empty(2 * cap, np.int32)
            bigger[:cap] = flat
            flat = bigger
            cap *= 2
          flat[m] = spans[h, e]
          m += 1
      else:
        if m == cap:
          bigger = np.empty(2 * cap, np.int32)
          bigger[:cap] = flat
          flat = bigger
          cap *= 2
        flat[m] = t
        m += 1
    out_ptr[k + 1] = m
    if output_only:
      out_hash[k] = hash_tokens(flat, start, m)[0]
    else:
      cut = start
      while flat[cut] != SEP:
        cut += 1
      in_hash[k] = hash_tokens(flat, start, cut)[0]
      out_hash[k] = hash_tokens(flat, cut + 1, m)[0]
  return flat[:m].copy(), out_ptr, in_hash, out_hash
