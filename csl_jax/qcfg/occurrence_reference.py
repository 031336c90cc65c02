"""Pure-Python twin of `occurrence_kernel`: brute force over substitutions.

`match_examples` and `intersect_sorted` have the kernel's signatures;
`occurs` is the literal definition on string tokens that both rest on.
"""

import itertools
from typing import Sequence

import numpy as np

from csl_jax.qcfg.rules import nt_index


def occurs(pattern: Sequence[str], tokens: Sequence[str]) -> bool:
  """Some substitution of non-empty strings for the NTs (equal for equal
  NTs) turns `pattern` into a substring of `tokens`."""
  tokens = list(tokens)
  # Necessary: the pattern's terminals are spelled as they are.
  if not {p for p in pattern if not nt_index(p)} <= set(tokens):
    return False
  n = len(tokens)
  nts = sorted({nt_index(p) for p in pattern if nt_index(p)})
  for start in range(n):
    for end in range(start + 1, n + 1):
      window = tokens[start:end]
      # Choose a length for each NT; the window must be spelled exactly.
      for lengths in itertools.product(range(1, len(window) + 1),
                                       repeat=len(nts)):
        size = dict(zip(nts, lengths, strict=True))
        out, binding, i, ok = [], {}, 0, True
        for p in pattern:
          k = nt_index(p)
          piece = window[i:i + size[k]] if k else window[i:i + 1]
          if k:
            if binding.setdefault(k, piece) != piece or len(piece) < size[k]:
              ok = False
              break
          elif piece != [p]:
            ok = False
            break
          out += piece
          i += len(piece)
        if ok and out == window:
          return True
  return False


def match_examples(flat, offsets, candidates, pattern, num_nts):
  """out[c] = the pattern occurs in example candidates[c] (int codes)."""
  del num_nts  # Scratch size for the kernel; the twin needs none.
  # Back to strings so that `occurs` is the single definition.
  symbols = [f"NT_{-c}" if c < 0 else str(c) for c in pattern]
  return np.array(
      [occurs(symbols, [str(t) for t in flat[offsets[b]:offsets[b + 1]]])
       for b in candidates], np.bool_)


def intersect_sorted(a, b):
  """Common elements of two sorted, duplicate-free id arrays."""
  return np.array(sorted(set(a.tolist()) & set(b.tolist())), a.dtype)
