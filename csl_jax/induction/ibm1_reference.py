"""Pure-Python twin of `ibm1_kernel.em`: IBM Model 1's EM as the textbook
writes it, on words, sentence by sentence (the same order of sums)."""

from typing import Dict, Sequence, Tuple

NULL = "<NULL>"


def em(pairs: Sequence[Tuple[Sequence[str], Sequence[str]]],
       num_iterations: int) -> Dict[Tuple[str, str], float]:
  """t(f | e) for every co-occurring (e, f) (e = NULL included) after
  `num_iterations` from the uniform 1 / |target vocabulary|."""
  targets = {f for _, tgt in pairs for f in tgt}
  table = {(e, f): 1.0 / max(len(targets), 1)
           for src, tgt in pairs for e in (*src, NULL) for f in tgt}
  for _ in range(num_iterations):
    counts = {key: 0.0 for key in table}
    for src, tgt in pairs:
      for f in tgt:
        norm = 0.0
        for e in (*src, NULL):
          norm += table[e, f]
        for e in (*src, NULL):
          counts[e, f] += table[e, f] / norm
    totals: Dict[str, float] = {}
    for (e, f), c in counts.items():
      totals[e] = totals.get(e, 0.0) + c
    table = {(e, f): c / totals[e] for (e, f), c in counts.items()}
  return table
