"""COGS (Kim and Linzen, 2020): loading, and CSL's variable-free outputs.

COGS logical forms (LFs) use variables `x _ i`, where `i` is the 0-based
position of the word in the sentence that introduces the entity or event:

  The girl needed to cook .
  * girl ( x _ 1 ) ; need . agent ( x _ 2 , x _ 1 ) AND
  need . xcomp ( x _ 2 , x _ 4 ) AND cook . agent ( x _ 4 , x _ 1 )

CSL (Qiu et al., 2022, Appendix A) replaces every variable by the subtree it
heads, `label ( role = child , ... )`, roles in LF order:

  need ( agent = * girl , xcomp = cook ( agent = * girl ) )

`*` marks definites, proper names stay as they are, and the controlled
subject of an `xcomp` (always the first argument of the governing verb) is
repeated. `to_varfree` and `from_varfree` convert both ways; the reverse
reads the variable indices off the sentence and reproduces the LF exactly,
using the order in which COGS writes conjuncts (checked on all 51,155 lines
of train, dev, test and gen by scripts/reproduce_cogs_varfree.py):

  1. each definite as `* noun ( x _ i ) ;`, by increasing `i`;
  2. then the other conjuncts joined by ` AND `, ordered by the index of
     their first argument; for one index, the noun predicate `noun ( x _ i )`
     comes before its `noun . nmod . prep ( x _ i , ... )`, and the roles of
     an event keep their LF order, which is also the order of their words.

To find the indices, the reverse linearises the tree in English word order
(an event's first argument, i.e. its subject, then the event, then its other
arguments; a noun, then its `nmod`; a repeated control subject is silent) and
pairs it with the sentence's content words: every word except COGS's closed
class (`a`, `the`, `was`, `by`, `to`, `that`, `.` and the `nmod`
prepositions of the tree). Nouns and names must match their word (nouns
lower-cased: `TV` is `tv`); a verb takes whatever word is in its slot, so no
lexicon of verb forms is needed.

Primitive rows (a single word) have a lambda term as LF, e.g.
`LAMBDA a . LAMBDA e . roll . theme ( e , a )`, or the name itself. With
`primitives="word"` (CSL's form) the variable-free output is the word; with
`primitives="lambda"` the lambda term is kept, so the round trip is exact.
A word alone is reversible only for proper names: `roll` could be a noun or
a verb with an agent, a theme or both, and nothing in the sentence says which.
"""

import dataclasses
import io
import os
import re
from typing import List, NamedTuple, Optional, Sequence, Tuple, Union

from csl_jax.data import tsv
from csl_jax.errors import InputError
from csl_jax.files import read_text

PRIMITIVE_MODES = ("word", "lambda")
# COGS's closed-class words (lower-cased); `nmod` prepositions are added from
# the tree being converted.
FUNCTION_WORDS = frozenset(["a", "the", "was", "by", "to", "that", "."])
_SPECIAL = frozenset(["(", ")", ",", "=", ".", ";", "*", "_", "AND", "LAMBDA"])
_WORD = re.compile(r"^[^\s().,=;*_]+$")
_NMOD = "nmod"


class CogsExample(NamedTuple):
  input: str
  output: str
  category: Optional[str] = None  # Third column of the original release.


def load_cogs(path: str, skip_malformed: bool = False,
              stats: Optional[tsv.ReadStats] = None) -> List[CogsExample]:
  """Reads a COGS TSV: `sentence<TAB>lf[<TAB>category]` per line.

  Lines may have 2 or 3 columns; `category` is None for 2-column lines (and
  for an empty third column). Malformed lines are InputErrors naming the file
  and line, or are skipped and counted in `stats` with `skip_malformed`.
  """
  path = os.fspath(path)
  # read_text names the line of bytes that are not UTF-8.
  stats = stats if stats is not None else tsv.ReadStats()
  rows = tsv.parse_lines(io.StringIO(read_text(path), newline=None), path,
                         skip_malformed, (2, 3), stats)
  if not rows:  # as tsv.read_tsv: a part without an example is no part
    raise InputError("no examples: the file is empty or has only blank "
                     "lines" if not stats.num_skipped else
                     f"no examples: all {stats.num_skipped} lines are "
                     "malformed and were skipped", path)
  return [CogsExample(r[0], r[1], (r[2] or None) if len(r) > 2 else None)
          for r in rows]


# ---------------------------------------------------------------- tokens --


class _Tokens:
  """A cursor over space-separated tokens that raises readable errors."""

  def __init__(self, text: str, what: str):
    self.text, self.what = text, what
    self.toks = text.split()
    self.pos = 0

  def peek(self, ahead: int = 0) -> Optional[str]:
    i = self.pos + ahead
    return self.toks[i] if i < len(self.toks) else None

  def error(self, expected: str) -> InputError:
    got = self.peek()
    at = f"token {self.pos + 1} {got!r}" if got is not None else "the end"
    return InputError(f"bad {self.what}: expected {expected} at {at} in "
                      f"{self.text!r}")

  def take(self, expected: Optional[str] = None, desc: str = "") -> str:
    tok = self.peek()
    ok = tok is not None and (tok == expected if expected is not None else
                              tok not in _SPECIAL and _WORD.match(tok))
    if not ok:
      raise self.error(repr(expected) if expected is not None else desc)
    self.pos += 1
    return tok

  def done(self) -> bool:
    return self.pos == len(self.toks)


# ------------------------------------------------------- logical forms --

Arg = Union[int, str]  # A variable index or a proper name.


class _Conj(NamedTuple):
  pred: Tuple[str, ...]  # ("cake", "nmod", "in")
  args: Tuple[Arg, ...]


def _parse_arg(t: _Tokens, lambda_vars: Sequence[str]) -> Arg:
  if lambda_vars:
    tok = t.take(desc="a lambda variable")
    if tok not in lambda_vars:
      raise InputError(f"bad logical form: unbound variable {tok!r} in "
                       f"{t.text!r}")
    return tok
  if t.peek() == "x" and t.peek(1) == "_":
    t.pos += 2
    tok = t.take(desc="a variable index")
    if not tok.isdigit():
      raise InputError(f"bad logical form: variable index {tok!r} is not a "
                       f"number in {t.text!r}")
    return int(tok)
  tok = t.take(desc="`x _ N` or a proper name")
  if not tok[0].isupper():
    raise InputError(f"bad logical form: argument {tok!r} is neither `x _ N` "
                     f"nor a capitalised proper name in {t.text!r}")
  return tok


def _parse_conj(t: _Tokens, lambda_vars: Sequence[str] = ()) -> _Conj:
  pred = [t.take(desc="a predicate")]
  while t.peek() == ".":
    t.pos += 1
    pred.append(t.take(desc="a predicate part"))
  t.take("(")
  args = [_parse_arg(t, lambda_vars)]
  if t.peek() == ",":
    t.pos += 1
    args.append(_parse_arg(t, lambda_vars))
  t.take(")")
  if (len(args) == 1) != (len(pred) == 1):
    raise InputError(f"bad logical form: {' . '.join(pred)} has {len(args)} "
                     "argument(s); nouns take 1, `head . role` predicates 2, "
                     f"in {t.text!r}")
  return _Conj(tuple(pred), tuple(args))


def _parse_body(t: _Tokens, lambda_vars: Sequence[str] = ()) -> List[_Conj]:
  conjs = [_parse_conj(t, lambda_vars)]
  while t.peek() == "AND":
    t.pos += 1
    conjs.append(_parse_conj(t, lambda_vars))
  if not t.done():
    raise t.error("'AND' or the end")
  return conjs


def _parse_lambda(lf: str) -> str:
  """Validates a primitive's `LAMBDA a . ... body`; returns its word."""
  t = _Tokens(lf, "logical form")
  bound = []
  while t.peek() == "LAMBDA":
    t.pos += 1
    bound.append(t.take(desc="a lambda variable"))
    t.take(".")
  words = {c.pred[0] for c in _parse_body(t, bound)}
  if not bound or len(words) != 1:
    raise InputError("bad logical form: a primitive's lambda term must bind "
                     f"variables and use one predicate word, in {lf!r}")
  return words.pop()


def is_primitive(lf: str) -> bool:
  """Whether an LF is a primitive row's: a lambda term or a bare name."""
  toks = lf.split()
  return toks[:1] == ["LAMBDA"] or len(toks) == 1


def _primitive_word(lf: str, sentence: str) -> str:
  """The word of a primitive row (lambda term or bare name), checked."""
  if lf.split()[0] == "LAMBDA":
    word = _parse_lambda(lf)
  else:
    word = lf.strip()
    if not (_WORD.match(word) and word[0].isupper()):
      raise InputError(f"bad logical form: a one-word LF must be a proper "
                       f"name, got {lf!r}")
  if sentence.split() != [word]:
    raise InputError(f"primitive LF {lf!r} does not match its sentence "
                     f"{sentence!r} (expected the single word {word!r})")
  return word


@dataclasses.dataclass
class _Var:
  """One variable of an LF: a noun (entity) or an event."""
  index: int
  label: str = ""
  definite: bool = False
  is_noun: bool = False
  heads: set = dataclasses.field(default_factory=set)
  edges: List[Tuple[str, Arg]] = dataclasses.field(default_factory=list)


def _lf_vars(lf: str, num_words: int) -> dict:
  """Parses a (non-primitive) LF into its variables, by index."""
  t = _Tokens(lf, "logical form")
  variables = {}

  def var(i: int) -> _Var:
    if i >= num_words:
      raise InputError(f"x _ {i} is past the end of the sentence "
                       f"({num_words} words) in {lf!r}")
    return variables.setdefault(i, _Var(i))

  def set_noun(i: int, noun: str, definite: bool) -> None:
    if var(i).is_noun:
      raise InputError(f"x _ {i} has two noun predicates in {lf!r}")
    variables[i].label, variables[i].definite = noun, definite
    variables[i].is_noun = True

  while t.peek() == "*":
    t.pos += 1
    noun = t.take(desc="a noun")
    t.take("(")
    arg = _parse_arg(t, ())
    t.take(")")
    t.take(";")
    if not isinstance(arg, int):
      raise InputError(f"bad logical form: `* {noun}` needs a variable "
                       f"in {lf!r}")
    set_noun(arg, noun, True)
  for conj in _parse_body(t):
    first = conj.args[0]
    if not isinstance(first, int):
      raise InputError(f"bad logical form: the first argument of "
                       f"{' . '.join(conj.pred)} must be a variable in {lf!r}")
    if len(conj.args) == 1:
      set_noun(first, conj.pred[0], False)
    else:
      var(first).heads.add(conj.pred[0])
      variables[first].edges.append((" . ".join(conj.pred[1:]), conj.args[1]))
      if isinstance(conj.args[1], int):
        var(conj.args[1])
  for v in variables.values():
    nmods = [_is_nmod(role) for role, _ in v.edges]
    if v.is_noun and (not all(nmods) or v.heads - {v.label}):
      raise InputError(f"noun x _ {v.index} ({v.label}) may only have "
                       f"`{v.label} . nmod . P` predicates in {lf!r}")
    if not v.is_noun:
      if not v.edges:
        raise InputError(f"x _ {v.index} has no predicate in {lf!r}")
      if any(nmods) or len(v.heads) != 1:
        raise InputError(f"event x _ {v.index} mixes verbs {sorted(v.heads)} "
                         f"or has an nmod in {lf!r}")
      v.label = next(iter(v.heads))
  return variables


def _is_nmod(role: str) -> bool:
  return role.split(" . ")[0] == _NMOD


def _render(variables: dict, i: int, path: Tuple[int, ...], lf: str,
            seen: set) -> str:
  """The variable-free subtree headed by x _ i (shared subtrees repeat)."""
  if i in path:
    raise InputError(f"x _ {i} is an argument of itself in {lf!r}")
  seen.add(i)
  v = variables[i]
  label = f"* {v.label}" if v.definite else v.label
  if not v.edges:
    return label
  args = []
  for role, arg in v.edges:
    if isinstance(arg, int):
      arg = _render(variables, arg, path + (i,), lf, seen)
    args.append(f"{role} = {arg}")
  return f"{label} ( {' , '.join(args)} )"


def to_varfree(lf: str, sentence: str, primitives: str = "word") -> str:
  """Converts a COGS logical form to CSL's variable-free form.

  Args:
    lf: the COGS logical form (tokens separated by spaces).
    sentence: its sentence. Variable indices must fall inside it and each
      noun variable must point at its noun (lower-cased), as in COGS.
    primitives: what to do with primitive rows, whose LF is a lambda term
      (`LAMBDA a . LAMBDA e . smile . agent ( e , a )`) or a bare proper
      name. "word" (CSL's form) gives the word itself: `smile`; this loses
      the lambda term (noun or verb, which roles) and `from_varfree` cannot
      invert it except for names. "lambda" keeps the lambda term unchanged,
      so the round trip is exact.

  Returns:
    The variable-free form, e.g. `eat ( agent = Emma , theme = * ring )`.

  Raises:
    InputError: bad LF syntax, or an LF that is not a tree of COGS
      predicates rooted in one verb. The message names no file: callers
      re-raise with source and line.
  """
  if primitives not in PRIMITIVE_MODES:
    raise ValueError(f"primitives must be one of {PRIMITIVE_MODES}, got "
                     f"{primitives!r}")
  if not lf.strip():
    raise InputError("empty logical form")
  if is_primitive(lf):
    word = _primitive_word(lf, sentence)
    return " ".join(lf.split()) if primitives == "lambda" else word
  words = sentence.split()
  variables = _lf_vars(lf, len(words))
  for v in variables.values():
    if v.is_noun and words[v.index].lower() != v.label:
      raise InputError(f"x _ {v.index} is {v.label!r} but word {v.index} of "
                       f"{sentence!r} is {words[v.index]!r}")
  referenced = {a for v in variables.values() for _, a in v.edges
                if isinstance(a, int)}
  roots = sorted(set(variables) - referenced)
  if len(roots) != 1:
    raise InputError(f"expected one root variable (the main verb), found "
                     f"{['x _ %d' % r for r in roots]} in {lf!r}")
  if variables[roots[0]].is_noun:
    raise InputError(f"the root x _ {roots[0]} must be a verb, not the noun "
                     f"{variables[roots[0]].label!r}, in {lf!r}")
  seen = set()
  varfree = _render(variables, roots[0], (), lf, seen)
  if seen != set(variables):
    raise InputError(f"variables {sorted(set(variables) - seen)} are not "
                     f"reached from the main verb in {lf!r}")
  return varfree


# ------------------------------------------------------ variable-free --


@dataclasses.dataclass(eq=False)
class _Node:
  """A node of a variable-free tree; `index` is filled in by alignment."""
  label: str
  definite: bool = False
  children: List[Tuple[str, "_Node"]] = dataclasses.field(default_factory=list)
  index: Optional[int] = None
  # For a repeated control subject (not in the sentence): what it repeats.
  controller: Optional["_Node"] = None

  @property
  def is_event(self) -> bool:
    return any(not _is_nmod(role) for role, _ in self.children)

  @property
  def is_name(self) -> bool:
    return not self.definite and not self.children and self.label[0].isupper()

  def key(self) -> tuple:
    return (self.label, self.definite,
            tuple((r, c.key()) for r, c in self.children))


def _parse_node(t: _Tokens) -> _Node:
  definite = t.peek() == "*"
  if definite:
    t.pos += 1
  node = _Node(t.take(desc="a word"), definite)
  if t.peek() == "(":
    t.pos += 1
    while True:
      role = [t.take(desc="a role")]
      while t.peek() == ".":
        t.pos += 1
        role.append(t.take(desc="a role part"))
      t.take("=")
      node.children.append((" . ".join(role), _parse_node(t)))
      if t.peek() != ",":
        break
      t.pos += 1
    t.take(")")
  return node


def _check_node(node: _Node, varfree: str) -> None:
  """Checks one node's shape (recursively) and marks control subjects."""
  nmods = [_is_nmod(role) for role, _ in node.children]
  if any(nmods) and not all(nmods):
    raise InputError(f"{node.label!r} mixes nmod and event roles in "
                     f"{varfree!r}")
  if node.is_event and node.definite:
    raise InputError(f"event {node.label!r} cannot be definite (`*`) in "
                     f"{varfree!r}")
  if node.label[0].isupper() and (node.definite or node.children):
    raise InputError(f"proper name {node.label!r} cannot have `*` or roles "
                     f"in {varfree!r}")
  for role, child in node.children:
    if role == "xcomp":
      if not child.is_event:
        raise InputError(f"xcomp of {node.label!r} must be a verb with roles "
                         f"in {varfree!r}")
      controlled, controller = child.children[0][1], node.children[0][1]
      if controlled.key() != controller.key():
        raise InputError(f"the first argument of xcomp {child.label!r} must "
                         f"repeat the first argument of {node.label!r} (its "
                         f"controller) in {varfree!r}")
      controlled.controller = controller
    _check_node(child, varfree)


def _linearize(node: _Node) -> List[_Node]:
  """The pronounced nodes in English word order (subject before verb)."""
  if node.controller is not None:
    return []
  rest = [child for _, child in node.children]
  out = [node]
  if node.is_event:
    out = _linearize(rest.pop(0)) + out
  for child in rest:
    out += _linearize(child)
  return out


def _copy_indices(src: _Node, dst: _Node) -> None:
  dst.index = src.index
  for (_, a), (_, b) in zip(src.children, dst.children, strict=True):
    _copy_indices(a, b)


def _align(root: _Node, words: Sequence[str], varfree: str) -> None:
  """Gives every node the index of its word in the sentence."""
  nodes = _linearize(root)
  preps = {role.split(" . ")[-1].lower() for n in nodes
           for role, _ in n.children if _is_nmod(role)}
  slots = [i for i, w in enumerate(words)
           if w.lower() not in FUNCTION_WORDS and w.lower() not in preps]
  if len(slots) != len(nodes):
    raise InputError(
        f"{varfree!r} has {len(nodes)} nouns, names and verbs but the "
        f"sentence {' '.join(words)!r} has {len(slots)} content words "
        f"({[words[i] for i in slots]})")
  for node, i in zip(nodes, slots, strict=True):
    ok = (words[i] == node.label if node.is_name else
          node.is_event or words[i].lower() == node.label)
    if not ok:
      raise InputError(f"{node.label!r} of {varfree!r} falls on word {i} "
                       f"{words[i]!r} of {' '.join(words)!r}")
    node.index = i

  def fill(node: _Node) -> None:  # Preorder: controllers come first.
    if node.controller is not None:
      _copy_indices(node.controller, node)
    for _, child in node.children:
      fill(child)
  fill(root)


def _emit(root: _Node) -> str:
  """Writes the indexed tree as a COGS LF, in COGS's conjunct order."""
  definites, body = [], []

  def visit(node: _Node) -> None:
    if node.controller is not None or node.is_name:
      return
    i = node.index
    if not node.is_event:
      if node.definite:
        definites.append((i, f"* {node.label} ( x _ {i} ) ;"))
      else:
        body.append(((i, 0, 0), f"{node.label} ( x _ {i} )"))
    for k, (role, child) in enumerate(node.children):
      arg = child.label if child.is_name else f"x _ {child.index}"
      body.append(((i, 1, k), f"{node.label} . {role} ( x _ {i} , {arg} )"))
      visit(child)

  visit(root)
  definites.sort()
  body.sort()
  return " ".join([d for _, d in definites] +
                  [" AND ".join(b for _, b in body)])


def parse_varfree(varfree: str) -> _Node:
  """The tree of a variable-free form (label, `*`, (role, child) pairs).

  Raises:
    InputError: bad syntax or tokens after the tree.
  """
  t = _Tokens(varfree, "variable-free form")
  root = _parse_node(t)
  if not t.done():
    raise t.error("the end")
  return root


def from_varfree(varfree: str, sentence: str) -> str:
  """Converts a variable-free form back to the COGS logical form.

  Variable indices are word positions, read off `sentence` (see the module
  docstring); the result equals the original LF exactly, including the
  conjunct order, `;` after definites and spacing.

  Primitive rows: a lambda term (from `primitives="lambda"`) is returned
  unchanged, and a proper name (`Emma` for the sentence `Emma`) is its own
  LF. A bare common word (CSL's `primitives="word"` form, e.g. `roll`) is
  an InputError: it could be a noun or a verb, agent- or theme-framed
  (`roll` is `LAMBDA a . LAMBDA e . roll . theme ( e , a )`), and the
  sentence, the word itself, does not say which.

  Raises:
    InputError: bad syntax, a tree that does not fit the sentence, or an
      unrecoverable primitive. The message names no file.
  """
  toks = varfree.split()
  if not toks:
    raise InputError("empty variable-free form")
  if toks[0] == "LAMBDA":
    _primitive_word(varfree, sentence)
    return " ".join(toks)
  root = parse_varfree(varfree)
  words = sentence.split()
  if not root.children and words == [root.label]:
    if root.is_name:
      return root.label
    raise InputError(  # A primitive row in CSL's word form.
        f"primitive {root.label!r} in CSL's word form cannot be converted "
        "back: the word alone does not say whether it is a noun or a verb "
        "with an agent, a theme or both. Convert with primitives='lambda' "
        "to keep the lambda term")
  if not root.is_event:
    raise InputError(f"the root of {varfree!r} must be a verb with roles")
  _check_node(root, varfree)
  _align(root, words, varfree)
  return _emit(root)


def is_valid_varfree(varfree: str) -> bool:
  """Whether a variable-free form is a COGS logical form's: it converts to
  one (over the sentence of its own nouns, names and verbs in English word
  order, which is what the conversion reads indices from) and back to
  itself. For programs without a sentence, e.g. sampled from a PCFG. A bare
  word without `*` (a primitive row) is valid."""
  try:
    root = parse_varfree(varfree)
    if not root.children:
      return not root.definite
    if not root.is_event:
      return False
    _check_node(root, varfree)
    sentence = " ".join(n.label for n in _linearize(root))
    return to_varfree(from_varfree(varfree, sentence), sentence) == varfree
  except InputError:
    return False


def convert_examples(in_path: str,
                     primitives: str = "word") -> List[tsv.Example]:
  """`(sentence, varfree)` for every line of a COGS TSV.

  The category column, if any, is dropped. Raises InputError naming the
  file and line of a bad one.
  """
  examples = load_cogs(in_path)  # No skipping: row i is line i + 1.
  out = []
  for line, ex in enumerate(examples, start=1):
    try:
      out.append(tsv.Example(ex.input, to_varfree(ex.output, ex.input,
                                                  primitives)))
    except InputError as e:
      hint = ""
      if " = " in ex.output and "x _" not in ex.output:  # `f ( theme = y )`
        hint = (" (this looks variable-free already, as `prepare cogs` "
                "writes it: use those files as they are, e.g. `--dataset "
                "tsv`)")
      raise InputError(e.message + hint, os.fspath(in_path), line) from None
  return out


def convert_file(in_path: str, out_path: str,
                 primitives: str = "word") -> int:
  """Writes `convert_examples(in_path)`; returns the number of lines."""
  return tsv.write_tsv(out_path, convert_examples(in_path, primitives))
