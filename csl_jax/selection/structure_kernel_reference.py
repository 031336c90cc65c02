"""Per-query featurization in Python: the twin of `structure_kernel`.

Each query key is parsed (`abst.tree`), its template, atoms and compound
occurrences read with `templates`, and the Keysers weights computed from
dictionaries. Works for every abstraction; `structure_kernel` is the fast
path for bracketed ones and must give the same result, ids and all.

`by_example` (below) is the kernel's independent twin for GeoQuery and
COGS: it shares `templates`' label code with neither side.
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
  for occ, mult in zip(occurrences, query_count, strict=True):
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


# --- An independent twin for bracketed queries --------------------------------
# `structure` above reads trees with `templates`, whose label chains and
# template classes `structure_kernel` uses too: a bug there passes both. What
# follows is written again from the definitions (`templates`' docstring, Oren
# et al. 2021 §3.3), shares no code with the kernel or `templates`, starts
# from the raw outputs (entities abstracted here too), and names everything.

# Oren's Table 2 classes, by funql.cfg's preterminal categories.
_FUNQL = {"entity": "entity", "answer": "answer"}
_FUNQL.update(dict.fromkeys(  # CityType ... CountryType, Major
    "city capital state river place lake mountain country major".split(),
    "table"))
_FUNQL.update(dict.fromkeys((  # the XToY relations
    "area_1 density_1 population_1 size len elevation_1 elevation_2 "
    "capital_1 capital_2 loc_1 loc_2 traverse_1 traverse_2 high_point_1 "
    "high_point_2 low_point_1 low_point_2 next_to_1 next_to_2 longer "
    "higher_1 higher_2 lower_1 lower_2").split(), "property"))
_FUNQL.update(dict.fromkeys("intersection exclude".split(), "op"))
_FUNQL.update(dict.fromkeys((  # superlatives, ExtremeOne, MostFewest, ...
    "largest smallest highest lowest longest shortest largest_one "
    "smallest_one most fewest count sum").split(), "func"))

_COGS_KEPT = {"*", "entity", "agent", "theme", "recipient", "ccomp", "xcomp"}
_UPPER = set("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_LOWER = set("abcdefghijklmnopqrstuvwxyz")


def key(text: str, abstraction: str) -> str:
  """The query: GeoQuery's m0, m1, ... and numbers, COGS's capitalized
  names, each -> `entity`."""
  out = []
  for t in text.split():
    if abstraction == "geoquery":
      entity = t.isdecimal() or (t[0] == "m" and t[1:].isdecimal())
    else:
      entity = (len(t) > 1 and t[0] in _UPPER and
                all(c in _LOWER for c in t[1:]))
    out.append("entity" if entity else t)
  return " ".join(out)


def _chain(label: str, abstraction: str) -> List[str]:
  """The nodes one bracket label becomes, each over the next."""
  words = label.split()
  if abstraction == "cogs":
    if words[0] == "*" and len(words) > 1:  # `* sailor`: `*` over the noun
      return ["*", " ".join(words[1:])]
    return ["".join(words)]  # `nmod . in` -> `nmod.in`
  return [label]


def template_class(label: str, abstraction: str) -> str:
  if abstraction == "cogs":
    keep = label in _COGS_KEPT or label.startswith("nmod")
    return label if keep else "w"
  return _FUNQL.get(label, label)


class _Unreadable(Exception):
  pass


def tree(query: str, abstraction: str):
  """`f ( a , g = b )` -> (label, children), or None if not bracketed.

  A label is the words before `(`, `,`, `)` or `=`; `role = x` is a node
  `role` over x."""
  tokens = query.split()
  pos = 0

  def node():
    nonlocal pos
    words = []
    while pos < len(tokens) and tokens[pos] not in ("(", ")", ",", "="):
      words.append(tokens[pos])
      pos += 1
    if not words:
      raise _Unreadable()
    children = []
    if pos < len(tokens) and tokens[pos] == "=":
      pos += 1
      children = [node()]
    elif pos < len(tokens) and tokens[pos] == "(":
      pos += 1
      children = [node()]
      while pos < len(tokens) and tokens[pos] == ",":
        pos += 1
        children.append(node())
      if pos >= len(tokens) or tokens[pos] != ")":
        raise _Unreadable()
      pos += 1
    chain = _chain(" ".join(words), abstraction)
    out = (chain[-1], tuple(children))
    for label in reversed(chain[:-1]):
      out = (label, (out,))
    return out

  try:
    out = node()
  except _Unreadable:
    return None
  return out if pos == len(tokens) else None


def template(t, abstraction: str) -> str:
  label, children = t
  name = template_class(label, abstraction)
  if not children:
    return name
  return f"{name}({','.join(template(c, abstraction) for c in children)})"


def compound_occurrences(t) -> List[tuple]:
  """(name, node set) per compound occurrence: per node v, each (v, leaf
  child) when v has 2+ children, v with its children (height 1), and v
  with children and grandchildren (height 2, if it has grandchildren);
  each kept if it holds a leaf. A truncated internal node is `label$`."""
  nodes = []  # (label, child ids), preorder

  def number(sub):
    i = len(nodes)
    nodes.append(None)
    nodes[i] = (sub[0], [number(c) for c in sub[1]])
    return i

  number(t)
  leaf = lambda i: not nodes[i][1]
  short = lambda i: nodes[i][0] + ("" if leaf(i) else "$")
  out = []
  for v, (label, kids) in enumerate(nodes):
    if not kids:
      continue
    if len(kids) > 1:
      for c in kids:
        if leaf(c):
          out.append((f"{label}>{nodes[c][0]}", {v, c}))
    if any(leaf(c) for c in kids):
      out.append((f"{label}({','.join(short(c) for c in kids)})",
                  {v, *kids}))
    grand = [g for c in kids for g in nodes[c][1]]
    if grand and any(leaf(x) for x in kids + grand):
      parts = []
      for c in kids:
        if leaf(c):
          parts.append(nodes[c][0])
        else:
          inner = ",".join(short(g) for g in nodes[c][1])
          parts.append(f"{nodes[c][0]}({inner})")
      out.append((f"{label}({','.join(parts)})", {v, *kids, *grand}))
  return out


def _preorder(t) -> List[str]:
  return [t[0]] + [a for c in t[1] for a in _preorder(c)]


def by_example(outputs: Sequence[str], abstraction: str, weighting: str):
  """Per output: (template or None if unreadable, {atom: count},
  {compound: weight}); Keysers weights counted over all the outputs."""
  count = collections.Counter(key(o, abstraction) for o in outputs)
  read = {}  # query -> (template, atoms, [(compound, {super compounds})])
  for q in count:
    t = tree(q, abstraction)
    if t is None:
      read[q] = (None, {}, [])
      continue
    occ = compound_occurrences(t)
    with_sups = [(name, {n2 for n2, s2 in occ if s < s2}) for name, s in occ]
    read[q] = (template(t, abstraction),
               dict(collections.Counter(_preorder(t))), with_sups)
  total = collections.defaultdict(int)
  inside = collections.defaultdict(int)
  for q, (_, _, occ) in read.items():
    for name, sups in occ:
      total[name] += count[q]
      for s in sups:
        inside[name, s] += count[q]
  rows = {}
  for q, (tmpl, atom_counts, occ) in read.items():
    comp = {}
    for name, sups in occ:
      if weighting == "none":
        comp[name] = comp.get(name, 0.0) + 1.0
      else:
        w = 1.0 - max((inside[name, s] / total[name] for s in sups),
                      default=0.0)
        comp[name] = max(comp.get(name, 0.0), w)
    rows[q] = (tmpl, atom_counts, comp)
  return [rows[key(o, abstraction)] for o in outputs]
