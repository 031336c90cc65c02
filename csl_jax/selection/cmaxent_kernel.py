"""Numba kernels of CMaxEnt: exact greedy maximization of H(A) + H(C).

The pool is a CSR matrix of queries x features (`ptr`, `ids`, `vals`):
features `< num_atoms` are atoms (value: count), the rest compounds (value:
weight). The selected multiset has feature totals n_f; per side (atoms,
compounds) Z = sum n_f and S = sum n_f log n_f, so H = log Z - S / Z.
Adding query e changes Z by D_e = sum of its values (a constant) and S by
dS_e = sum over its features of g(n_f + v) - g(n_f), g(x) = x log x.

`greedy` caches dS_e for every query. Each step scores all queries in
O(1) each (Z moved for all of them), picks the best, then updates dS only
for the queries sharing a feature with the pick (the feature's posting
list): the incremental gains of the issue. Exact: the pick is the argmax of
the objective after adding it, as in the naive greedy
(`cmaxent_kernel_reference.py`), which recomputes both entropies from
scratch for every candidate.

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
def greedy(ptr, ids, vals, num_atoms, num_features, avail, k, tol):
  """Query ids in pick order (a query at most avail[q] times), <= k of them.

  Args:
    ptr, ids, vals: CSR of queries x features (int64, int64, float64).
    num_atoms: features below it are atoms, the rest compounds.
    num_features: the number of features.
    avail: (U,) int64, how many times each query may be picked (its
      examples); not modified.
    k: the number of picks.
    tol: the tie tolerance.
  """
  num_queries = len(ptr) - 1
  avail = avail.copy()
  # The transpose: per feature, the queries holding it (posting lists).
  tptr = np.zeros(num_features + 1, np.int64)
  for p in range(len(ids)):
    tptr[ids[p] + 1] += 1
  for f in range(num_features):
    tptr[f + 1] += tptr[f]
  fill = tptr[:-1].copy()
  trow = np.empty(len(ids), np.int64)
  tval = np.empty(len(ids), np.float64)
  for e in range(num_queries):
    for p in range(ptr[e], ptr[e + 1]):
      f = ids[p]
      trow[fill[f]] = e
      tval[fill[f]] = vals[p]
      fill[f] += 1
  # A feature's postings hold few distinct values (counts; Keysers weights):
  # a pick's change to dS is computed once per distinct value, then added.
  uptr = np.zeros(num_features + 1, np.int64)
  uval = np.empty(len(ids), np.float64)
  wid = np.empty(len(ids), np.int64)
  for f in range(num_features):
    values, cls = _classes(tval[tptr[f]:tptr[f + 1]])
    uval[uptr[f]:uptr[f] + len(values)] = values
    wid[tptr[f]:tptr[f + 1]] = cls
    uptr[f + 1] = uptr[f] + len(values)
  delta = np.empty(max(1, int(np.max(uptr[1:] - uptr[:-1]))), np.float64)
  n = np.zeros(num_features, np.float64)
  z = np.zeros(2, np.float64)
  s = np.zeros(2, np.float64)
  d = np.zeros((2, num_queries), np.float64)
  ds = np.zeros((2, num_queries), np.float64)
  for e in range(num_queries):
    for p in range(ptr[e], ptr[e + 1]):
      side = 0 if ids[p] < num_atoms else 1
      d[side, e] += vals[p]
      ds[side, e] += _g(vals[p])
  # Likewise few distinct sizes D: log(Z + D) once per distinct D a step.
  dval0, dcls0 = _classes(d[0])
  dval1, dcls1 = _classes(d[1])
  zd0 = np.empty(len(dval0), np.float64)
  lz0 = np.empty(len(dval0), np.float64)
  zd1 = np.empty(len(dval1), np.float64)
  lz1 = np.empty(len(dval1), np.float64)
  picks = np.empty(k, np.int64)
  scores = np.empty(num_queries, np.float64)
  m = 0
  while m < k:
    for c in range(len(dval0)):
      zd0[c] = z[0] + dval0[c]
      lz0[c] = np.log(zd0[c]) if zd0[c] > 0.0 else 0.0
    for c in range(len(dval1)):
      zd1[c] = z[1] + dval1[c]
      lz1[c] = np.log(zd1[c]) if zd1[c] > 0.0 else 0.0
    for e in range(num_queries):
      if avail[e] > 0:
        a = dcls0[e]
        b = dcls1[e]
        h0 = lz0[a] - (s[0] + ds[0, e]) / zd0[a] if zd0[a] > 0.0 else 0.0
        h1 = lz1[b] - (s[1] + ds[1, e]) / zd1[b] if zd1[b] > 0.0 else 0.0
        scores[e] = h0 + h1
      else:
        scores[e] = -np.inf
    e = _pick(scores, tol)
    if e < 0:
      break
    picks[m] = e
    m += 1
    avail[e] -= 1
    for p in range(ptr[e], ptr[e + 1]):
      f = ids[p]
      side = 0 if f < num_atoms else 1
      old = n[f]
      new = old + vals[p]
      s[side] += _g(new) - _g(old)
      z[side] += vals[p]
      n[f] = new
      for j in range(uptr[f], uptr[f + 1]):
        w = uval[j]
        delta[j - uptr[f]] = (_g(new + w) - _g(new)) - (_g(old + w) - _g(old))
      for q in range(tptr[f], tptr[f + 1]):
        r = trow[q]
        if avail[r] > 0:
          ds[side, r] += delta[wid[q]]
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
