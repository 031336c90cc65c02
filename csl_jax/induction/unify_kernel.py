"""Numba UNIFY over int-coded rules: the same r3 as `unify.unify` (its
definition; read it first), for one rule r1 and many partners r2. Its twin
is `unify_kernel_reference`, a brute force sharing no code with either.

A rule is two int32 arrays: terminals >= 0, NT_k = -k. The search calls
UNIFY ~3.5*10^5 times on COGS; in Python that was a large part of the run
(BENCHMARKS "Issue 17 → Induction ≥ 10× the reference on the three SCAN
splits").
"""

import numba
import numpy as np

from csl_jax import numba_fixes  # noqa: F401  pylint: disable=unused-import

FRESH = 10**6  # as unify._FRESH: NT indices above any real rule's


@numba.njit(cache=True)
def _canonical(src, tgt):
  """NTs renumbered in order of first appearance in the source; a target
  NT not in the source keeps its number (as `unify.canonical`)."""
  old = np.empty(src.shape[0], np.int32)
  n = 0
  out_src = src.copy()
  for t in range(src.shape[0]):
    c = src[t]
    if c < 0:
      k = -1
      for m in range(n):
        if old[m] == c:
          k = m
          break
      if k < 0:
        old[n] = c
        k = n
        n += 1
      out_src[t] = -(k + 1)
  out_tgt = tgt.copy()
  for t in range(tgt.shape[0]):
    c = tgt[t]
    if c < 0:
      for m in range(n):
        if old[m] == c:
          out_tgt[t] = -(m + 1)
          break
  return out_src, out_tgt


@numba.njit(cache=True)
def _equal(a, b):
  if a.shape[0] != b.shape[0]:
    return False
  for t in range(a.shape[0]):
    if a[t] != b[t]:
      return False
  return True


@numba.njit(cache=True)
def _num_nts(src):
  n = 0
  for c in src:
    if c < 0:
      n += 1
  return n


@numba.njit(cache=True)
def _substitute(side, slot, piece):
  """`side` with every `slot` token replaced by `piece`."""
  count = 0
  for c in side:
    if c == slot:
      count += 1
  out = np.empty(side.shape[0] + count * (piece.shape[0] - 1), np.int32)
  i = 0
  for c in side:
    if c == slot:
      out[i:i + piece.shape[0]] = piece
      i += piece.shape[0]
    else:
      out[i] = c
      i += 1
  return out


@numba.njit(cache=True)
def _shift(side):
  out = side.copy()
  for t in range(side.shape[0]):
    if side[t] < 0:
      out[t] = side[t] - FRESH
  return out


@numba.njit(cache=True)
def _composes_to(parent_src, parent_tgt, child_src, child_tgt, s1, t1):
  """Some k with compose(parent, k, child) == r1 (as `unify.compose`)."""
  cs, ct = _shift(child_src), _shift(child_tgt)
  for k in range(1, _num_nts(parent_src) + 1):
    src, tgt = _canonical(_substitute(parent_src, -k, cs),
                          _substitute(parent_tgt, -k, ct))
    if _equal(src, s1) and _equal(tgt, t1):
      return True
  return False


@numba.njit(cache=True)
def _nts_in(a, b):
  """Every NT (negative code) of a occurs in b."""
  for c in a:
    if c < 0:
      found = False
      for d in b:
        if d == c:
          found = True
          break
      if not found:
        return False
  return True


@numba.njit(cache=True)
def _linked(src, tgt):
  """As `unify._linked`: both sides non-empty, the same NT set, and not
  NT_1 ### NT_1."""
  if src.shape[0] == 0 or tgt.shape[0] == 0:
    return False
  if not (_nts_in(src, tgt) and _nts_in(tgt, src)):
    return False
  return not (src.shape[0] == 1 and tgt.shape[0] == 1 and src[0] == tgt[0])


@numba.njit(cache=True)
def _match(pattern, tokens, start, mapping):
  """As `unify._match_with_nts`; mapping[k] = the tokens' NT index for
  the pattern's NT_k (0: none yet), injective."""
  if start + pattern.shape[0] > tokens.shape[0]:
    return False
  for offset in range(pattern.shape[0]):
    p = pattern[offset]
    t = tokens[start + offset]
    if p >= 0:
      if t < 0 or p != t:
        return False
      continue
    if t >= 0:
      return False
    pi, ti = -p, -t
    if mapping[pi] != 0:
      if mapping[pi] != ti:
        return False
      continue
    for m in range(mapping.shape[0]):
      if mapping[m] == ti:
        return False
    mapping[pi] = ti
  return True


@numba.njit(cache=True)
def _mapped(side, mapping):
  out = side.copy()
  for t in range(side.shape[0]):
    if side[t] < 0:
      out[t] = -mapping[-side[t]]
  return out


@numba.njit(cache=True)
def _keep(out, s3, t3, s1, t1, parent_src, parent_tgt, child_src, child_tgt):
  if (_equal(s3, s1) and _equal(t3, t1)) or not _linked(s3, t3):
    return
  if _composes_to(parent_src, parent_tgt, child_src, child_tgt, s1, t1):
    out.append((s3, t3))


@numba.njit(cache=True)
def _as_parent(out, s1, t1, s2, t2):
  """r3 with r3 o r2 => r1 (as `unify._as_parent`, then `unify`'s checks)."""
  size = s2.shape[0]
  if size > s1.shape[0]:
    return
  width = 1
  for c in s2:
    width = max(width, -c + 1)
  mapping = np.zeros(width, np.int64)
  fresh = np.int32(-FRESH)
  for p in range(s1.shape[0] - size + 1):
    mapping[:] = 0
    if not _match(s2, s1, p, mapping):
      continue
    sub = _mapped(t2, mapping)
    n = sub.shape[0]
    starts = []
    for i in range(t1.shape[0] - n + 1):
      if _equal(t1[i:i + n], sub):
        starts.append(i)
    if len(starts) == 0:
      continue
    greedy = []
    end = -1
    for s in starts:
      if s >= end:
        greedy.append(s)
        end = s + n
    options = [greedy]
    for s in starts:
      if not (len(greedy) == 1 and greedy[0] == s):
        options.append([s])
    src = np.empty(s1.shape[0] - size + 1, np.int32)
    src[:p] = s1[:p]
    src[p] = fresh
    src[p + 1:] = s1[p + size:]
    for chosen in options:
      tgt = np.empty(t1.shape[0] - len(chosen) * (n - 1), np.int32)
      i = j = k = 0
      while i < t1.shape[0]:
        if k < len(chosen) and chosen[k] == i:
          tgt[j] = fresh
          i += n
          k += 1
        else:
          tgt[j] = t1[i]
          i += 1
        j += 1
      s3, t3 = _canonical(src, tgt)
      _keep(out, s3, t3, s1, t1, s3, t3, s2, t2)


@numba.njit(cache=True)
def _as_child(out, s1, t1, s2, t2):
  """r3 with r2 o r3 => r1 (as `unify._as_child`, then `unify`'s checks)."""
  width = 1
  for c in s2:
    width = max(width, -c + 1)
  mapping = np.zeros(width, np.int64)
  for k in range(1, _num_nts(s2) + 1):
    slot = -k
    pos = 0
    while s2[pos] != slot:
      pos += 1
    before, after = s2[:pos], s2[pos + 1:]
    middle = s1.shape[0] - before.shape[0] - after.shape[0]
    if middle < 1:
      continue
    mapping[:] = 0
    if not (_match(before, s1, np.int64(0), mapping) and
            _match(after, s1, before.shape[0] + middle, mapping)):
      continue
    count = 0
    for c in t2:
      if c == slot:
        count += 1
    rest = t2.shape[0] - count
    total = t1.shape[0] - rest
    if total < count or total % count:
      continue
    size = total // count
    piece = -1  # start of the slot's piece in t1
    i = 0
    ok = True
    for c in t2:
      if c == slot:
        if piece >= 0 and not _equal(t1[i:i + size], t1[piece:piece + size]):
          ok = False
          break
        piece = i
        i += size
      else:
        want = -mapping[-c] if c < 0 else c
        if i >= t1.shape[0] or t1[i] != want:
          ok = False
          break
        i += 1
    if ok and piece >= 0:
      s3, t3 = _canonical(s1[pos:pos + middle], t1[piece:piece + size])
      _keep(out, s3, t3, s1, t1, s2, t2, s3, t3)


@numba.njit(cache=True)
def unify_partners(src_flat, src_off, tgt_flat, tgt_off, i, partners):
  """UNIFY(rule i, rule j) for each j in partners (rules as CSR): the r3
  found, with repeats, as CSR (src_flat, src_off, tgt_flat, tgt_off)."""
  out = [(np.zeros(0, np.int32), np.zeros(0, np.int32))]
  out.pop()
  s1 = src_flat[src_off[i]:src_off[i + 1]]
  t1 = tgt_flat[tgt_off[i]:tgt_off[i + 1]]
  for j in partners:
    s2 = src_flat[src_off[j]:src_off[j + 1]]
    t2 = tgt_flat[tgt_off[j]:tgt_off[j + 1]]
    _as_parent(out, s1, t1, s2, t2)
    _as_child(out, s1, t1, s2, t2)
  so = np.zeros(len(out) + 1, np.int64)
  to = np.zeros(len(out) + 1, np.int64)
  for q in range(len(out)):
    so[q + 1] = so[q] + out[q][0].shape[0]
    to[q + 1] = to[q] + out[q][1].shape[0]
  sf = np.empty(so[-1], np.int32)
  tf = np.empty(to[-1], np.int32)
  for q in range(len(out)):
    sf[so[q]:so[q + 1]] = out[q][0]
    tf[to[q]:to[q + 1]] = out[q][1]
  return sf, so, tf, to
