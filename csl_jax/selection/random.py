"""The `random` selector: k candidates uniformly without replacement.

The baseline every selection method is compared with (Oren et al., 2021,
§3.1 "Uniform sampling").
"""

from typing import Sequence

import numpy as np

from csl_jax.data.tsv import Example
from csl_jax.errors import InputError
from csl_jax.selection import base


class RandomSelector:
  name = "random"

  def select(self, pool: Sequence[Example], train: Sequence[Example], k: int,
             seed: int) -> np.ndarray:
    del train  # uniform: the training set plays no part
    if k < 1:  # as every selector
      raise InputError(f"select_num must be >= 1, got {k}")
    rng = np.random.default_rng(seed)
    return rng.permutation(len(pool))[:k]


base.add(RandomSelector.name, RandomSelector)
