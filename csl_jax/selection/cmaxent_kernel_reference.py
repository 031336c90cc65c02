"""The naive CMaxEnt greedy: the test oracle of cmaxent_kernel.

Every step adds each available query to a copy of the selected feature
totals, computes H(A) + H(C) from scratch as -sum p log p, and keeps the
best (first within `tol`, as the kernel). k x U x (features) work: only for
small pools. Same function names and arguments as `cmaxent_kernel`.
"""

import math

import numpy as np


def _entropy(totals):
  z = sum(totals.values())
  if z <= 0:
    return 0.0
  return -sum(v / z * math.log(v / z) for v in totals.values() if v > 0)


def _objective(atoms, comps):
  return _entropy(atoms) + _entropy(comps)


def _add(atoms, comps, row, num_atoms):
  atoms, comps = dict(atoms), dict(comps)
  for f, v in row:
    side = atoms if f < num_atoms else comps
    side[f] = side.get(f, 0.0) + v
  return atoms, comps


def _rows(ptr, ids, vals):
  return [list(zip(ids[ptr[e]:ptr[e + 1]].tolist(),
                   vals[ptr[e]:ptr[e + 1]].tolist(), strict=True))
          for e in range(len(ptr) - 1)]


def _best(candidates, score, tol):
  scores = {e: score(e) for e in candidates}
  if not scores:
    return -1
  best = max(scores.values())
  return min(e for e, v in scores.items() if v >= best - tol)


def greedy(ptr, ids, vals, num_atoms, num_features, avail, k, tol):
  del num_features
  rows = _rows(ptr, ids, vals)
  avail = list(avail)
  atoms, comps = {}, {}
  picks = []
  while len(picks) < k:
    e = _best([e for e in range(len(rows)) if avail[e] > 0],
              lambda e: _objective(*_add(atoms, comps, rows[e], num_atoms)),
              tol)
    if e < 0:
      break
    picks.append(e)
    avail[e] -= 1
    atoms, comps = _add(atoms, comps, rows[e], num_atoms)
  return np.array(picks, np.int64)


def hybrid(ptr, ids, vals, num_atoms, num_features, avail, tmpl_ptr, k, u,
           tol):
  del num_features
  rows = _rows(ptr, ids, vals)
  avail = list(avail)
  num_templates = len(tmpl_ptr) - 1
  left = [sum(avail[tmpl_ptr[t]:tmpl_ptr[t + 1]]) for t in range(num_templates)]
  remaining = [t for t in range(num_templates) if left[t] > 0]
  atoms, comps = {}, {}
  picks = []
  while len(picks) < k and remaining:
    pos = min(int(u[len(picks)] * len(remaining)), len(remaining) - 1)
    t = remaining[pos]
    e = _best([e for e in range(tmpl_ptr[t], tmpl_ptr[t + 1]) if avail[e] > 0],
              lambda e: _objective(*_add(atoms, comps, rows[e], num_atoms)),
              tol)
    picks.append(e)
    avail[e] -= 1
    atoms, comps = _add(atoms, comps, rows[e], num_atoms)
    left[t] -= 1
    if left[t] == 0:  # swap with the last, as the kernel does
      remaining[pos] = remaining[-1]
      remaining.pop()
  return np.array(picks, np.int64)
