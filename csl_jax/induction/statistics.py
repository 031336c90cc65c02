"""Occurrence statistics for the induction objective (CSL Eq. 7).

p(alpha | beta) is the share of training examples whose output contains
beta (under some NT substitution) whose input also contains alpha, and
p(beta | alpha) vice versa. Occurrence sets are cached per pattern.
"""

from typing import Dict, Sequence, Tuple

import numpy as np

from csl_jax.qcfg import occurrence_kernel
from csl_jax.qcfg.occurrence import OccurrenceIndex, Pattern


class PairStatistics:
  """p-hat estimates over a training set (or a seeded sample of it)."""

  def __init__(self, pairs: Sequence[Tuple[Sequence[str], Sequence[str]]],
               sample_size: int = 0, seed: int = 0):
    pairs = list(pairs)
    if 0 < sample_size < len(pairs):
      rng = np.random.default_rng(seed)
      keep = np.sort(rng.choice(len(pairs), sample_size, replace=False))
      pairs = [pairs[i] for i in keep]
    self.num_examples = len(pairs)
    self.source = OccurrenceIndex([x for x, _ in pairs])
    self.target = OccurrenceIndex([y for _, y in pairs])
    self._joint: Dict[Tuple[Pattern, Pattern], int] = {}

  def counts(self, alpha: Pattern, beta: Pattern) -> Tuple[int, int, int]:
    """(#alpha in input, #beta in output, #both) over the examples."""
    a = self.source.occurrences(alpha)
    b = self.target.occurrences(beta)
    key = (alpha, beta)
    joint = self._joint.get(key)
    if joint is None:
      joint = int(occurrence_kernel.intersect_sorted(a, b).size)
      self._joint[key] = joint
    return len(a), len(b), joint

  def conditionals(self, alpha: Pattern, beta: Pattern
                   ) -> Tuple[float, float]:
    """(p(alpha | beta), p(beta | alpha)); 0 where undefined."""
    na, nb, both = self.counts(alpha, beta)
    return (both / nb if nb else 0.0, both / na if na else 0.0)
