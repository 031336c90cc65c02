"""Per-query featurization in Python: the twin of `structure_kernel`.

Each query key is parsed (`abst.tree`), its template, atoms and compound
occurrences read with `templates`, and the Keysers weights computed from
dictionaries. Works for every abstraction; `structure_kernel` is the fast
path for bracketed ones and must give the same result.
"""

import collections
from typing import Dict, List, Sequence

import numpy as np
import scipy.sparse

from csl_jax.errors import InputError
from csl_jax.selection import templates as templates_lib


def _csr(rows: List[Dict[int, float]], width: int) -> scipy.sparse.csr_matrix:
  ptr = np.zeros(len(rows) + 1, np.int64)
  ptr[1:] = np.cumsum([len(r) for r in rows])
  ids = np.fromiter((i for r in rows for i in sorted(r)), np.int64, ptr[-1])
  vals = np.fromiter((r[i] for r in rows for i in sorted(r)), np.float64,
                     ptr[-1])
  return scipy.sparse.csr_matrix((vals, ids, ptr), shape=(len(rows), width))


def keysers_rows(occurrences, query_count) -> List[Dict[int, float]]:
  """Per query {compound: w(G, R)}, P(G'|G) counted over the whole pool."""
  occ_total: Dict[int, float] = collections.defaultdict(float)
  inside: Dict[tuple, float] = collections.defaultdict(float)
  for occ, mult in zip(occurrences, query_count):
    for c, sups in occ:
      occ_total[c] += mult
      for s in set(sups):  # g counts once per super-compound type G'
        inside[(c, s)] += mult
  rows = []
  for occ in occurrences:
    row: Dict[int, float] = {}
    for c, sups in occ:
      worst = max((inside[(c, s)] / occ_total[c] for s in sups), default=0.0)
      row[c] = max(row.get(c, 0.0), 1.0 - worst)
    rows.append(row)
  return rows


def structure(keys: Sequence[str], abst, query_count: np.ndarray,
              weighting: str, with_compounds: bool = True):
  """(template_of, templates, valid, atoms, atom_names, compounds,
  compound_names) of the queries `keys` (`diversity.featurize`)."""
  from csl_jax.selection import diversity  # pylint: disable=g-import-not-at-top
  template_ids: Dict[str, int] = {}
  atom_ids: Dict[str, int] = {}
  comp_ids: Dict[str, int] = {}
  template_of = np.zeros(len(keys), np.int64)
  atom_rows: List[Dict[int, float]] = []
  occurrences = []  # per query: [(compound id, [super compound ids])]
  valid = np.ones(len(keys), bool)
  for q, key in enumerate(keys):
    try:
      tree = abst.tree(key)
    except InputError:
      # A candidate the abstraction cannot read (e.g. an ill-formed GECA
      # output) is never selected; it keeps an empty row for the figures.
      valid[q] = False
      template_of[q] = template_ids.setdefault(diversity.UNPARSED,
                                               len(template_ids))
      atom_rows.append({})
      occurrences.append([])
      continue
    template_of[q] = template_ids.setdefault(abst.template(tree),
                                             len(template_ids))
    if not with_compounds:
      continue
    row: Dict[int, float] = collections.defaultdict(float)
    for a in templates_lib.atoms(tree):
      row[atom_ids.setdefault(a, len(atom_ids))] += 1.0
    atom_rows.append(row)
    occ = templates_lib.compounds(tree)
    cids = [comp_ids.setdefault(name, len(comp_ids)) for name, _, _ in occ]
    occurrences.append([(cids[i], [cids[s] for s in sups])
                        for i, (_, _, sups) in enumerate(occ)])
  comp_rows: List[Dict[int, float]] = []
  if not with_compounds:
    atom_rows = comp_rows = [{} for _ in keys]
  elif weighting == "none":
    for occ in occurrences:
      row = collections.defaultdict(float)
      for c, _ in occ:
        row[c] += 1.0
      comp_rows.append(row)
  else:
    comp_rows = keysers_rows(occurrences, query_count)
  return (template_of, list(template_ids), valid,
          _csr(atom_rows, len(atom_ids)), list(atom_ids),
          _csr(comp_rows, len(comp_ids)), list(comp_ids))
