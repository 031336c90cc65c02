"""AugZero (Zhou et al. 2023 §4.3, App. C.3, Fig. 3): k copies of the whole
training set, copy i written in the i-th copy of the vocabulary
(`walk left and jump` -> `walk@2 left@2 and@2 jump@2`, on both sides).

No task knowledge: every token is copied, primitive or not. Copy 1 is the
training set itself (the run's original data), so the method's candidates
are copies 2..k: the training data the model sees is k times the original,
with k times its input and output vocabularies. Copies are generated one
line at a time and written as they come: memory does not grow with k.
Dev and test data stay in copy 1.

Not built: the variant of App. C.3 that mixes copies inside one example
(it needs the syntax the CSL grammar induces).
"""

import dataclasses
from typing import Iterator, Sequence, Tuple

import gin

from csl_jax.data import token_copies
from csl_jax.errors import InputError

Pair = Tuple[str, str]


@gin.configurable(module="augzero")
@dataclasses.dataclass(frozen=True)
class AugZeroConfig:
  """Attributes:
    k: copies of the vocabulary, the original included (the paper: 200).
  """
  k: int = 20

  def __post_init__(self):
    if self.k < 2:
      raise InputError(f"augzero k must be >= 2, got {self.k}")


def copies(pairs: Sequence[Pair], config: AugZeroConfig,
           source: str = None) -> Iterator[Pair]:
  """Copies 2..k of every pair, copy by copy, in the training order."""
  token_copies.check_no_separator(pairs, source)
  split = [(x.split(), y.split()) for x, y in pairs]
  vocab = sorted({t for x, y in split for t in x + y})
  for i in range(2, config.k + 1):
    copy = {t: token_copies.copy_token(t, i) for t in vocab}.__getitem__
    for x, y in split:
      yield " ".join(map(copy, x)), " ".join(map(copy, y))
