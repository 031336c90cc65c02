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

Gin: `CMaxEnt.abstraction`, `CMaxEnt.weighting` ("keysers" | "none"),
`CMaxEnt.tol`; the same for `CMaxEntUAT`.
"""

from typing import Sequence

import gin
import numpy as np
import scipy.sparse

from csl_jax.data.tsv import Example
from csl_jax.errors import InputError
from csl_jax.selection import base
from csl_jax.selection import cmaxent_kernel
from csl_jax.selection import diversity


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


def hybrid_queries(features: diversity.PoolFeatures, k: int, seed: int,
                   tol: float = 1e-9, kernel=cmaxent_kernel) -> np.ndarray:
  """CMaxEnt+UAT's query picks (`kernel`: the module with `hybrid`)."""
  by_template = np.argsort(features.template_of, kind="stable")
  ptr, ids, vals, num_atoms, num_features = _matrix(features)
  rows = scipy.sparse.csr_matrix((vals, ids, ptr))[by_template]
  rows.sort_indices()
  tmpl_ptr = np.zeros(len(features.templates) + 1, np.int64)
  tmpl_ptr[1:] = np.cumsum(np.bincount(features.template_of,
                                       minlength=len(features.templates)))
  u = np.random.default_rng([seed, 1]).random(int(k))
  picks = kernel.hybrid(
      rows.indptr.astype(np.int64), rows.indices.astype(np.int64),
      rows.data.astype(np.float64), num_atoms, num_features,
      features.available()[by_template], tmpl_ptr, int(k),
      u, tol)
  return by_template[picks]


class _Base:
  name = ""

  def __init__(self, abstraction: str = "auto", weighting: str = "keysers",
               tol: float = 1e-9):
    if weighting not in diversity.WEIGHTINGS:
      raise InputError(f"{type(self).__name__}.weighting must be one of "
                       f"{', '.join(diversity.WEIGHTINGS)}, got {weighting!r}")
    if not tol >= 0.0:
      raise InputError(f"{type(self).__name__}.tol must be >= 0, got {tol}")
    self.abstraction = abstraction
    self.weighting = weighting
    self.tol = float(tol)

  def config(self):
    return {"abstraction": self.abstraction, "weighting": self.weighting,
            "tol": self.tol}

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
    return greedy_queries(features, k, self.tol)


@gin.configurable
class CMaxEntUAT(_Base):
  """A uniform template per step, then the CMaxEnt step within it."""
  name = "cmaxent_uat"

  def _queries(self, features, k, seed):
    return hybrid_queries(features, k, seed, self.tol)


base.add(CMaxEnt.name, CMaxEnt)
base.add(CMaxEntUAT.name, CMaxEntUAT)
