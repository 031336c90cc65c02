"""Pure-Python twin of `sort_kernel`."""

from typing import List, Sequence


def stable_argsort(keys: Sequence[int]) -> List[int]:
  """Positions of keys in ascending order, ties in their original order
  (Python's sort is stable)."""
  return sorted(range(len(keys)), key=lambda q: keys[q])


def lower_bound(sorted_values: Sequence[int], value: int) -> int:
  """The first index whose value is >= `value` (len if none)."""
  return next((i for i, v in enumerate(sorted_values) if v >= value),
              len(sorted_values))
