"""K× primitive augmentation (Zhou et al. 2023 §3, App. C.1; Jiang et al.
2022): new primitives that copy a primitive's behaviour.

1. Primitives: the training set's lexicon (`csl_jax.data.lexicon`, Eq. 1):
   input tokens and output tokens that occur in exactly the same examples.
   Tokens with the same occurrences form one unit (GeoQuery's `sea level`
   -> `0 elevation_2`) and are copied together, so copies stay a bijection.
   No task knowledge: SCAN's six primitives and GeoQuery's entity
   placeholders come out of the data.
2. Each unit has K + 1 forms (App. C.1: "one of its K+1 mutated form
   (walk, walk1, ..., walkK)"): itself (copy 1) and copies 2..K + 1
   (`jump@2`, `I_JUMP@2`; `csl_jax.data.token_copies`); `forms = "k"`
   gives K, itself and K - 1 copies (App. C.2, GeoQuery: "19 new copies
   for the x20 experiments"; gin/primaug/geoquery.gin). For each training
   example with primitives, up to 2K attempts each draw a form per unit
   (uniformly, independently); new distinct pairs are kept until K - 1 of
   them. With `attempts = 0` every example with primitives gets exactly
   K - 1 (App. C.2: "every example gets the same number of augmented
   versions"): draws go on until K - 1 distinct new ones (with one unit,
   K - 1 of its copies in a random order).

So the augmented set, original included, is at most K times the original
("x20 = 20 times": the ambiguity of §3 resolved as in
`../shared/design/peers.md` §4.1). Mapping every copy back to its original
gives back the source example, so the new pairs are as correct as the
training pairs.
"""

import collections
import dataclasses
import time
from typing import Any, Dict, Iterator, List, Sequence, Tuple

import gin
import numpy as np

from csl_jax.data import lexicon as lexicon_lib
from csl_jax.data import token_copies
from csl_jax.errors import InputError

Pair = Tuple[str, str]


FORMS = ("k_plus_1", "k")


@gin.configurable(module="primaug")
@dataclasses.dataclass(frozen=True)
class PrimAugConfig:
  """Attributes:
    factor: K: the augmented set is at most K times the original (the
      paper: 2, 20, 200).
    forms: "k_plus_1": each primitive has K + 1 forms, itself and K copies
      (App. C.1, SCAN); "k": K forms, itself and K - 1 copies (App. C.2,
      GeoQuery's entities).
    attempts: draws per example, at most, as a multiple of K (paper: 2);
      0: exactly K - 1 new versions of every example with primitives (App.
      C.2, GeoQuery; gin/primaug/geoquery.gin).
    seed: seeds the draws.
  """
  factor: int = 20
  forms: str = "k_plus_1"
  attempts: int = 2
  seed: int = 0

  def __post_init__(self):
    from csl_jax import configs  # pylint: disable=g-import-not-at-top
    configs.check_types(self)
    if self.factor < 2:
      raise InputError(f"primaug factor must be >= 2, got {self.factor}")
    if self.forms not in FORMS:
      raise InputError(f"primaug forms: {self.forms!r}; one of "
                       f"{', '.join(FORMS)}")
    if self.attempts < 0:
      raise InputError(f"primaug attempts must be >= 1, or 0 (exactly K - 1 "
                       f"new versions per example), got {self.attempts}")


def units(pairs: Sequence[Pair]) -> List[Tuple[Tuple[str, ...],
                                               Tuple[str, ...]]]:
  """The lexicon's pairs grouped by occurrence: (input tokens, output
  tokens) that are copied together, sorted."""
  # Pairs of one unit share their occurrences: group by them.
  groups = collections.defaultdict(lambda: (set(), set()))
  occurs = {}
  for i, (x, y) in enumerate(pairs):
    for side, text in ((0, x), (1, y)):
      for t in dict.fromkeys(text.split()):  # once per example: a set
        occurs.setdefault((side, t), []).append(i)
  for v, w in lexicon_lib.lexicon(pairs):
    key = tuple(occurs[(0, v)])
    groups[key][0].add(v)
    groups[key][1].add(w)
  return sorted((tuple(sorted(a)), tuple(sorted(b)))
                for a, b in groups.values())


def _draws(rng: np.random.Generator, num_units: int, config: PrimAugConfig
           ) -> Iterator[Tuple[int, ...]]:
  """One example's draws of a form (1..number of forms) per unit; a draw
  counts when its forms are new."""
  k = config.factor
  forms = num_forms(config)
  if config.attempts:  # all of them at once
    yield from map(tuple, rng.integers(
        1, forms + 1, (config.attempts * k, num_units)).tolist())
  elif num_units == 1:  # exactly: K - 1 of the copies
    yield from ((int(f),) for f in rng.permutation(np.arange(2, forms + 1)))
  else:  # exactly: forms^n - 1 >= K - 1 new ones exist; collisions are rare
    while True:
      yield tuple(rng.integers(1, forms + 1, num_units).tolist())


def num_forms(config: PrimAugConfig) -> int:
  """A primitive's forms, itself included."""
  return config.factor + (config.forms == "k_plus_1")


def augment(pairs: Sequence[Pair], config: PrimAugConfig,
            source: str = None) -> Tuple[Iterator[Pair], Dict[str, Any]]:
  """The new pairs (a generator, in example order) and a stats dict that is
  complete once the generator is exhausted."""
  token_copies.check_no_separator(pairs, source)
  found = units(pairs)
  unit_in, unit_out = {}, {}
  for u, (ins, outs) in enumerate(found):
    unit_in.update((t, u) for t in ins)
    unit_out.update((t, u) for t in outs)
  stats = {"factor": config.factor, "forms": num_forms(config),
           "attempts_per_example":  # 0: exact
           config.attempts * config.factor, "seed": config.seed,
           "num_original": len(pairs), "num_units": len(found),
           "units": [[list(a), list(b)] for a, b in found],
           "num_with_primitives": 0, "generated": 0, "draws": 0,
           "per_example": {}}

  def generate():
    start = time.time()
    per_example = collections.Counter()
    for i, (x, y) in enumerate(pairs):
      present = sorted({unit_in[t] for t in x.split() if t in unit_in})
      if not present:
        continue
      stats["num_with_primitives"] += 1
      draws = _draws(np.random.default_rng([config.seed, i]), len(present),
                     config)
      seen = {(1,) * len(present)}  # all copy 1: the example itself
      new = 0
      for row in draws:
        if new == config.factor - 1:
          break
        stats["draws"] += 1
        if row in seen:
          continue
        seen.add(row)
        new += 1
        forms = dict(zip(present, row, strict=True))
        yield (" ".join(token_copies.copy_token(t, forms[unit_in[t]])
                        if t in unit_in else t for t in x.split()),
               " ".join(token_copies.copy_token(t, forms[unit_out[t]])
                        if t in unit_out else t for t in y.split()))
      per_example[new] += 1
    stats["generated"] = sum(k * v for k, v in per_example.items())
    stats["per_example"] = {str(k): v for k, v in sorted(per_example.items())}
    stats["seconds"] = round(time.time() - start, 3)

  return generate(), stats
