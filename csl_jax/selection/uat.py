"""The `uat` selector: uniform abstract template sampling (Oren et al. §3.2).

Each draw picks an abstract template T with probability proportional to
r(T)^alpha, r(T) the number of T's pool examples not drawn yet, then one of
them uniformly; no example is drawn twice. alpha = 1 is uniform sampling of
examples without replacement; alpha = 0 is uniform over the templates with
examples left (exhausted templates drop out). This is the literal §3.2
process (the released code's `..._double_phase`). `mode="per_example"` is
the released code's default instead: one weighted sample without
replacement with example weights p(T)^(alpha - 1) (Efraimidis-Spirakis
keys), under which a template's chance falls as its examples are drawn.

Gin: `UAT.alpha`, `UAT.abstraction` ("auto" or a `templates.ABSTRACTIONS`
name), `UAT.mode` ("two_phase" | "per_example"); `UAT.runner` (Beam, with
`UAT.num_shards` and `UAT.pipeline_args`) abstracts the pool's outputs on
workers (`beam_uat.py`): the same picks.
"""

from typing import Optional, Sequence

import gin
import numpy as np

from csl_jax import configs
from csl_jax.data.tsv import Example
from csl_jax.errors import InputError
from csl_jax.selection import base
from csl_jax.selection import diversity
from csl_jax.selection import templates

MODES = ("two_phase", "per_example")


class _Fenwick:
  """Prefix sums of non-negative weights with point updates and search."""

  def __init__(self, weights: np.ndarray):
    self.n = len(weights)
    self.tree = np.zeros(self.n + 1, np.float64)
    self.tree[1:] = weights
    for i in range(1, self.n + 1):  # O(n) build
      j = i + (i & -i)
      if j <= self.n:
        self.tree[j] += self.tree[i]
    self.tree = self.tree.tolist()  # Python floats: faster scalar access

  def add(self, i: int, delta: float) -> None:
    i += 1
    while i <= self.n:
      self.tree[i] += delta
      i += i & -i

  def total(self) -> float:
    i, out = self.n, 0.0
    while i > 0:
      out += self.tree[i]
      i -= i & -i
    return out

  def find(self, target: float) -> int:
    """The first index whose prefix sum exceeds target."""
    pos, step = 0, 1 << self.n.bit_length()
    while step:
      nxt = pos + step
      if nxt <= self.n and self.tree[nxt] <= target:
        pos = nxt
        target -= self.tree[nxt]
      step >>= 1
    return min(pos, self.n - 1)


def template_order(template_of_example: np.ndarray, rng) -> list:
  """Per template, its example indices in a uniformly random order."""
  perm = rng.permutation(len(template_of_example))
  perm = perm[np.argsort(template_of_example[perm], kind="stable")]
  counts = np.bincount(template_of_example)
  return np.split(perm, np.cumsum(counts)[:-1])


def uat_indices(template_of_example: np.ndarray, k: int, alpha: float,
                seed: int, mode: str = "two_phase") -> np.ndarray:
  """k example indices (fewer if the pool is smaller), in draw order."""
  rng = np.random.default_rng(seed)
  n = len(template_of_example)
  k = min(k, n)
  if mode == "per_example":
    counts = np.bincount(template_of_example).astype(np.float64)
    weights = (counts / n)[template_of_example] ** (alpha - 1.0)
    keys = np.log(rng.random(n)) / weights  # log u^(1/w): larger first
    top = np.argpartition(-keys, k - 1)[:k] if k < n else np.arange(n)
    return top[np.argsort(-keys[top], kind="stable")]
  members = template_order(template_of_example, rng)
  remaining = np.array([len(m) for m in members], np.float64)
  tree = _Fenwick(remaining ** alpha)
  taken = np.zeros(len(members), np.int64)
  out = np.empty(k, np.int64)
  uniforms = rng.random(k)
  for step in range(k):
    t = min(tree.find(uniforms[step] * tree.total()), len(members) - 1)
    while t >= 0 and remaining[t] == 0:  # float slack at a boundary
      t -= 1
    if t < 0:  # nothing left before it: the first template with examples
      t = int(np.flatnonzero(remaining)[0])
    out[step] = members[t][taken[t]]
    taken[t] += 1
    old = remaining[t] ** alpha
    remaining[t] -= 1
    new = remaining[t] ** alpha if remaining[t] > 0 else 0.0
    tree.add(t, new - old)
  return out


@gin.configurable
class UAT:
  """Uniform abstract template sampling."""
  name = "uat"

  def __init__(self, alpha: float = 0.0, abstraction: str = "auto",
               mode: str = "two_phase", num_shards: int = 1,
               runner: Optional[str] = None,
               pipeline_args: Sequence[str] = ()):
    configs.check_init_types(self, locals())  # a gin binding of wrong type
    if not 0.0 <= alpha <= 1.0:
      raise InputError(f"UAT.alpha must be in [0, 1], got {alpha}")
    if mode not in MODES:
      raise InputError(f"UAT.mode must be one of {', '.join(MODES)}, "
                       f"got {mode!r}")
    if num_shards < 1:
      raise InputError(f"UAT.num_shards must be >= 1, got {num_shards}")
    self.alpha = float(alpha)
    self.abstraction = abstraction
    self.mode = mode
    # Where the templating runs: not in `config()`, the picks are the same.
    self.num_shards, self.runner = num_shards, runner
    self.pipeline_args = list(pipeline_args)

  def config(self):
    return {"alpha": self.alpha, "abstraction": self.abstraction,
            "mode": self.mode,
            "abstractions": templates.ABSTRACTIONS_VERSION}

  def select(self, pool: Sequence[Example], train: Sequence[Example], k: int,
             seed: int) -> np.ndarray:
    del train  # the pool's templates alone decide
    if k < 1:
      raise InputError(f"select_num must be >= 1, got {k}")
    if self.runner:
      # pylint: disable=g-import-not-at-top
      from csl_jax.selection import beam_uat
      # pylint: enable=g-import-not-at-top
      abst = templates.get(self.abstraction, pool)
      usable, tmpl = beam_uat.template_ids(
          pool, abst.name, self.num_shards, self.runner, self.pipeline_args)
      if not len(usable):  # featurize's message, "auto" resolved
        raise InputError(f"no candidate {abst.field} is a {abst.name} query")
    else:
      feats = diversity.featurize(pool, self.abstraction, structure=False)
      return select_from_features(feats, k, self.alpha, seed, self.mode)
    return usable[uat_indices(tmpl, k, self.alpha, seed, self.mode)]


def select_from_features(feats: diversity.PoolFeatures, k: int, alpha: float,
                         seed: int, mode: str = "two_phase") -> np.ndarray:
  """`UAT.select` on a featurized pool: example indices, in draw order."""
  usable = np.flatnonzero(feats.valid[feats.query_of])
  # Dense template ids, in the order of their first usable example.
  tmpl = np.unique(feats.template_of[feats.query_of[usable]],
                   return_inverse=True)[1]
  return usable[uat_indices(tmpl, k, alpha, seed, mode)]


base.add(UAT.name, UAT)
