"""Bulk featurization of bracketed queries (GeoQuery, COGS): Numba kernels.

`structure(keys, abst, query_count, weighting, with_compounds)` gives what
`structure_kernel_reference.structure` gives (its twin: the per-query
Python of `templates`), for every query at once: the keys become one array
of token ids, a kernel parses them (`templates.parse_brackets`, the
abstraction's label chains, e.g. COGS `* sailor` -> `*` over `sailor`), and
every atom, compound and template is hash-consed to an integer while the
trees are walked: a compound is (kind, label, list of child terms), lists
are cons cells (head, tail), so equal structures get equal ids without
building a string. Strings are built once per distinct compound, template
and label, in Python. Ids are then renumbered in order of first occurrence,
the twin's order, so the matrices are identical, not just equivalent.

Why this is exact: a structure's id and its name (`templates.compounds`,
`templates.to_string`) determine each other when no label contains the
characters the names are built with (`( ) , $ >`); `structure` checks that
and otherwise returns None (the caller uses the twin).
"""

import collections
import itertools
from typing import List, Optional, Sequence

import numba
from numba import types
from numba.typed import Dict
import numpy as np
import scipy.sparse

from csl_jax import numba_fixes  # noqa: F401  pylint: disable=unused-import

WORD, OPEN, CLOSE, COMMA, EQUALS = 0, 1, 2, 3, 4
_SPECIAL = {"(": OPEN, ")": CLOSE, ",": COMMA, "=": EQUALS}
_META = set("()>,$")  # the characters compound names are built with
PAIR, H1, H2 = 0, 1, 2  # compound kinds (templates.compounds)


@numba.njit(cache=True, inline="always")
def _pack(a, b):
  """One int64 key for a pair: 0 <= a < 2^31, -1 <= b < 2^32 - 1."""
  return (a << 32) | (b + 1)


@numba.njit(cache=True, inline="always")
def _intern(table, key):
  v = table.get(key, -1)
  if v < 0:
    v = len(table)
    table[key] = v
  return v


@numba.njit(cache=True)
def _unpack(table):
  """(a, b) arrays by id of a table of packed pair keys."""
  a = np.empty(len(table), np.int64)
  b = np.empty(len(table), np.int64)
  for key, v in table.items():
    a[v] = key >> 32
    b[v] = (key & 0xFFFFFFFF) - 1
  return a, b


@numba.njit(cache=True)
def runs(tok, kind, qptr):
  """Label runs (maximal word-token sequences): run_at[i] is the id of the
  run ending at token i (a trie: id of (token, previous run)); -1 at a
  bracket, comma or `=`. Returns (run_at, token of id, previous of id)."""
  trie = Dict.empty(types.int64, types.int64)
  run_at = np.full(len(tok), -1, np.int64)
  for q in range(len(qptr) - 1):
    prev = -1
    for i in range(qptr[q], qptr[q + 1]):
      if kind[tok[i]] != WORD:
        prev = -1
        continue
      prev = _intern(trie, _pack(tok[i], prev))
      run_at[i] = prev
  token, previous = _unpack(trie)
  return run_at, token, previous


@numba.njit(cache=True)
def _grow(a, n):
  if n < len(a):
    return a
  b = np.empty(max(2 * len(a), n + 1), a.dtype)
  b[:len(a)] = a
  return b


@numba.njit(cache=True)
def forest(tok, kind, qptr, run_at, chain_ptr, chain_lab, tclass,
           num_labels, with_compounds):
  """Parses every query and interns its atoms, compounds and template.

  Args:
    tok, qptr: token ids of query q at tok[qptr[q]:qptr[q + 1]].
    kind: (V,) WORD / OPEN / CLOSE / COMMA / EQUALS per token id.
    run_at: from `runs`.
    chain_ptr, chain_lab: run r becomes the nodes chain_lab[chain_ptr[r]:
      chain_ptr[r + 1]] (labels), each the only child of the one before;
      the last gets the bracketed children.
    tclass: (2 L,) the template class of label l, at 2 l + is_leaf.
    num_labels: L.
    with_compounds: False for templates only.

  Returns:
    valid (U,) bool; troot (U,) template struct id (-1 invalid);
    aptr, alab: each valid query's node labels in preorder (atoms);
    cptr, comp, sups: each query's compound occurrences in the order of
      `templates.compounds` (struct ids) and per occurrence the struct ids
      of the compounds containing it (3 slots, -1 unused);
    tables of (a, b) by id: templates (class, child list), template lists
    (head template, tail), compounds (kind L + label, child label or term
    list), term lists (head term, tail), node signatures (label, list).
    Terms: 2 label + is_internal (a child as `label` or `label$`), or
    2 L + node signature (an internal child with its children).
  """
  num_q = len(qptr) - 1
  tmpl = Dict.empty(types.int64, types.int64)
  tlists = Dict.empty(types.int64, types.int64)
  comps = Dict.empty(types.int64, types.int64)
  lists = Dict.empty(types.int64, types.int64)
  nsigs = Dict.empty(types.int64, types.int64)
  valid = np.zeros(num_q, np.bool_)
  troot = np.full(num_q, -1, np.int64)
  aptr = np.zeros(num_q + 1, np.int64)
  cptr = np.zeros(num_q + 1, np.int64)
  alab = np.empty(1024, np.int32)
  comp = np.empty(1024, np.int32)
  sups = np.empty((1024, 3), np.int32)
  max_chain = 1
  for r in range(len(chain_ptr) - 1):
    max_chain = max(max_chain, chain_ptr[r + 1] - chain_ptr[r])
  width = 1
  for q in range(num_q):
    width = max(width, qptr[q + 1] - qptr[q])
  cap = width * max_chain + 1
  lab = np.empty(cap, np.int64)
  parent = np.empty(cap, np.int64)
  first = np.empty(cap, np.int64)
  nxt = np.empty(cap, np.int64)
  last = np.empty(cap, np.int64)
  stack = np.empty(cap, np.int64)
  mode = np.empty(cap, np.int64)
  kids = np.empty(cap, np.int64)
  order = np.empty(cap, np.int64)
  tid = np.empty(cap, np.int64)
  has_leaf = np.empty(cap, np.bool_)
  sig = np.empty(cap, np.int64)
  pair = np.empty(cap, np.int64)
  h1 = np.empty(cap, np.int64)
  h2 = np.empty(cap, np.int64)
  na = 0
  nc = 0
  for q in range(num_q):
    aptr[q + 1] = na
    cptr[q + 1] = nc
    # Parse (templates.parse_brackets, iteratively): a stack of nodes
    # waiting for children after `(` or for their argument after `=`.
    pos = qptr[q]
    hi = qptr[q + 1]
    n = 0
    sp = 0
    ok = True
    expect = True
    while True:
      if expect:
        start = pos
        while pos < hi and kind[tok[pos]] == WORD:
          pos += 1
        if pos == start:
          ok = False  # an empty label
          break
        r = run_at[pos - 1]
        par = stack[sp - 1] if sp > 0 else -1
        for c in range(chain_ptr[r], chain_ptr[r + 1]):
          lab[n] = chain_lab[c]
          parent[n] = par
          first[n] = -1
          nxt[n] = -1
          if par >= 0:
            if first[par] < 0:
              first[par] = n
            else:
              nxt[last[par]] = n
            last[par] = n
          par = n
          n += 1
        if pos < hi and (kind[tok[pos]] == EQUALS or kind[tok[pos]] == OPEN):
          stack[sp] = par
          mode[sp] = kind[tok[pos]]
          sp += 1
          pos += 1
          continue
        expect = False
      else:
        if sp == 0:
          break
        if mode[sp - 1] == EQUALS:
          sp -= 1
          continue
        if pos < hi and kind[tok[pos]] == COMMA:
          pos += 1
          expect = True
          continue
        if pos >= hi or kind[tok[pos]] != CLOSE:
          ok = False  # unbalanced
          break
        pos += 1
        sp -= 1
    if not ok or pos != hi:
      continue
    valid[q] = True
    alab = _grow(alab, na + n)
    for v in range(n):
      alab[na + v] = lab[v]
    na += n
    aptr[q + 1] = na
    # Bottom up (children have larger preorder indices than their parent).
    for v in range(n - 1, -1, -1):
      k = 0
      c = first[v]
      while c >= 0:
        kids[k] = c
        k += 1
        c = nxt[c]
      tl = -1
      for i in range(k - 1, -1, -1):
        tl = _intern(tlists, _pack(tid[kids[i]], tl))
      tid[v] = _intern(tmpl, _pack(tclass[2 * lab[v] + (k == 0)], tl))
      has_leaf[v] = False
      pair[v] = -1
      h1[v] = -1
      h2[v] = -1
      if not with_compounds or k == 0:
        continue
      any_internal = False
      grand_leaf = False
      short = -1
      for i in range(k - 1, -1, -1):
        c = kids[i]
        internal = first[c] >= 0
        short = _intern(lists, _pack(2 * lab[c] + internal, short))
        if internal:
          any_internal = True
          grand_leaf = grand_leaf or has_leaf[c]
        else:
          has_leaf[v] = True
          if k > 1:  # one child: the pair is the height-1 compound
            pair[c] = _intern(comps, _pack(PAIR * num_labels + lab[v], lab[c]))
      sig[v] = _intern(nsigs, _pack(lab[v], short))
      if has_leaf[v]:
        h1[v] = _intern(comps, _pack(H1 * num_labels + lab[v], short))
      if any_internal and (has_leaf[v] or grand_leaf):
        parts = -1
        for i in range(k - 1, -1, -1):
          c = kids[i]
          term = 2 * num_labels + sig[c] if first[c] >= 0 else 2 * lab[c]
          parts = _intern(lists, _pack(term, parts))
        h2[v] = _intern(comps, _pack(H2 * num_labels + lab[v], parts))
    troot[q] = tid[0]
    if not with_compounds:
      continue
    # Emit in templates.compounds' order: post-order, then per node its
    # (node, leaf child) pairs (with 2+ children), its height-1 and its
    # height-2 compound.
    # Reversed "node, then children right to left" is the post-order.
    m = 0
    stack[0] = 0
    sp = 1
    while sp > 0:
      sp -= 1
      v = stack[sp]
      order[m] = v
      m += 1
      c = first[v]
      while c >= 0:
        stack[sp] = c
        sp += 1
        c = nxt[c]
    need = nc + 3 * n
    comp = _grow(comp, need)
    if len(sups) < need:
      grown = np.empty((max(2 * len(sups), need + 1), 3), np.int32)
      grown[:len(sups)] = sups
      sups = grown
    for i in range(m - 1, -1, -1):
      v = order[i]
      if first[v] < 0:
        continue
      up = h2[parent[v]] if parent[v] >= 0 else -1
      c = first[v] if nxt[first[v]] >= 0 else -1  # pairs need 2 children
      while c >= 0:
        if first[c] < 0:
          comp[nc] = pair[c]
          sups[nc, 0] = h1[v]
          sups[nc, 1] = h2[v]
          sups[nc, 2] = up
          nc += 1
        c = nxt[c]
      if h1[v] >= 0:
        comp[nc] = h1[v]
        sups[nc, 0] = h2[v]
        sups[nc, 1] = up
        sups[nc, 2] = -1
        nc += 1
      if h2[v] >= 0:
        comp[nc] = h2[v]
        sups[nc, 0] = -1
        sups[nc, 1] = -1
        sups[nc, 2] = -1
        nc += 1
    cptr[q + 1] = nc
  return (valid, troot, aptr, alab[:na], cptr, comp[:nc], sups[:nc],
          _unpack(tmpl), _unpack(tlists), _unpack(comps), _unpack(lists),
          _unpack(nsigs))


@numba.njit(cache=True)
def keysers(comp, sups, cptr, mult, num_comps):
  """Per occurrence 1 - max over its supers s of P(s | c) (1 if none),
  P counted over the pool, occurrences weighted by mult[query], a super
  type counted once per occurrence (`diversity._keysers_rows`)."""
  total = np.zeros(num_comps, np.float64)
  inside = Dict.empty(types.int64, types.float64)
  for q in range(len(cptr) - 1):
    w = float(mult[q])
    for j in range(cptr[q], cptr[q + 1]):
      c = comp[j]
      total[c] += w
      for a in range(3):
        s = sups[j, a]
        if s < 0:
          continue
        seen = False
        for b in range(a):
          seen = seen or sups[j, b] == s
        if not seen:
          key = _pack(np.int64(c), np.int64(s))
          inside[key] = inside.get(key, 0.0) + w
  out = np.empty(len(comp), np.float64)
  for j in range(len(comp)):
    c = comp[j]
    worst = 0.0
    for a in range(3):
      if sups[j, a] >= 0:
        worst = max(worst, inside[_pack(np.int64(c), np.int64(sups[j, a]))]
                    / total[c])
    out[j] = 1.0 - worst
  return out


@numba.njit(cache=True)
def first_seen(stream, num):
  """(new id of each old id, in order of first occurrence; -1 never; count)."""
  new = np.full(num, -1, np.int64)
  count = 0
  for x in stream:
    if new[x] < 0:
      new[x] = count
      count += 1
  return new, count


def _renumbered(stream, names):
  """(new id of each old id, the names in new-id order): ids renumbered by
  first occurrence in `stream` (`first_seen`)."""
  new, count = first_seen(stream, len(names))
  kept = [None] * count
  for old, nid in enumerate(new.tolist()):
    if nid >= 0:
      kept[nid] = names[old]
  return new, kept


@numba.njit(cache=True)
def rows(ptr, ids, vals, use_max):
  """CSR (data, indices, indptr) with each row's ids sorted and repeats
  combined (sum or max)."""
  indptr = np.zeros(len(ptr), np.int64)
  indices = np.empty(len(ids), np.int64)
  data = np.empty(len(ids), np.float64)
  n = 0
  for q in range(len(ptr) - 1):
    lo, hi = ptr[q], ptr[q + 1]
    order = np.argsort(ids[lo:hi], kind="mergesort") + lo
    for i in range(len(order)):
      f = ids[order[i]]
      v = vals[order[i]]
      if i > 0 and indices[n - 1] == f:
        data[n - 1] = max(data[n - 1], v) if use_max else data[n - 1] + v
      else:
        indices[n] = f
        data[n] = v
        n += 1
    indptr[q + 1] = n
  return data[:n].copy(), indices[:n].copy(), indptr


# --- Python glue ----------------------------------------------------------------


def _tokenize(keys: Sequence[str]):
  """(token ids, query offsets, token strings by id)."""
  vocab = collections.defaultdict()
  vocab.default_factory = vocab.__len__  # a new token gets the next id
  lens = np.zeros(len(keys) + 1, np.int64)
  chunks = []
  step = 1 << 16
  for lo in range(0, len(keys), step):
    split = [k.split() for k in keys[lo:lo + step]]
    lens[lo + 1:lo + 1 + len(split)] = list(map(len, split))
    flat = itertools.chain.from_iterable(split)
    chunks.append(np.fromiter(map(vocab.__getitem__, flat), np.int64))
  tok = np.concatenate(chunks) if chunks else np.zeros(0, np.int64)
  return tok, np.cumsum(lens), list(vocab)


def _lists(a, b) -> List[tuple]:
  """Each cons list (head a, tail b) as a tuple; tails come first."""
  out: List[tuple] = [()] * len(a)
  for i in range(len(a)):
    out[i] = (a[i],) + (out[b[i]] if b[i] >= 0 else ())
  return out


def structure(keys: Sequence[str], abst, query_count: np.ndarray,
              weighting: str, with_compounds: bool = True):
  """As `structure_kernel_reference.structure`, or None where this path
  cannot be exact (an abstraction without label chains, a label with a
  character compound names are built with)."""
  if abst.labels is None:
    return None
  tok, qptr, words = _tokenize(keys)
  kind = np.array([_SPECIAL.get(w, WORD) for w in words], np.int64)
  run_at, run_tok, run_prev = runs(tok, kind, qptr)
  # Label chains of the distinct runs, label and class ids, in Python.
  run_text: List[str] = []
  for t, p in zip(run_tok.tolist(), run_prev.tolist(), strict=True):
    run_text.append(words[t] if p < 0 else f"{run_text[p]} {words[t]}")
  label_ids = {}
  chain_lab = []
  chain_ptr = [0]
  for text in run_text:
    chain = abst.labels(text)
    chain_lab.extend(label_ids.setdefault(l, len(label_ids)) for l in chain)
    chain_ptr.append(len(chain_lab))
  labels = list(label_ids)
  class_ids = {}
  tclass = np.array([class_ids.setdefault(abst.template_label(l, leaf),
                                          len(class_ids))
                     for l in labels for leaf in (False, True)], np.int64)
  classes = list(class_ids)
  if any(_META & set(l) or not l for l in labels) or any(
      set("(),") & set(c) or not c for c in classes):
    return None
  (valid, troot, aptr, alab, cptr, comp, sups, ttab, tltab, ctab, ltab,
   stab) = forest(tok, kind, qptr, run_at, np.array(chain_ptr, np.int64),
                  np.array(chain_lab, np.int64), tclass, len(labels),
                  with_compounds)
  del tok, run_at
  # Templates: names of the distinct template structures, then ids by first
  # occurrence among the queries (the unreadable ones: UNPARSED).
  from csl_jax.selection import diversity  # pylint: disable=g-import-not-at-top
  tl = _lists(*tltab)
  tnames: List[str] = []
  for c, l in zip(ttab[0].tolist(), ttab[1].tolist(), strict=True):
    name = classes[c]
    tnames.append(name if l < 0 else
                  f"{name}({','.join(tnames[t] for t in tl[l])})")
  troot = np.where(valid, troot, len(tnames))
  tnames.append(diversity.UNPARSED)
  new, templates = _renumbered(troot, tnames)
  template_of = new[troot]
  num_q = len(keys)
  if not with_compounds:
    empty = scipy.sparse.csr_matrix((num_q, 0))
    return template_of, templates, valid, empty, [], empty, []
  # Atoms: labels renumbered by first occurrence, counted per query.
  new, atom_names = _renumbered(alab, labels)
  atoms = scipy.sparse.csr_matrix(
      rows(aptr, new[alab], np.ones(len(alab)), False),
      shape=(num_q, len(atom_names)))
  # Compounds: names of the distinct structures, renumbered likewise.
  terms = _lists(*ltab)
  num_labels = len(labels)

  def term(t):
    if t < 2 * num_labels:
      return labels[t >> 1] + ("$" if t & 1 else "")
    return sig_names[t - 2 * num_labels]
  sig_names = [f"{labels[a]}({','.join(map(term, terms[b]))})"
               for a, b in zip(stab[0].tolist(), stab[1].tolist(), strict=True)]
  cnames = []
  for a, b in zip(ctab[0].tolist(), ctab[1].tolist(), strict=True):
    kind_, label = divmod(a, num_labels)
    if kind_ == PAIR:
      cnames.append(f"{labels[label]}>{labels[b]}")
    else:
      cnames.append(f"{labels[label]}({','.join(map(term, terms[b]))})")
  if weighting == "none":
    vals = np.ones(len(comp))
  else:
    vals = keysers(comp, sups, cptr, np.asarray(query_count, np.int64),
                   len(cnames))
  new, compound_names = _renumbered(comp, cnames)
  compounds = scipy.sparse.csr_matrix(
      rows(cptr, new[comp], vals, weighting != "none"),
      shape=(num_q, len(compound_names)))
  return (template_of, templates, valid, atoms, atom_names, compounds,
          compound_names)
