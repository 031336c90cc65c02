"""A pool as integer-coded queries, templates, atoms and compounds; diversity.

`featurize` turns a candidate pool into `PoolFeatures`: examples grouped
into entity-abstracted queries (`templates.Abstraction.key`), each query's
template id, and two sparse query x feature matrices (CSR): atom counts and
compound weights. Compound weights (`weighting`):

* "none": the number of occurrences of the compound in the query.
* "keysers": Keysers et al. (2020, §2.1 and App. L.4), as summarized in
  ronentk/dbca-splitter's README (the paper text itself was not available
  here): the weight of compound G in example R is
    w(G, R) = max over occurrences g of G in R of
              (1 - max over occurrences g' of G' strictly containing g
                   of P(G' | G)),
  1 where no super-compound contains g; P(G' | G) is the fraction of G's
  occurrences in the whole pool (examples counted with multiplicity) that
  lie inside an occurrence of G'. A compound that (almost) only occurs
  inside one super-compound gets weight near 0: no double counting.

`diversity` gives the report figures of a selection (Oren et al. 2021,
Table 8 and Fig. 8): abstract templates covered, template entropy, atom
entropy H(A) and compound entropy H(C), in nats (natural log; Oren's base
is not stated). `report_rows` compares selections with random ones of the
same size; `plot_template_frequency` draws their Fig. 5/7.
"""

import dataclasses
from typing import AbstractSet, Dict, List, Mapping, Optional, Sequence, Set

from absl import logging
import numpy as np
import scipy.sparse

from csl_jax.data.tsv import Example
from csl_jax.errors import InputError
from csl_jax.files import atomic_save_figure
from csl_jax.selection import structure_kernel
from csl_jax.selection import structure_kernel_reference
from csl_jax.selection import templates as templates_lib

WEIGHTINGS = ("none", "keysers")
UNPARSED = "<unparsed>"  # the template of candidates not readable


@dataclasses.dataclass
class PoolFeatures:
  """The pool's structure, integer-coded (U queries, N examples)."""
  query_of: np.ndarray        # (N,) int64: example -> query
  query_count: np.ndarray     # (U,) int64: examples per query
  template_of: np.ndarray     # (U,) int64: query -> template
  templates: List[str]        # template id -> template string
  atoms: scipy.sparse.csr_matrix      # (U, A) atom counts
  compounds: scipy.sparse.csr_matrix  # (U, C) compound weights
  atom_names: List[str]
  compound_names: List[str]
  weighting: str
  abstraction: str
  valid: np.ndarray = None    # (U,) bool: the abstraction could read it

  def available(self) -> np.ndarray:
    """(U,) int64: how many examples of each query may be selected."""
    return np.where(self.valid, self.query_count, 0).astype(np.int64)

  @property
  def num_queries(self) -> int:
    return len(self.query_count)

  def examples_by_query(self) -> List[np.ndarray]:
    order = np.argsort(self.query_of, kind="stable")
    bounds = np.cumsum(self.query_count)[:-1]
    return np.split(order, bounds)


def featurize(pool: Sequence[Example], abstraction: str = "auto",
              weighting: str = "keysers", structure: bool = True,
              kernel=structure_kernel, what: str = "candidate"
              ) -> PoolFeatures:
  """The pool's queries, templates, atoms and weighted compounds.

  With structure=False only queries and templates (empty atom and compound
  matrices): what UAT needs, at a fraction of the cost. `kernel`: the
  module whose `structure` reads the queries (`structure_kernel`, bulk, for
  bracketed abstractions, else its per-query twin
  `structure_kernel_reference`).

  Raises:
    InputError: an unknown abstraction or weighting, an empty pool, or an
      output the abstraction cannot parse.
  """
  if weighting not in WEIGHTINGS:
    raise InputError(f"unknown compound weighting {weighting!r}; valid: "
                     f"{', '.join(WEIGHTINGS)}")
  if not pool:
    raise InputError("empty candidate pool")
  abst = templates_lib.get(abstraction, pool)
  # De-duplicate the raw texts, then by the cheap string key, before
  # parsing anything.
  text_ids: Dict[str, int] = {}
  text_of = np.fromiter(
      (text_ids.setdefault(getattr(ex, abst.field), len(text_ids))
       for ex in pool), np.int64, len(pool))
  query_ids: Dict[str, int] = {}
  query_of_text = np.fromiter(
      (query_ids.setdefault(abst.key(t), len(query_ids)) for t in text_ids),
      np.int64, len(text_ids))
  del text_ids
  query_of = query_of_text[text_of]
  query_count = np.bincount(query_of, minlength=len(query_ids))
  keys = list(query_ids)
  del query_ids
  out = kernel.structure(keys, abst, query_count, weighting, structure)
  if out is None:  # the bulk kernel cannot read these exactly
    out = structure_kernel_reference.structure(keys, abst, query_count,
                                               weighting, structure)
  (template_of, templates, valid, atoms, atom_names, compounds,
   compound_names) = out
  if not valid.any():
    raise InputError(f"no candidate {abst.field} is a {abst.name} query, "
                     f"e.g. {keys[0]!r}")
  if not valid.all():
    logging.warning("selection: %d of %d %s queries are not %s queries%s",
                    (~valid).sum(), len(valid), what, abst.name,
                    "; they are never selected" if what == "candidate"
                    else "")
  return PoolFeatures(
      query_of=query_of, query_count=query_count, template_of=template_of,
      valid=valid, templates=templates, atoms=atoms, compounds=compounds,
      atom_names=atom_names, compound_names=compound_names,
      weighting=weighting, abstraction=abst.name)


def entropy(counts: np.ndarray) -> float:
  """Entropy in nats of the distribution proportional to `counts`."""
  counts = np.asarray(counts, np.float64)
  counts = counts[counts > 0]
  if counts.size == 0:
    return 0.0
  p = counts / counts.sum()
  return max(0.0, float(-(p * np.log(p)).sum()))  # not -0.0


def _multiplicity(features: PoolFeatures, indices: np.ndarray) -> np.ndarray:
  """(U,) how often each query is in the selection; 0 for the queries the
  abstraction cannot read (their pseudo-template is not a template)."""
  mult = np.bincount(features.query_of[indices],
                     minlength=features.num_queries).astype(np.float64)
  return np.where(features.valid, mult, 0.0)


def diversity(features: PoolFeatures, indices: Sequence[int],
              train_templates: Optional[AbstractSet[str]] = None
              ) -> Dict[str, float]:
  """Templates covered, template entropy, H(A), H(C) of a selection (its
  unreadable candidates count in `size` only). With `train_templates` (the
  training set's, `templates_of`), also the templates of the selection and
  the training set together: what Oren et al.'s Table 8 counts ("seen
  during pre-training and fine-tuning")."""
  indices = np.asarray(indices, np.int64)
  mult = _multiplicity(features, indices)
  tmpl = np.bincount(features.template_of, weights=mult,
                     minlength=len(features.templates))
  out = {
      "size": int(len(indices)),
      "templates_covered": int((tmpl > 0).sum()),
      "template_entropy": entropy(tmpl),
      "atom_entropy": entropy(features.atoms.T @ mult),
      "compound_entropy": entropy(features.compounds.T @ mult),
  }
  if train_templates is not None:
    out["templates_with_train"] = len(
        {features.templates[t] for t in np.flatnonzero(tmpl > 0)}
        | set(train_templates))
  return out


def templates_of(examples: Sequence[Example], abstraction: str
                 ) -> Set[str]:
  """The templates of the examples the abstraction reads (e.g. a training
  set's, for `diversity`'s `train_templates`)."""
  feats = featurize(examples, abstraction, structure=False,
                    what="training")
  return {feats.templates[t]
          for t in np.unique(feats.template_of[feats.valid])}


def report_rows(features: PoolFeatures,
                selections: Mapping[str, Sequence[int]], seed: int = 0,
                random_repeats: int = 1,
                train_templates: Optional[AbstractSet[str]] = None,
                allowed: Optional[np.ndarray] = None
                ) -> List[Dict[str, object]]:
  """One row per selection and one per random selection of the same size.

  Random rows (`random`) average `random_repeats` uniform samples, of the
  `allowed` examples (indices) if given (a pool without some templates).
  """
  rows = []
  rng = np.random.default_rng(seed)
  # Of the examples a selector may pick (not those the abstraction cannot
  # read: they would shrink the baseline's figures).
  selectable = np.flatnonzero(features.valid[features.query_of])
  if allowed is not None:
    selectable = np.intersect1d(selectable, allowed)
  for name, idx in selections.items():
    row = {"selector": name, **diversity(features, idx, train_templates)}
    rows.append(row)
    rand = [diversity(features, rng.permutation(selectable)[:len(idx)],
                      train_templates)
            for _ in range(random_repeats)]
    rows.append({"selector": f"random (same size as {name})",
                 **{k: float(np.mean([r[k] for r in rand])) for k in rand[0]}})
  return rows


def template_frequencies(features: PoolFeatures, indices: Sequence[int]
                         ) -> np.ndarray:
  """Normalized template frequencies of a selection, by template id."""
  mult = _multiplicity(features, np.asarray(indices, np.int64))
  tmpl = np.bincount(features.template_of, weights=mult,
                     minlength=len(features.templates))
  return tmpl / max(tmpl.sum(), 1.0)


def plot_template_frequency(path: str, features: PoolFeatures,
                            selections: Mapping[str, Sequence[int]],
                            title: Optional[str] = None) -> None:
  """Oren et al. Fig. 5/7: each selection's template frequencies.

  Templates on the x axis are ranked by their frequency in the pool, so a
  uniform-over-templates selection is flat and a uniform-over-examples one
  follows the pool's decay.
  """
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  pool_freq = template_frequencies(features, np.arange(len(features.query_of)))
  order = np.argsort(-pool_freq, kind="stable")
  fig, ax = plt.subplots(figsize=(7, 4))
  ax.plot(np.arange(1, len(order) + 1), pool_freq[order], "k-", lw=1,
          label="pool")
  for name, idx in selections.items():
    freq = template_frequencies(features, idx)[order]
    ax.plot(np.arange(1, len(order) + 1), freq, ".", ms=2, label=name)
  ax.set_yscale("log")
  ax.set_xscale("log")
  ax.set_xlabel("abstract template rank (by pool frequency)")
  ax.set_ylabel("normalized template frequency in the selection")
  ax.set_title(title or f"template frequencies ({features.abstraction})")
  ax.legend(fontsize=7, markerscale=4)
  fig.tight_layout()
  atomic_save_figure(fig, path, dpi=120)
