"""What a selector is: choose k examples of a candidate pool.

Selectors (random, UAT, CMaxEnt, ...) pick a subset of a method's
candidates, given the original training set (Oren et al., 2021). They
return indices into the pool in the order they were chosen; the pipeline
writes `RUN/<method>/<selector>_<k>/synthetic.tsv` from them.
"""

from typing import Callable, Dict, List, Protocol, Sequence

import numpy as np

from csl_jax.data.tsv import Example
from csl_jax.errors import InputError


class Selector(Protocol):
  name: str

  def select(self, pool: Sequence[Example], train: Sequence[Example], k: int,
             seed: int) -> np.ndarray:
    """Indices of at most k distinct pool examples, in selection order."""


_SELECTORS: Dict[str, Callable[[], Selector]] = {}


def add(name: str, factory: Callable[[], Selector]) -> None:
  _SELECTORS[name] = factory


def get(name: str) -> Selector:
  if name not in _SELECTORS:
    raise InputError(f"unknown selector {name!r}; valid: "
                     f"{', '.join(names())}")
  return _SELECTORS[name]()


def names() -> List[str]:
  return sorted(_SELECTORS)


def parse(select) -> List[str]:
  """Selector names from None, a name, "a,b" or a list; each must exist.

  Several selectors over the same candidates compare their subsets in one
  run (or one experiment): `m_<selector>_<k>` for each.
  """
  if not select:
    return []
  items = [select] if isinstance(select, str) else list(select)
  for n in items:
    if not isinstance(n, str):
      raise InputError(f"selector {n!r} is not a name; valid: "
                       f"{', '.join(names())}")
  # `--select uat,cmaxent` as well as `--select uat cmaxent`.
  items = [part for n in items for part in n.split(",")]
  chosen = list(dict.fromkeys(n.strip() for n in items if n.strip()))
  for n in chosen:
    get(n)
  return chosen
