"""Numba kernels of CMaxEnt: exact greedy maximization of H(A) + H(C).

The pool is a CSR matrix of queries x features (`ptr`, `ids`, `vals`):
features `< num_atoms` are atoms (value: count), the rest compounds (value:
weight). The selected multiset has feature totals n_f; per side (atoms,
compounds) Z = sum n_f and S = sum n_f log n_f, so H = log Z - S / Z.
Adding query e changes Z by D_e = sum of its values (a constant) and S by
dS_e = sum over its features of g(n_f + v) - g(n_f), g(x) = x log x.

`greedy` keeps, per feature and distinct value v, the gain
g(n_f + v) - g(n_f) (updated for the pick's features only), and per query
a lower bound of its dS per side: dS at the last refresh, since dS only
grows as the selection grows (g is convex). With it, each step bounds
every query's score from above in one pass over contiguous arrays (queries
sorted by atom total, whose few values give log(Z + D) once each, then by
compound total, whose log(Z + D) a per-block tangent bounds from above;
log is concave), scores exactly (from the row and the gain table) only
the queries whose bound comes within tol of the best exact score found,
and picks among them. A refresh, after a step that needed many exact
scores, adds each changed gain's difference along its feature's postings.
Exact: every query that could be the naive greedy's pick is scored
exactly (bounds carry a 1e-8 margin for their different rounding), so
the pick is the naive greedy's (`cmaxent_kernel_reference.py`, which
recomputes both entropies from scratch for every candidate). Each step
reads the bounds of all queries (on the 1M-sample COGS pool: BENCHMARKS
"Issue 14 → CMaxEnt on the 1M COGS pool, fast") but touches rows and
postings only where needed.

Ties: the first query (lowest index) whose score is within `tol` of the
best; both implementations use this rule, so float rounding differences of
the two ways of computing the score do not change the selection.

`hybrid` (CMaxEnt+UAT, Oren §3.3): each step draws a template uniformly
among those with queries left (`u[step]` in [0, 1) picks position
floor(u * R) of the remaining-template list, which loses a template by
swap-with-last) and takes the greedy pick among that template's queries
(a contiguous range `tmpl_ptr[t]:tmpl_ptr[t + 1]`), scored from scratch.
"""

import numba
import numpy as np

from csl_jax import numba_fixes  # noqa: F401  pylint: disable=unused-import


@numba.njit(cache=True, inline="always")
def _g(x):
  return x * np.log(x) if x > 0.0 else 0.0


@numba.njit(cache=True, inline="always")
def _h(z, s):
  return np.log(z) - s / z if z > 0.0 else 0.0


@numba.njit(cache=True)
def _classes(x):
  """(distinct values of x, index of each x in them)."""
  order = np.argsort(x, kind="mergesort")
  cls = np.empty(len(x), np.int64)
  values = np.empty(len(x), np.float64)
  c = -1
  for i in range(len(order)):
    if c < 0 or x[order[i]] != values[c]:
      c += 1
      values[c] = x[order[i]]
    cls[order[i]] = c
  return values[:c + 1], cls


@numba.njit(cache=True)
def _pick(scores, tol):
  best = -np.inf
  for e in range(len(scores)):
    if scores[e] > best:
      best = scores[e]
  if best == -np.inf:
    return -1
  for e in range(len(scores)):
    if scores[e] >= best - tol:
      return e
  return -1


@numba.njit(cache=True)
def _feature_starts(ids, num_features):
  """Where each feature's entries start once the CSR entries are grouped by
  feature (a counting sort's offsets; the last is the number of entries)."""
  tptr = np.zeros(num_features + 1, np.int64)
  for p in range(len(ids)):
    tptr[ids[p] + 1] += 1
  for f in range(num_features):
    tptr[f + 1] += tptr[f]
  return tptr


@numba.njit(cache=True)
def _slots(ptr, ids, vals, num_features):
  """Per feature its distinct values (uval[uptr[f]:uptr[f + 1]]) and per
  entry p of the CSR the slot of (ids[p], vals[p]) among them."""
  tptr = _feature_starts(ids, num_features)
  fill = tptr[:-1].copy()
  tpos = np.empty(len(ids), np.int64)  # entries grouped by feature
  for p in range(len(ids)):
    tpos[fill[ids[p]]] = p
    fill[ids[p]] += 1
  uptr = np.zeros(num_features + 1, np.int64)
  uval = np.empty(len(ids), np.float64)
  slot = np.empty(len(ids), np.int64)
  for f in range(num_features):
    values, cls = _classes(vals[tpos[tptr[f]:tptr[f + 1]]])
    uval[uptr[f]:uptr[f] + len(values)] = values
    uptr[f + 1] = uptr[f] + len(values)
    for i in range(tptr[f], tptr[f + 1]):
      slot[tpos[i]] = uptr[f] + cls[i - tptr[f]]
  return slot, uptr, uval[:uptr[-1]].copy()


@numba.njit(cache=True)
def _exact(e, ptr, ids, slot, tab, num_atoms, d0, d1, z, s):
  """The score of query e: the objective after adding it, as the naive
  greedy defines it, from the current per-slot gains."""
  ds0 = 0.0
  ds1 = 0.0
  for p in range(ptr[e], ptr[e + 1]):
    if ids[p] < num_atoms:
      ds0 += tab[slot[p]]
    else:
      ds1 += tab[slot[p]]
  za = z[0] + d0[e]
  zc = z[1] + d1[e]
  h0 = np.log(za) - (s[0] + ds0) / za if za > 0.0 else 0.0
  h1 = np.log(zc) - (s[1] + ds1) / zc if zc > 0.0 else 0.0
  return h0 + h1


@numba.njit(cache=True, inline="always")
def _bound(i, b, lz0, r0, bcls, bl, bq, bmid, od1, lb0, lb1, z, s):
  """An upper bound of the score of the query at scan position i (block b):
  the exact formula with dS lower bounds, 1 / (Z + D) of atoms as a product
  and log(Z + D) of compounds as the block's tangent (log is concave)."""
  return (lz0[bcls[b]] - (s[0] + lb0[i]) * r0[bcls[b]] + bl[b]
          + (od1[i] - bmid[b]) * bq[b] - (s[1] + lb1[i]) / (z[1] + od1[i]))


@numba.njit(cache=True, fastmath={"reassoc", "contract", "arcp", "nsz"})
def _block_max(lo, hi, a0, q0, l1, q1, mid, z1, s0, s1, od1, lb0, lb1):
  """max of `_bound` over scan positions lo:hi of one block (vectorized: the
  fast-math rounding is far inside the bounds' margin)."""
  mx = -np.inf
  for i in range(lo, hi):
    mx = max(mx, a0 - (s0 + lb0[i]) * q0 + l1 + (od1[i] - mid) * q1
             - (s1 + lb1[i]) / (z1 + od1[i]))
  return mx


_DEAD = 1e300  # dS bound of a query with no example left: score ~ -1e300 / Z


@numba.njit(cache=True)
def greedy(ptr, ids, vals, num_atoms, num_features, avail, k, tol,
           chunk=1024, refresh_after=1000):
  """Query ids in pick order (a query at most avail[q] times), <= k of them.

  Args:
    ptr, ids, vals: CSR of queries x features (int64, int64, float64).
    num_atoms: features below it are atoms, the rest compounds.
    num_features: the number of features.
    avail: (U,) int64, how many times each query may be picked (its
      examples); not modified.
    k: the number of picks.
    tol: the tie tolerance.
    chunk: queries per bound block (one tangent of the log per block).
    refresh_after: bring the dS bounds up to date after a step that scored
      more queries exactly than this.
  """
  num_q = len(ptr) - 1
  avail = avail.copy()
  slot, uptr, uval = _slots(ptr, ids, vals, num_features)
  tab = np.empty(len(uval), np.float64)  # per slot: g(n + v) - g(n)
  for j in range(len(uval)):
    tab[j] = _g(uval[j])
  tab_ref = tab.copy()  # tab when the bounds were last brought up to date
  d0 = np.zeros(num_q, np.float64)
  d1 = np.zeros(num_q, np.float64)
  for e in range(num_q):
    for p in range(ptr[e], ptr[e + 1]):
      if ids[p] < num_atoms:
        d0[e] += vals[p]
      else:
        d1[e] += vals[p]
  # Scan order: by atom total (few distinct values: log(Z + D) once per
  # value a step), then by compound total, in blocks of `chunk` queries of
  # one atom total; per block one tangent bounds log(Z + D) from above.
  dval0, dcls0 = _classes(d0)
  order = np.argsort(d1, kind="mergesort")
  order = order[np.argsort(dcls0[order], kind="mergesort")]
  pos = np.empty(num_q, np.int64)
  pos[order] = np.arange(num_q)
  bstart = np.empty(num_q + 1, np.int64)
  nb = 0
  for i in range(num_q):
    if (i == 0 or dcls0[order[i]] != dcls0[order[i - 1]]
        or i - bstart[nb - 1] == chunk):
      bstart[nb] = i
      nb += 1
  bstart[nb] = num_q
  bcls = np.empty(nb, np.int64)
  bmid = np.empty(nb, np.float64)
  blo = np.empty(nb, np.float64)
  for b in range(nb):
    bcls[b] = dcls0[order[bstart[b]]]
    blo[b] = d1[order[bstart[b]]]
    bmid[b] = 0.5 * (blo[b] + d1[order[bstart[b + 1] - 1]])
  od1 = d1[order]
  # Lower bounds of each query's dS (atoms, compounds), in scan order: the
  # dS of the selection as it was at the last refresh. dS only grows with
  # the selection (g is convex), so the bound they give on the score is an
  # upper bound; queries are scored exactly only where it comes within tol
  # of the best exact score found. A refresh adds each changed slot's gain
  # difference along its feature's postings (in scan order).
  lb0 = np.zeros(num_q, np.float64)
  lb1 = np.zeros(num_q, np.float64)
  tptr = _feature_starts(ids, num_features)
  fill = tptr[:-1].copy()
  tpos = np.empty(len(ids), np.int32)
  tslot = np.empty(len(ids), np.int32)
  for i in range(num_q):
    e = order[i]
    if avail[e] <= 0:
      lb0[i] = _DEAD
      lb1[i] = _DEAD
    for p in range(ptr[e], ptr[e + 1]):
      if ids[p] < num_atoms:
        lb0[i] += tab[slot[p]]
      else:
        lb1[i] += tab[slot[p]]
      tpos[fill[ids[p]]] = i
      tslot[fill[ids[p]]] = slot[p]
      fill[ids[p]] += 1
  changed = np.empty(num_features, np.int64)
  is_changed = np.zeros(num_features, np.bool_)
  num_changed = 0
  n = np.zeros(num_features, np.float64)
  z = np.zeros(2, np.float64)
  s = np.zeros(2, np.float64)
  lz0 = np.empty(len(dval0), np.float64)
  r0 = np.empty(len(dval0), np.float64)
  bl = np.empty(nb, np.float64)
  bq = np.empty(nb, np.float64)
  bmax = np.empty(nb, np.float64)
  slow = np.zeros(nb, np.bool_)
  delta = np.zeros(len(tab), np.float64)
  cand = np.empty(num_q, np.int64)
  cscore = np.empty(num_q, np.float64)
  picks = np.empty(k, np.int64)
  # Bounds and exact scores round differently (~1e-14; a bound pushed 10^5
  # times drifts by < 1e-10).
  margin = tol + 1e-8
  refresh = False
  alive = 0  # queries with examples left
  for e in range(num_q):
    alive += avail[e] > 0
  m = 0
  while m < k and alive > 0:
    if refresh:
      for c in range(num_changed):
        f = changed[c]
        for j in range(uptr[f], uptr[f + 1]):
          delta[j] = tab[j] - tab_ref[j]
          tab_ref[j] = tab[j]
        lb = lb0 if f < num_atoms else lb1
        for q in range(tptr[f], tptr[f + 1]):
          lb[tpos[q]] += delta[tslot[q]]
        is_changed[f] = False
      num_changed = 0
      refresh = False
    for c in range(len(dval0)):
      za = z[0] + dval0[c]
      lz0[c] = np.log(za) if za > 0.0 else 0.0
      r0[c] = 1.0 / za if za > 0.0 else 0.0
    best_b = -1
    best_i = -1
    top = -np.inf
    for b in range(nb):
      # Blocks where a total can be 0 (h = 0 there) are scored exactly.
      slow[b] = z[0] + dval0[bcls[b]] <= 0.0 or z[1] + blo[b] <= 0.0
      if slow[b]:
        bmax[b] = -np.inf
        for i in range(bstart[b], bstart[b + 1]):
          if avail[order[i]] > 0:
            u = _exact(order[i], ptr, ids, slot, tab, num_atoms, d0, d1, z,
                       s)
            if u > bmax[b]:
              bmax[b] = u
              if u > top:
                top, best_b, best_i = u, b, i
        continue
      zm = z[1] + bmid[b]
      bl[b] = np.log(zm)
      bq[b] = 1.0 / zm
      mx = _block_max(bstart[b], bstart[b + 1], lz0[bcls[b]], r0[bcls[b]],
                      bl[b], bq[b], bmid[b], z[1], s[0], s[1], od1, lb0, lb1)
      bmax[b] = mx
      if mx > top:
        top = mx
        best_b = b
    # The best exact score: first the query with the highest bound, then
    # every query whose bound reaches within tol of the best found so far.
    if not slow[best_b]:
      mx = -np.inf
      for i in range(bstart[best_b], bstart[best_b + 1]):
        u = _bound(i, best_b, lz0, r0, bcls, bl, bq, bmid, od1, lb0, lb1, z,
                   s)
        if u > mx:
          mx = u
          best_i = i
    theta = _exact(order[best_i], ptr, ids, slot, tab, num_atoms, d0, d1, z,
                   s)
    cand[0] = order[best_i]
    cscore[0] = theta
    nc = 1
    for b in np.argsort(-bmax):  # best blocks first: theta rises early
      if bmax[b] < theta - margin:
        break
      for i in range(bstart[b], bstart[b + 1]):
        if not slow[b] and _bound(i, b, lz0, r0, bcls, bl, bq, bmid, od1, lb0,
                                  lb1, z, s) < theta - margin:
          continue  # (checked first: order[i] is a random access)
        e = order[i]
        if i == best_i or avail[e] <= 0:
          continue
        cand[nc] = e
        cscore[nc] = _exact(e, ptr, ids, slot, tab, num_atoms, d0, d1, z, s)
        theta = max(theta, cscore[nc])
        nc += 1
    e = -1
    for j in range(nc):
      if cscore[j] >= theta - tol and (e < 0 or cand[j] < e):
        e = cand[j]
    refresh = nc > refresh_after
    picks[m] = e
    m += 1
    avail[e] -= 1
    if avail[e] == 0:
      alive -= 1
      lb0[pos[e]] = _DEAD
      lb1[pos[e]] = _DEAD
    for p in range(ptr[e], ptr[e + 1]):
      f = ids[p]
      side = 0 if f < num_atoms else 1
      old = n[f]
      new = old + vals[p]
      s[side] += _g(new) - _g(old)
      z[side] += vals[p]
      n[f] = new
      for j in range(uptr[f], uptr[f + 1]):
        tab[j] = _g(new + uval[j]) - _g(new)
      if not is_changed[f]:
        is_changed[f] = True
        changed[num_changed] = f
        num_changed += 1
  return picks[:m]


@numba.njit(cache=True)
def hybrid(ptr, ids, vals, num_atoms, num_features, avail, tmpl_ptr, k, u,
           tol):
  """CMaxEnt+UAT picks: a uniform template, then the greedy within it.

  Args:
    ptr, ids, vals, num_atoms, num_features, avail, k, tol: as `greedy`;
      queries must be sorted by template.
    tmpl_ptr: (T + 1,) int64, template t owns queries tmpl_ptr[t]:tmpl_ptr[t+1].
    u: (k,) float64 uniforms in [0, 1), one per step.
  """
  num_templates = len(tmpl_ptr) - 1
  avail = avail.copy()
  tavail = np.zeros(num_templates, np.int64)
  remaining = np.empty(num_templates, np.int64)
  r = 0
  for t in range(num_templates):
    for e in range(tmpl_ptr[t], tmpl_ptr[t + 1]):
      tavail[t] += avail[e]
    if tavail[t] > 0:
      remaining[r] = t
      r += 1
  n = np.zeros(num_features, np.float64)
  z = np.zeros(2, np.float64)
  s = np.zeros(2, np.float64)
  picks = np.empty(k, np.int64)
  m = 0
  while m < k and r > 0:
    pos = min(int(u[m] * r), r - 1)
    t = remaining[pos]
    lo = tmpl_ptr[t]
    scores = np.full(tmpl_ptr[t + 1] - lo, -np.inf)
    for e in range(lo, tmpl_ptr[t + 1]):
      if avail[e] == 0:
        continue
      dz0 = 0.0
      dz1 = 0.0
      ds0 = 0.0
      ds1 = 0.0
      for p in range(ptr[e], ptr[e + 1]):
        f = ids[p]
        delta = _g(n[f] + vals[p]) - _g(n[f])
        if f < num_atoms:
          dz0 += vals[p]
          ds0 += delta
        else:
          dz1 += vals[p]
          ds1 += delta
      scores[e - lo] = _h(z[0] + dz0, s[0] + ds0) + _h(z[1] + dz1, s[1] + ds1)
    e = lo + _pick(scores, tol)
    picks[m] = e
    m += 1
    avail[e] -= 1
    for p in range(ptr[e], ptr[e + 1]):
      f = ids[p]
      side = 0 if f < num_atoms else 1
      new = n[f] + vals[p]
      s[side] += _g(new) - _g(n[f])
      z[side] += vals[p]
      n[f] = new
    tavail[t] -= 1
    if tavail[t] == 0:
      remaining[pos] = remaining[r - 1]
      r -= 1
  return picks[:m]
