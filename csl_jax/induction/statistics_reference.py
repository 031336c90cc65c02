"""Pure-Python twin of `statistics_kernel.pair_counts`: the definition, one
example at a time, on string tokens."""

from typing import Sequence, Tuple

from csl_jax.qcfg.occurrence_reference import occurs


def pair_counts(pairs: Sequence[Tuple[Sequence[str], Sequence[str]]],
                alpha: Sequence[str], beta: Sequence[str]
                ) -> Tuple[int, int, int]:
  """(#inputs containing alpha, #outputs containing beta, #both)."""
  in_x = [occurs(alpha, x) for x, _ in pairs]
  in_y = [occurs(beta, y) for _, y in pairs]
  return sum(in_x), sum(in_y), sum(a and b for a, b in zip(in_x, in_y,
                                                           strict=True))
