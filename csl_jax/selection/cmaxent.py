"""The `cmaxent` and `cmaxent_uat` selectors (Oren et al. 2021, §3.3).

CMaxEnt: start empty; at each step pick the entity-abstracted query whose
addition maximizes H(A) + H(C) of the selection (atoms: tree nodes;
compounds: `templates.compounds`, weighted per `diversity.featurize`), and
add one of its examples not taken yet (uniformly, seeded); a query stays a
candidate while it has examples left. Exact greedy, made fast by upper
bounds on every query's score that let a step score exactly only the few
queries near the best (`cmaxent_kernel.greedy`).

CMaxEnt+UAT (`cmaxent_uat`): at each step draw an abstract template
uniformly among those with examples left, then the greedy step among its
queries.

The original training set plays no part (Oren's selection starts empty;
the selection is used for pre-training before fine-tuning on it).

Distributed (`CMaxEnt.num_shards` > 1, issue 16): the exact greedy
within each shard of the queries, then over the shards' winners
(`sharded_greedy_queries`; on Beam: `beam_cmaxent`) — an approximation,
its objective measured against the exact greedy in BENCHMARKS.md.

Gin: `CMaxEnt.abstraction`, `CMaxEnt.weighting` ("keysers" | "none"),
`CMaxEnt.tol`, `CMaxEnt.num_shards`, `CMaxEnt.runner` (Beam, e.g.
"DirectRunner") and `CMaxEnt.pipeline_args`; the same (but the sharded
ones) for `CMaxEntUAT`.
"""

from typing import List, Optional, Sequence

import gin
import numpy as np
import scipy.sparse

from csl_jax import configs
from csl_jax.data.tsv import Example
from csl_jax.errors import InputError
from csl_jax.selection import base
from csl_jax.selection import cmaxent_kernel
from csl_jax.selection import diversity
from csl_jax.selection import templates

# The smallest tie tolerance: the kernel's incremental gains and a naive
# re-score differ by rounding, so exact ties (tol 0) would go either way.
MIN_TOL = 1e-12


def _matrix(features: diversity.PoolFeatures):
  """(ptr, ids, vals, num_atoms, num_features): atoms then compounds."""
  both = scipy.sparse.hstack([features.atoms, features.compounds],
                             format="csr")
  both.sort_indices()
  return (both.indptr.astype(np.int64), both.indices.astype(np.int64),
          both.data.astype(np.float64), features.atoms.shape[1],
          both.shape[1])


def examples_for(picks: np.ndarray, features: diversity.PoolFeatures,
                 seed: int) -> np.ndarray:
  """Example indices: the j-th pick of query q is q's j-th example in a
  seeded random order."""
  rng = np.random.default_rng(seed)
  perm = rng.permutation(len(features.query_of))
  perm = perm[np.argsort(features.query_of[perm], kind="stable")]
  start = np.concatenate([[0], np.cumsum(features.query_count)[:-1]])
  # Occurrence number of each pick among the picks of its query.
  order = np.argsort(picks, kind="stable")
  sorted_picks = picks[order]
  first = np.searchsorted(sorted_picks, sorted_picks)
  rank = np.empty(len(picks), np.int64)
  rank[order] = np.arange(len(picks)) - first
  return perm[start[picks] + rank]


def greedy_queries(features: diversity.PoolFeatures, k: int,
                   tol: float = 1e-9, kernel=cmaxent_kernel) -> np.ndarray:
  """CMaxEnt's query picks (`kernel`: the module with `greedy`)."""
  ptr, ids, vals, num_atoms, num_features = _matrix(features)
  return kernel.greedy(ptr, ids, vals, num_atoms, num_features,
                       features.available(), int(k), tol)


def _rows(ptr, ids, vals, rows: np.ndarray):
  """The CSR of the given rows (queries), same feature ids."""
  sub = scipy.sparse.csr_matrix((vals, ids, ptr))[rows]
  sub.sort_indices()
  return (sub.indptr.astype(np.int64), sub.indices.astype(np.int64),
          sub.data.astype(np.float64))


def shard_greedy(matrix, avail: np.ndarray, queries: np.ndarray, k: int,
                 tol: float, kernel=cmaxent_kernel) -> np.ndarray:
  """The exact greedy within one shard (`queries`, their availability):
  the shard's winners as global query ids, in pick order."""
  ptr, ids, vals, num_atoms, num_features = matrix
  sub_avail = avail[queries]
  if not len(queries) or not sub_avail.sum():
    return np.zeros(0, np.int64)
  picks = kernel.greedy(*_rows(ptr, ids, vals, queries), num_atoms,
                        num_features, sub_avail, int(k), tol)
  return queries[picks]


def final_greedy(matrix, winners: np.ndarray, k: int, tol: float,
                 kernel=cmaxent_kernel) -> np.ndarray:
  """The exact greedy over the shards' winners (each query as often as
  the shards picked it)."""
  ptr, ids, vals, num_atoms, num_features = matrix
  union, times = np.unique(winners, return_counts=True)
  picks = kernel.greedy(*_rows(ptr, ids, vals, union), num_atoms,
                        num_features, times.astype(np.int64), int(k), tol)
  return union[picks]


def shard_of_queries(num_queries: int, num_shards: int) -> List[np.ndarray]:
  """Queries dealt round-robin into shards (query ids follow first
  occurrence in the pool, so each shard sees every part of it)."""
  return [np.arange(s, num_queries, num_shards, dtype=np.int64)
          for s in range(num_shards)]


def sharded_greedy_queries(features: diversity.PoolFeatures, k: int,
                           num_shards: int, tol: float = 1e-9,
                           kernel=cmaxent_kernel) -> np.ndarray:
  """CMaxEnt distributed (the Beam pipeline's algorithm, run locally):
  the exact greedy picks k within each of `num_shards` shards of the
  queries, then the exact greedy picks k among the shards' winners. Not
  the exact greedy's selection; BENCHMARKS.md "Issue 16" measures the
  objective H(A) + H(C) against it."""
  if num_shards < 1:
    raise InputError(f"CMaxEnt.num_shards must be >= 1, got {num_shards}")
  if num_shards == 1:
    return greedy_queries(features, k, tol, kernel)
  matrix = _matrix(features)
  avail = features.available()
  winners = np.concatenate(
      [shard_greedy(matrix, avail, q, k, tol, kernel)
       for q in shard_of_queries(len(avail), num_shards)])
  return final_greedy(matrix, winners, k, tol, kernel)


def hybrid_queries(features: diversity.PoolFeatures, k: int, seed: int,
                   tol: float = 1e-9, kernel=cmaxent_kernel) -> np.ndarray:
  """CMaxEnt+UAT's query picks (`kernel`: the module with `hybrid`)."""
  by_template = np.argsort(features.template_of, kind="stable")
  ptr, ids, vals, num_atoms, num_features = _matrix(features)
  rows = _rows(ptr, ids, vals, by_template)
  tmpl_ptr = np.zeros(len(features.templates) + 1, np.int64)
  tmpl_ptr[1:] = np.cumsum(np.bincount(features.template_of,
                                       minlength=len(features.templates)))
  u = np.random.default_rng([seed, 1]).random(int(k))
  picks = kernel.hybrid(
      *rows, num_atoms, num_features, features.available()[by_template],
      tmpl_ptr, int(k), u, tol)
  return by_template[picks]


class _Base:
  name = ""

  def __init__(self, abstraction: str = "auto", weighting: str = "keysers",
               tol: float = 1e-9, num_shards: int = 1,
               runner: Optional[str] = None,
               pipeline_args: Sequence[str] = ()):
    configs.check_init_types(self, locals())  # a gin binding of wrong type
    if weighting not in diversity.WEIGHTINGS:
      raise InputError(f"{type(self).__name__}.weighting must be one of "
                       f"{', '.join(diversity.WEIGHTINGS)}, got {weighting!r}")
    if not tol >= MIN_TOL:  # below it, float rounding breaks the ties
      raise InputError(f"{type(self).__name__}.tol must be >= {MIN_TOL:g} "
                       f"(gains within it tie; the lowest query id wins), "
                       f"got {tol}")
    self.abstraction = abstraction
    self.weighting = weighting
    self.tol = float(tol)
    if num_shards < 1:  # its type: check_init_types
      raise InputError(f"{type(self).__name__}.num_shards must be an "
                       f"integer >= 1, got {num_shards!r}")
    self.num_shards = num_shards
    if runner is not None and num_shards < 2:
      raise InputError(f"{type(self).__name__}.runner needs num_shards >= 2")
    self.runner = runner
    self.pipeline_args = tuple(pipeline_args)

  def config(self):
    config = {"abstraction": self.abstraction, "weighting": self.weighting,
              "tol": self.tol, "compounds": templates.COMPOUNDS_VERSION,
              "abstractions": templates.ABSTRACTIONS_VERSION}
    if self.num_shards > 1:  # the exact greedy's config stays as it was
      config["num_shards"] = self.num_shards  # (not the runner: same picks)
    return config

  def _queries(self, features, k, seed):
    raise NotImplementedError

  def select(self, pool: Sequence[Example], train: Sequence[Example], k: int,
             seed: int) -> np.ndarray:
    del train  # the selection starts empty (Oren §3.3)
    if k < 1:
      raise InputError(f"select_num must be >= 1, got {k}")
    features = diversity.featurize(pool, self.abstraction, self.weighting)
    return examples_for(self._queries(features, k, seed), features, seed)


@gin.configurable
class CMaxEnt(_Base):
  """Greedy compound and atom maximum entropy."""
  name = "cmaxent"

  def _queries(self, features, k, seed):
    del seed  # deterministic: ties go to the lowest query id
    if self.runner is not None:
      from csl_jax.selection import beam_cmaxent  # pylint: disable=g-import-not-at-top
      return beam_cmaxent.sharded_greedy_queries(
          features, k, self.num_shards, self.tol, self.runner,
          self.pipeline_args)
    return sharded_greedy_queries(features, k, self.num_shards, self.tol)


@gin.configurable
class CMaxEntUAT(_Base):
  """A uniform template per step, then the CMaxEnt step within it."""
  name = "cmaxent_uat"

  def _queries(self, features, k, seed):
    if self.num_shards > 1:
      raise InputError("CMaxEntUAT.num_shards: the hybrid has no "
                       "distributed version (its template draws are "
                       "sequential); use CMaxEnt.num_shards")
    return hybrid_queries(features, k, seed, self.tol)


base.add(CMaxEnt.name, CMaxEnt)
base.add(CMaxEntUAT.name, CMaxEntUAT)
