"""Numba kernel: does a pattern with NTs occur in a token string?

A pattern is int32 symbols: terminals >= 0, NT_k encoded as -k. It occurs in
a string if some substitution of non-empty strings for its NTs (the same
string for every occurrence of one NT) makes it a substring. The twin is
`occurrence_reference.py` (same function names).
"""

import numba
import numpy as np

from csl_jax import numba_fixes  # noqa: F401  pylint: disable=unused-import


@numba.njit(cache=True)
def _occurs_at(tokens, start, pattern, first, bind_start, bind_len, pos,
               nxt):
  """Backtracking match of the whole pattern beginning at `start`."""
  n = tokens.shape[0]
  size = pattern.shape[0]
  big = n + 1
  pos[0] = start
  t = 0
  entering = True
  while t >= 0:
    if t == size:
      return True
    p = pos[t]
    sym = pattern[t]
    limit = n - (size - t - 1)
    if entering:
      if sym >= 0:
        nxt[t] = p + 1 if (p < n and tokens[p] == sym) else big
      elif first[t]:
        nxt[t] = p + 1
      else:  # a repeated NT covers the same string again
        a = -sym - 1
        q = p + bind_len[a]
        same = q <= n
        if same:
          for d in range(bind_len[a]):
            if tokens[p + d] != tokens[bind_start[a] + d]:
              same = False
              break
        nxt[t] = q if same else big
    e = nxt[t]
    if e > limit:
      t -= 1
      entering = False
      continue
    if sym < 0 and first[t]:
      a = -sym - 1
      bind_start[a] = p
      bind_len[a] = e - p
      nxt[t] = e + 1
    else:
      nxt[t] = big
    pos[t + 1] = e
    t += 1
    entering = True
  return False


@numba.njit(cache=True)
def match_examples(flat, offsets, candidates, pattern, num_nts):
  """out[c] = the pattern occurs in example candidates[c]."""
  out = np.zeros(candidates.shape[0], np.bool_)
  size = pattern.shape[0]
  first = np.zeros(size, np.bool_)
  for t in range(size):
    first[t] = pattern[t] < 0
    for s in range(t):
      if pattern[s] == pattern[t]:
        first[t] = False
  width = max(num_nts, 1)
  bind_start = np.zeros(width, np.int64)
  bind_len = np.zeros(width, np.int64)
  pos = np.empty(size + 1, np.int64)
  nxt = np.empty(size + 1, np.int64)
  # A pattern led by an NT used once matches somewhere iff it matches at
  # 0: that NT can take every token before the match.
  once = pattern[0] < 0
  for t in range(1, size):
    if pattern[t] == pattern[0]:
      once = False
  for c in range(candidates.shape[0]):
    b = candidates[c]
    tokens = flat[offsets[b]:offsets[b + 1]]
    last = 0 if once else tokens.shape[0] - size
    for start in range(last + 1):
      if pattern[0] >= 0 and tokens[start] != pattern[0]:
        continue
      if _occurs_at(tokens, start, pattern, first, bind_start, bind_len,
                    pos, nxt):
        out[c] = True
        break
  return out


@numba.njit(cache=True)
def intersect_sorted(a, b):
  """Common elements of two sorted, duplicate-free id arrays (a merge)."""
  out = np.empty(min(a.shape[0], b.shape[0]), a.dtype)
  i = j = k = 0
  while i < a.shape[0] and j < b.shape[0]:
    if a[i] < b[j]:
      i += 1
    elif a[i] > b[j]:
      j += 1
    else:
      out[k] = a[i]
      k += 1
      i += 1
      j += 1
  return out[:k]
