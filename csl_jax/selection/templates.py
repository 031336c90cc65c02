"""Query trees, abstract templates, atoms and compounds (Oren et al., 2021).

Every structurally diverse selector sees a pool example through one dataset
`Abstraction`:

* `key(text)`: the query with its entities abstracted, as a string
  (GeoQuery `m0` -> `entity`). Examples with one key are one *query* to
  CMaxEnt (§3.3 scans entity-abstracted, de-duplicated queries and adds one
  of the query's examples). The key is a cheap regex over the text, so a
  1M-example pool is de-duplicated before anything is parsed.
* `tree(key)`: the query tree (label, children) the atoms and compounds are
  read from (§3.3: atoms are the nodes, entities abstracted).
* `template(tree)`: the abstract template (§2, Table 2): every constant
  replaced by its class (entity, table, property, op, func, ...).

Why a bracket parser and not the output CFGs: GeoQuery FunQL, COGS
variable-free forms and SMCalFlow programs are fully bracketed, so their
tree is the bracketing, read in one linear pass; a CFG parse
(`tasks/*/*.cfg`) would give the same tree at a far higher price on 10^6
candidates and fail on candidates that fall outside the CFG (methods
without an output CFG, e.g. GECA). The CFG is used where it adds
information: the FunQL classes below are the preterminal categories of
`tasks/geoquery/funql.cfg` (`CityType` -> table, `XToY` -> property, ...),
and a test checks that every terminal of that CFG has a class. SCAN
outputs are flat action sequences with no tree, so SCAN's tree is the
parse of the *command* under the SCAN grammar (a documented deviation).

Compounds (`compounds`): Oren adopts Keysers et al. (2020), "any tree of
height <= 2 that includes at least one tree terminal", without an
enumeration rule. Ours, per node v: v with all its children (height 1), v
with its children and grandchildren (height 2, when a child is internal),
and every pair (v, leaf child) when v has two children or more (with one,
the pair is the height-1 subtree); kept when they contain a leaf of the
full tree. A truncated internal node is written `label$`.
"""

import dataclasses
import re
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from csl_jax.data.tsv import Example
from csl_jax.errors import InputError

Tree = Tuple[str, tuple]  # (label, children); a leaf has no children
ENTITY = "entity"


# --- Parsers -----------------------------------------------------------------


def parse_brackets(text: str) -> Tree:
  """`f ( a , g ( b ) )` -> ('f', (('a', ()), ('g', (('b', ()),)))).

  A node's label is the tokens before its `(` joined by spaces (COGS roles
  `nmod . in` are one label); `=` separates a role from its argument and
  becomes a node `role` over the argument.

  Raises:
    InputError: unbalanced brackets or an empty label.
  """
  tokens = text.split()
  pos = 0

  def node() -> Tree:
    nonlocal pos
    label = []
    while pos < len(tokens) and tokens[pos] not in ("(", ")", ",", "="):
      label.append(tokens[pos])
      pos += 1
    if not label:
      raise InputError(f"empty label at token {pos} of {text!r}")
    name = " ".join(label)
    if pos < len(tokens) and tokens[pos] == "=":  # role = argument
      pos += 1
      return (name, (node(),))
    if pos < len(tokens) and tokens[pos] == "(":
      pos += 1
      children = [node()]
      while pos < len(tokens) and tokens[pos] == ",":
        pos += 1
        children.append(node())
      if pos >= len(tokens) or tokens[pos] != ")":
        raise InputError(f"unbalanced brackets in {text!r}")
      pos += 1
      return (name, tuple(children))
    return (name, ())

  tree = node()
  if pos != len(tokens):
    raise InputError(f"trailing tokens after position {pos} in {text!r}")
  return tree


def parse_sexpr(text: str) -> Tree:
  """Lisp style `( f a ( g b ) )` -> ('f', (('a', ()), ('g', (('b', ()),)))).

  A quoted string `" New York "` is one leaf.

  Raises:
    InputError: unbalanced brackets.
  """
  tokens = re.findall(r'"[^"]*"|[()]|[^\s()"]+', text)
  pos = 0

  def node() -> Tree:
    nonlocal pos
    if pos >= len(tokens):
      raise InputError(f"unbalanced brackets in {text!r}")
    tok = tokens[pos]
    pos += 1
    if tok == ")":
      raise InputError(f"unexpected ')' in {text!r}")
    if tok != "(":
      return (tok, ())
    if pos >= len(tokens) or tokens[pos] in ("(", ")"):
      head = "()"  # a bracket without a head symbol
    else:
      head = tokens[pos]
      pos += 1
    children = []
    while pos < len(tokens) and tokens[pos] != ")":
      children.append(node())
    if pos >= len(tokens):
      raise InputError(f"unbalanced brackets in {text!r}")
    pos += 1
    return (head, tuple(children))

  tree = node()
  if pos != len(tokens):
    raise InputError(f"trailing tokens in {text!r}")
  return tree


def to_string(tree: Tree) -> str:
  label, children = tree
  if not children:
    return label
  return f"{label}({','.join(to_string(c) for c in children)})"


def relabel(tree: Tree, fn: Callable[[str, bool], str]) -> Tree:
  """The tree with each label replaced by fn(label, is_leaf)."""
  label, children = tree
  return (fn(label, not children), tuple(relabel(c, fn) for c in children))


# --- Atoms and compounds ------------------------------------------------------


def atoms(tree: Tree) -> List[str]:
  """Every node label, in preorder (an atom per node, §3.3)."""
  out = [tree[0]]
  for child in tree[1]:
    out.extend(atoms(child))
  return out


def _short(tree: Tree) -> str:
  return tree[0] + ("$" if tree[1] else "")


# Which definitions of the abstractions (their keys, trees and templates)
# this module implements; part of every selector's stage key that reads
# them (UAT, CMaxEnt, the hybrid), so a cached selection made under other
# definitions is made again. Bump it with any change to what an abstraction
# returns. 1: SCAN*'s `p<N>` verbs, SMCalFlow's numbers, `detect`. 2:
# SMCalFlow's numbers beside a bracket.
ABSTRACTIONS_VERSION = 2

# Which definition `compounds` implements; part of CMaxEnt's stage key, so a
# cached selection made with another one is made again. 2: a node with one
# leaf child gives one compound (session 33), not also its (node, leaf) pair.
COMPOUNDS_VERSION = 2


def compounds(tree: Tree) -> List[Tuple[str, int, List[int]]]:
  """Compound occurrences: (compound string, occurrence id, super ids).

  Occurrence ids are positions in the returned list; `super ids` are the
  occurrences of this tree that strictly contain it (for Keysers weights).
  """
  out: List[Tuple[str, int, List[int]]] = []

  def add(name: str) -> int:
    out.append((name, len(out), []))
    return len(out) - 1

  def visit(node: Tree) -> Tuple[int, List[int]]:
    """Emits node's compounds; returns (its height-1 id or -1, pair ids)."""
    label, children = node
    if not children:
      return -1, []
    below = [visit(c) for c in children]
    has_leaf = any(not c[1] for c in children)
    # With one child the (node, leaf) pair is the height-1 compound itself:
    # one subtree, counted once.
    pairs = [add(f"{label}>{c[0]}") for c in children
             if not c[1]] if len(children) > 1 else []
    h1 = -1
    if has_leaf:
      h1 = add(f"{label}({','.join(_short(c) for c in children)})")
      for p in pairs:
        out[p][2].append(h1)
    if any(c[1] for c in children):  # a height-2 compound differs from h1
      grand_leaf = any(not g[1] for c in children for g in c[1])
      if has_leaf or grand_leaf:
        parts = []
        for c in children:
          if c[1]:
            parts.append(f"{c[0]}({','.join(_short(g) for g in c[1])})")
          else:
            parts.append(c[0])
        h2 = add(f"{label}({','.join(parts)})")
        for p in pairs:
          out[p][2].append(h2)
        if h1 >= 0:
          out[h1][2].append(h2)
        for child_h1, child_pairs in below:  # the children's own h1, pairs
          if child_h1 >= 0:
            out[child_h1][2].append(h2)
          for p in child_pairs:
            out[p][2].append(h2)
    return h1, pairs

  visit(tree)
  return out


# --- Dataset abstractions ----------------------------------------------------

# Classes of FunQL symbols: the preterminal categories of
# tasks/geoquery/funql.cfg (Oren Table 2: entity, table, property, op, func).
_FUNQL_CLASSES: Dict[str, str] = {}
for _w in "city capital state river place lake mountain country major".split():
  _FUNQL_CLASSES[_w] = "table"  # CityType ... CountryType, Major
for _w in ("area_1 density_1 population_1 size elevation_1 len elevation_2 "
           "capital_1 loc_1 loc_2 traverse_1 traverse_2 capital_2 "
           "high_point_1 high_point_2 low_point_1 low_point_2 next_to_1 "
           "next_to_2 longer higher_1 higher_2 lower_1 lower_2").split():
  _FUNQL_CLASSES[_w] = "property"  # the XToY relations
for _w in "intersection exclude".split():
  _FUNQL_CLASSES[_w] = "op"
for _w in ("largest smallest highest lowest longest shortest largest_one "
           "smallest_one most fewest count sum").split():
  _FUNQL_CLASSES[_w] = "func"  # superlatives, ExtremeOne, MostFewest, count
_FUNQL_CLASSES["answer"] = "answer"
FUNQL_CLASSES = dict(_FUNQL_CLASSES)

_GEO_ENTITY = re.compile(r"(?<!\S)(?:m\d+|\d+)(?!\S)")
_COGS_NAME = re.compile(r"(?<!\S)[A-Z][a-z]+(?!\S)")
# Lispress numbers may carry a long suffix (`7L`, SMCalFlow-CS's files),
# and touch a bracket there: `(nextDayOfMonth (Today) 7L)`.
_SEXPR_ENTITY = re.compile(r'"[^"]*"|(?<![^\s(])-?\d+(?:\.\d+)?L?(?![^\s)])')


@dataclasses.dataclass(frozen=True)
class Abstraction:
  """How one dataset's examples become query keys, trees and templates.

  Bracketed abstractions (GeoQuery, COGS) also give `labels` and
  `template_label`, which define `tree` and `template` (`bracketed`) and
  let `structure_kernel` featurize a whole pool at once.
  """
  name: str
  key: Callable[[str], str]  # of the example's `field`
  tree: Callable[[str], Tree]
  template: Callable[[Tree], str]
  doc: str = ""
  field: str = "output"  # the example field the query is read from
  # A `parse_brackets` label -> the labels of the nodes it becomes, each
  # the only child of the one before (the last keeps the children).
  labels: Optional[Callable[[str], Tuple[str, ...]]] = None
  # (label, is_leaf) -> the label's class in the template.
  template_label: Optional[Callable[[str, bool], str]] = None


def expand_labels(tree: Tree, labels: Callable[[str], Tuple[str, ...]]
                  ) -> Tree:
  """Each node replaced by the chain of nodes `labels(label)`."""
  label, children = tree
  chain = labels(label)
  node = (chain[-1], tuple(expand_labels(c, labels) for c in children))
  for l in reversed(chain[:-1]):
    node = (l, (node,))
  return node


def bracketed(name: str, key: Callable[[str], str],
              labels: Callable[[str], Tuple[str, ...]],
              template_label: Callable[[str, bool], str],
              doc: str) -> "Abstraction":
  """An abstraction whose tree is `parse_brackets` then `labels`, and whose
  template is the tree relabeled by `template_label`."""
  return Abstraction(
      name, key=key,
      tree=lambda text: expand_labels(parse_brackets(text), labels),
      template=lambda tree: to_string(relabel(tree, template_label)),
      doc=doc, labels=labels, template_label=template_label)


GEOQUERY = bracketed(
    "geoquery",
    key=lambda text: _GEO_ENTITY.sub(ENTITY, text),
    labels=lambda label: (label,),
    template_label=lambda w, leaf: ENTITY if w == ENTITY else
    FUNQL_CLASSES.get(w, w),
    doc="FunQL: constants m0..m9 and numbers -> entity; template classes "
    "are funql.cfg's preterminal categories (table, property, op, func).")

_COGS_KEEP = {"*", ENTITY}


def _cogs_template_label(label: str, leaf: bool) -> str:
  # Words (verbs, nouns, names) -> `w`; roles, `*` and `nmod . prep` stay.
  del leaf
  if label in _COGS_KEEP or label in _COGS_ROLES or label.startswith("nmod"):
    return label
  return "w"


_COGS_ROLES = {"agent", "theme", "recipient", "ccomp", "xcomp"}


def _cogs_labels(label: str) -> Tuple[str, ...]:
  # `* sailor` (definite) parses as one label; make `*` a node over the noun.
  if label.startswith("* "):
    return ("*", label[2:])
  return (label.replace(" ", ""),)  # `nmod . in` -> `nmod.in`


COGS = bracketed(
    "cogs",
    key=lambda text: _COGS_NAME.sub(ENTITY, text),
    labels=_cogs_labels,
    template_label=_cogs_template_label,
    doc="COGS variable-free: proper names (capitalized) -> entity; template "
    "words -> w, keeping roles, `*` and `nmod.prep`. Names keep a class of "
    "their own in templates (peers.md §3 abstracts every `Word` to w, names "
    "included): Oren's entities are constants, and a COGS name is one, so "
    "`agent = entity` and `agent = w` (a noun) are two templates (COGS "
    "train: 1,419 templates, 887 with names as w).")

# SCAN command grammar (Lake & Baroni 2018): C -> S and S | S after S | S;
# S -> V twice | V thrice | V; V -> D[1] opposite D[2] | D[1] around D[2] |
# D | U; D -> U left | U right | turn left | turn right; U -> walk | ...
_SCAN_VERB = {"walk", "look", "run", "jump"}
# SCAN*'s other primitives (Zhou et al. 2023; csl_jax/data/scan_star.py).
_SCAN_STAR_VERB = re.compile(r"p\d+")
_SCAN_CLASS = {"and": "conj", "after": "conj", "twice": "num",
               "thrice": "num", "left": "dir", "right": "dir"}


def _scan_verb(word: str) -> bool:
  return word in _SCAN_VERB or _SCAN_STAR_VERB.fullmatch(word) is not None


def _scan_tree(command: str) -> Tree:
  words = command.split()

  def phrase(ws: Sequence[str]) -> Tree:
    for conj in ("and", "after"):
      if conj in ws:
        i = ws.index(conj)
        return (conj, (phrase(ws[:i]), phrase(ws[i + 1:])))
    if ws and ws[-1] in ("twice", "thrice"):
      return (ws[-1], (phrase(ws[:-1]),))
    if len(ws) == 3 and ws[1] in ("opposite", "around"):
      return (ws[1], (verb(ws[0]), (ws[2], ())))
    if len(ws) == 2 and ws[1] in ("left", "right"):
      return (ws[1], (verb(ws[0]),))
    if len(ws) == 1 and _scan_verb(ws[0]):
      return verb(ws[0])
    raise InputError(f"not a SCAN command: {command!r}")

  def verb(w: str) -> Tree:
    if not _scan_verb(w) and w != "turn":
      raise InputError(f"not a SCAN command: {command!r}")
    return (w, ())

  return phrase(words)


def _scan_template(tree: Tree) -> str:
  return to_string(relabel(
      tree, lambda w, leaf: "verb" if _scan_verb(w) else
      _SCAN_CLASS.get(w, w)))


SCAN = Abstraction(
    "scan",
    key=lambda text: text,
    tree=_scan_tree,
    template=_scan_template,
    doc="SCAN (and SCAN*, whose verbs p4..p199 are verbs too): outputs are "
    "flat action sequences, so the tree is the "
    "command's parse under the SCAN grammar; no entities; template: "
    "verbs -> verb, left/right -> dir, twice/thrice -> num, and/after -> "
    "conj (turn, opposite, around kept).",
    field="input")


def _smcalflow_template(tree: Tree) -> str:
  # Keyword arguments (`:subject`) and the program's functions are the
  # structure; string and number constants are entities (already in key).
  return to_string(tree)


SMCALFLOW = Abstraction(
    "smcalflow",
    key=lambda text: _SEXPR_ENTITY.sub(ENTITY, text),
    tree=parse_sexpr,
    template=_smcalflow_template,
    doc="SMCalFlow-CS Lisp programs: string and number literals (`7L` "
    "too) -> entity; the template is the entity-abstracted program "
    "(functions, keyword arguments and enumerated constants such as "
    "`Monday` are the schema: entity-level only, not Oren et al.'s Table 2 "
    "classes, so on SMCalFlow-CS nearly every query is its own template).")


def _any_tree(text: str) -> Tree:
  # `( f a b )` as SMCalFlow's Lisp, `f ( a , b )` as FunQL's brackets.
  return parse_sexpr(text) if text.lstrip().startswith("(") else \
      parse_brackets(text)


LEAVES = Abstraction(
    "leaves",
    key=lambda text: text,
    tree=_any_tree,
    template=lambda tree: to_string(relabel(
        tree, lambda w, leaf: ENTITY if leaf else w)),
    doc="Any bracketed program (`( f a b )` or `f ( a , b )`), for data "
    "of your own: the template keeps the functions (the nodes with "
    "children) and makes every leaf an entity; atoms and compounds keep "
    "the leaves as they are.")

ABSTRACTIONS: Dict[str, Abstraction] = {
    a.name: a for a in (GEOQUERY, COGS, SCAN, SMCALFLOW, LEAVES)}


_SIGNS = (
    ("geoquery", lambda s: s.startswith("answer (")),
    ("smcalflow", lambda s: s.startswith("(")),
    ("scan", lambda s: all(t.startswith("I_") for t in s.split())),
)


def detect(pool: Sequence[Example]) -> str:
  """The abstraction name that fits most of the pool's first outputs.

  Most, not all: GECA's candidates include ill-formed programs (a FunQL
  `answer` without its bracket), and one of them must not turn a GeoQuery
  pool into a COGS one; those are reported as never selected instead."""
  sample = [ex.output for ex in pool[:100]]
  if not sample:
    raise InputError("empty candidate pool")
  for name, fits in _SIGNS:
    if 2 * sum(map(fits, sample)) > len(sample):
      return name
  return "cogs"


def get(name: str, pool: Sequence[Example] = ()) -> Abstraction:
  """The named abstraction; "auto" detects it from the pool.

  Raises:
    InputError: an unknown name.
  """
  if name == "auto":
    name = detect(pool)
  if name not in ABSTRACTIONS:
    raise InputError(f"unknown abstraction {name!r}; valid: auto, "
                     f"{', '.join(sorted(ABSTRACTIONS))}")
  return ABSTRACTIONS[name]
