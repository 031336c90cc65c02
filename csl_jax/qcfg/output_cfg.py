"""The output CFG of a task: a grammar of the valid outputs (programs).

Text format, one production per line:

  %start Q                    # optional; default: LHS of the first production
  Q -> answer ( E )
  E -> city | state | E "|" E

* `CAT -> sym sym ...`; symbols are separated by whitespace.
* A line whose first non-blank character is `#` is a comment; blank lines are
  ignored. An unquoted terminal starting with `#` later in a line (a
  comment where there is none) is warned about as a misspelt category is.
* A symbol is a category (nonterminal) iff it is the LHS of some production.
* `"..."` is always a terminal; the quotes are stripped. Quote a terminal that
  equals a category name, `->`, `|`, or starts with `"` (the terminal `"` is
  written as three quotes).
* `A -> x | y z` gives two productions. Empty right-hand sides (epsilon) and
  duplicate productions are errors.

A misspelt category on a right-hand side is, by the rule above, a terminal,
and the format gives no sound way to tell it from a real one (terminals may
look like category names: COGS names such as `Emma`, FunQL's `state` next to
`State`). So this is a warning, not an error, with one clear rule: an
UNQUOTED terminal one edit (insertion, deletion, substitution or swap of two
neighbours) away from a category name whose first letter has the same case
(`Cty` vs `City`, not `sum` vs `Num` or `state` vs `State`) is reported with
file and line, noting when that category is never used on a right-hand side
(the usual trace of a typo). Quoting the terminal (`"Cty"`) says it is meant
and silences the warning; `strict=True` makes it an InputError. A typo
further from the name (`Wk` for `Walk`) leaves the category on no
right-hand side: a category that is neither used nor the start category is
reported the same way, naming its first production's line.

`format_output_cfg` writes the canonical form: `%start` only when the start is
not the first LHS, one production per line, quotes only where needed.
"""

import dataclasses
import functools
import itertools
import os
from typing import (Any, Callable, Dict, FrozenSet, Iterable, List,
                    NamedTuple, Optional, Sequence, Tuple, Union)

from absl import logging
import numpy as np

from csl_jax.errors import InputError
from csl_jax.files import read_text
from csl_jax.qcfg.rules import nt_index

_SYNTAX = ("->", "|")

Categories = Union[None, str, Iterable[str]]


class Symbol(NamedTuple):
  name: str
  terminal: bool


class Production(NamedTuple):
  lhs: str
  rhs: Tuple[Symbol, ...]


def _category_name_problem(name: str) -> str:
  """Why `name` cannot be a category in the text format ('' if it can)."""
  if not name or any(ch.isspace() for ch in name):
    return f"category name {name!r} is empty or has whitespace"
  if name in _SYNTAX or name[0] in "\"#%":
    return f"category name {name!r} is syntax or starts with '\"', '#', '%'"
  return ""


class _Tables(NamedTuple):
  grammar: Any  # cfg_kernel.CFGArrays
  category_index: Dict[str, int]
  terminal_index: Dict[str, int]
  any_slot_masks: np.ndarray  # row 0: every category; row 1 + c: only c


@dataclasses.dataclass(frozen=True)
class OutputCFG:
  """A CFG of valid outputs. Equality ignores the cached recognizer tables."""
  productions: Tuple[Production, ...]
  start: Optional[str] = None  # None: the LHS of the first production

  def __post_init__(self):
    prods = tuple(Production(p[0], tuple(Symbol(*s) for s in p[1]))
                  for p in self.productions)
    object.__setattr__(self, "productions", prods)
    if not prods:
      raise ValueError("an output CFG needs at least one production")
    if self.start is None:
      object.__setattr__(self, "start", prods[0].lhs)
    lhs = {p.lhs for p in prods}
    seen = set()
    for p in prods:
      problem = _category_name_problem(p.lhs)
      if problem:
        raise ValueError(problem)
      if not p.rhs:
        raise ValueError(f"epsilon production for {p.lhs} is not supported")
      for s in p.rhs:
        if not s.name or any(ch.isspace() for ch in s.name):
          raise ValueError(f"symbol {s.name!r} is empty or has whitespace")
        if not s.terminal and s.name not in lhs:
          raise ValueError(f"category {s.name!r} has no productions")
      if p in seen:
        raise ValueError(f"duplicate production {p}")
      seen.add(p)
    if self.start not in lhs:
      raise ValueError(f"start category {self.start!r} has no productions")

  @classmethod
  def from_pairs(cls, pairs: Iterable[Tuple[str, Union[str, Sequence[str]]]],
                 start: Optional[str] = None) -> "OutputCFG":
    """From `(lhs, rhs)` pairs; as in the text format, LHS names are categories.

    No quoting here: a terminal equal to a category name needs `Symbol`s.
    """
    pairs = [(lhs, rhs.split() if isinstance(rhs, str) else list(rhs))
             for lhs, rhs in pairs]
    categories = {lhs for lhs, _ in pairs}
    return cls(tuple(
        Production(lhs, tuple(Symbol(s, s not in categories) for s in rhs))
        for lhs, rhs in pairs), start)

  @functools.cached_property
  def categories(self) -> Tuple[str, ...]:
    """Categories in order of first appearance as an LHS."""
    return tuple(dict.fromkeys(p.lhs for p in self.productions))

  @functools.cached_property
  def terminals(self) -> Tuple[str, ...]:
    return tuple(dict.fromkeys(
        s.name for p in self.productions for s in p.rhs if s.terminal))

  @functools.cached_property
  def _tables(self) -> _Tables:
    from csl_jax.qcfg import cfg_kernel  # Lazily: numba is slow to import.
    cats = {c: i for i, c in enumerate(self.categories)}
    terms = {t: i for i, t in enumerate(self.terminals)}
    encoded = [(cats[p.lhs], [~terms[s.name] if s.terminal else cats[s.name]
                              for s in p.rhs]) for p in self.productions]
    grammar = cfg_kernel.encode_cfg(len(cats), len(terms), encoded)
    masks = np.concatenate([np.ones((1, len(cats)), bool),
                            np.eye(len(cats), dtype=bool)])
    masks.flags.writeable = False  # Shared by all calls.
    return _Tables(grammar, cats, terms, masks)

  def _category_mask(self, categories: Categories) -> np.ndarray:
    if categories is None:
      categories = [self.start]
    elif isinstance(categories, str):
      categories = [categories]
    mask = np.zeros(len(self.categories), bool)
    for c in categories:
      if c not in self._tables.category_index:
        raise ValueError(f"unknown category {c!r}")
      mask[self._tables.category_index[c]] = True
    return mask

  def recognizes(self, tokens: Sequence[str],
                 category: Categories = None) -> bool:
    """Whether `category` (default: start; or any of several) derives tokens."""
    return self.recognizes_with_slots(tokens, None, category=category)

  def recognizes_with_slots(self, tokens: Sequence[str],
                            is_slot: Optional[Sequence[bool]],
                            slot_categories: Optional[Iterable[str]] = None,
                            slot_ids: Optional[Sequence[int]] = None,
                            category: Categories = None) -> bool:
    """Whether some choice of categories for the slots makes tokens derivable.

    Each slot (`is_slot[i]`; `tokens[i]` is then ignored) stands for one
    category, any category or one of `slot_categories`. Slots with the same
    `slot_ids` value (>= 0; -1 for no id) must take the same category.
    `category` is the goal: default start; a collection means any of them.
    Each repeated id costs up to one CKY run per allowed category, and
    several repeated ids one run per combination of their surviving options.
    """
    from csl_jax.qcfg import cfg_kernel  # Lazily: numba is slow to import.
    goal = self._category_mask(category)
    codes, masks, groups = self._encode(tokens, is_slot, slot_categories,
                                        slot_ids)
    repeated = [pos for pos in groups.values() if len(pos) > 1]
    off = np.zeros(len(repeated) + 1, np.int64)
    np.cumsum([len(pos) for pos in repeated], out=off[1:])
    flat = np.array([i for pos in repeated for i in pos], np.int64)
    g = self._tables.grammar
    # Writable: a read-only array is another numba type (another compile).
    masks = np.require(masks, np.bool_, ["C", "W"])
    return bool(cfg_kernel.recognize_with_slots(
        codes, flat, off, masks, goal, g.num_categories, g.num_symbols,
        g.lex_start, g.lex_sym, g.clo_start, g.clo_sym, g.bin_start,
        g.bin_right, g.bin_parent))

  def nt_slot_recognizer(self, category: Categories = None
                         ) -> Callable[[Sequence[str]], bool]:
    """`recognizes_with_slots` for token sequences whose slots are NT_k
    tokens (slot id k: repeated NTs take one category), everything but the
    CKY done once: the induction asks it of ~10^5 rule targets."""
    from csl_jax.qcfg import cfg_kernel  # Lazily: numba is slow to import.
    g = self._tables.grammar
    args = (np.require(self._tables.any_slot_masks, np.bool_, ["C", "W"]),
            self._category_mask(category), g.num_categories, g.num_symbols,
            g.lex_start, g.lex_sym, g.clo_start, g.clo_sym, g.bin_start,
            g.bin_right, g.bin_parent)
    codes = {t: c for t, c in self._tables.terminal_index.items()
             if not nt_index(t)}

    def code(token: str) -> int:
      k = nt_index(token)
      codes[token] = -2 - k if k else cfg_kernel.UNKNOWN_TERMINAL
      return codes[token]

    def recognizes(tokens: Sequence[str]) -> bool:
      if isinstance(tokens, str):
        raise TypeError("tokens must be a sequence of strings, not a str")
      raw = np.array([codes[t] if t in codes else code(t) for t in tokens],
                     np.int64)
      return bool(cfg_kernel.recognize_slot_ids(raw, *args))

    return recognizes

  def derivable_categories(
      self, tokens: Sequence[str], is_slot: Optional[Sequence[bool]] = None,
      slot_categories: Optional[Iterable[str]] = None,
      slot_ids: Optional[Sequence[int]] = None) -> FrozenSet[str]:
    """The categories that derive tokens for some choice of slot categories."""
    top = self._search(tokens, is_slot, slot_categories, slot_ids, None)
    return frozenset(c for c, ok in zip(self.categories, top, strict=True)
                     if ok)

  def _encode(self, tokens, is_slot, slot_categories, slot_ids
              ) -> Tuple[np.ndarray, np.ndarray, Dict[int, List[int]]]:
    """Kernel codes of the tokens (slots `slot_code(0)`), the slot masks
    (row 0: the categories a slot may take) and the positions of each slot
    id."""
    from csl_jax.qcfg import cfg_kernel  # Lazily: numba is slow to import.
    if isinstance(tokens, str):
      raise TypeError("tokens must be a sequence of strings, not a str")
    tables, n = self._tables, len(tokens)
    masks = tables.any_slot_masks
    if is_slot is None and slot_ids is None and slot_categories is None:
      codes = np.fromiter(
          (tables.terminal_index.get(t, cfg_kernel.UNKNOWN_TERMINAL)
           for t in tokens), np.int64, n)
      return codes, masks, {}
    is_slot = [False] * n if is_slot is None else is_slot
    slot_ids = [-1] * n if slot_ids is None else slot_ids
    if len(is_slot) != n or len(slot_ids) != n:
      raise ValueError("tokens, is_slot and slot_ids differ in length")
    if slot_categories is not None:
      masks = masks.copy()
      masks[0] = self._category_mask(list(slot_categories))
    codes = np.empty(n, np.int64)
    groups: Dict[int, List[int]] = {}
    for i, (token, slot, sid) in enumerate(zip(tokens, is_slot, slot_ids,
                                               strict=True)):
      if slot:
        codes[i] = cfg_kernel.slot_code(0)
        if sid >= 0:
          groups.setdefault(sid, []).append(i)
      elif sid >= 0:
        raise ValueError(f"position {i} has slot id {sid} but is no slot")
      else:
        codes[i] = tables.terminal_index.get(token,
                                             cfg_kernel.UNKNOWN_TERMINAL)
    return codes, masks, groups

  def _search(self, tokens, is_slot, slot_categories, slot_ids,
              goal: Optional[np.ndarray]) -> np.ndarray:
    """Union over slot assignments of the categories deriving the tokens.

    With a goal it may stop early, once a goal category is found.
    """
    from csl_jax.qcfg import cfg_kernel  # Lazily: numba is slow to import.
    tables = self._tables
    codes, masks, groups = self._encode(tokens, is_slot, slot_categories,
                                        slot_ids)

    def run(fixed: Sequence[Tuple[List[int], int]]) -> np.ndarray:
      trial = codes.copy()
      for positions, c in fixed:
        trial[positions] = cfg_kernel.slot_code(1 + c)
      return cfg_kernel.top_categories(tables.grammar, trial, masks)

    top = run([])
    repeated = [pos for pos in groups.values() if len(pos) > 1]
    if not repeated:
      return top
    # Letting repeated ids vary per position over-approximates; if even that
    # fails, or fails with one id fixed to c, no assignment can succeed.
    want = np.ones_like(top) if goal is None else goal
    nothing = np.zeros_like(top)
    if not (top & want).any():
      return nothing
    options, result = [], nothing
    for positions in repeated:
      options.append([])
      for c in np.flatnonzero(masks[0]):
        found = run([(positions, c)])
        if (found & want).any():
          options[-1].append(c)
          if len(repeated) == 1:  # Then this loop is the whole search.
            result = result | found
            if goal is not None:
              return result
      if not options[-1]:
        return nothing
    if len(repeated) == 1:
      return result
    for choice in itertools.product(*options):
      result = result | run(list(zip(repeated, choice, strict=True)))
      if goal is not None and (result & goal).any():
        break
    return result


def _parse_symbol(token: str, categories, source: str, line: int) -> Symbol:
  if token.startswith('"'):
    if len(token) < 3 or not token.endswith('"'):
      raise InputError(
          f"bad quoted symbol {token}: write a terminal as \"text\" "
          "(non-empty, no whitespace; `\"` itself is `\"\"\"`)", source, line)
    return Symbol(token[1:-1], True)
  return Symbol(token, token not in categories)


def _one_edit(a: str, b: str) -> bool:
  """Whether a != b differ by one insertion, deletion, substitution or swap
  of adjacent characters (Damerau-Levenshtein distance 1)."""
  if a == b or abs(len(a) - len(b)) > 1:
    return False
  if len(a) == len(b):
    diff = [i for i in range(len(a)) if a[i] != b[i]]
    return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and
                              a[diff[0]] == b[diff[1]] and
                              a[diff[1]] == b[diff[0]])
  short, long_ = (a, b) if len(a) < len(b) else (b, a)
  return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


def suspicious_terminals(rules, start: Optional[str] = None
                         ) -> List[Tuple[int, str]]:
  """(line, message) for unquoted terminals that look like misspelt
  categories (the rule is in the module doc). `rules`: (line, lhs,
  alternatives as raw tokens) as `parse_output_cfg` collects them."""
  categories = list(dict.fromkeys(lhs for _, lhs, _ in rules))
  used = {t for _, _, alts in rules for alt in alts for t in alt}
  found, reported, hinted = [], set(), set()
  for number, _, alternatives in rules:
    for token in (t for alt in alternatives for t in alt):
      if token in reported or token in categories:
        continue  # A category, or already reported.
      if token.startswith("#"):
        # `A -> x | y # note` reads `#` and `note` as terminals (a comment
        # is a line of its own): `y` alone leaves the language.
        found.append((number, (
            f"terminal {token!r} after a production: a comment is a line of "
            f"its own, so it and what follows are symbols (quote it, "
            f"\"{token}\", if it is meant as a terminal)")))
        reported.add(token)
        continue
      if token.startswith('"') or len(token) < 2:
        continue  # Quoted: explicitly a terminal.
      for c in categories:
        if (len(c) >= 2 and c[0].isupper() == token[0].isupper() and
            _one_edit(token, c)):
          unused = "" if c in used or c == (start or categories[0]) else (
              ", which no right-hand side uses")
          found.append((number, (
              f"terminal {token!r} is one edit from the category {c!r}"
              f"{unused}: a misspelt category? (quote it, \"{token}\", if "
              "it is meant as a terminal)")))
          reported.add(token)
          hinted.add(c)
          break
  # A category no production uses, and not the start: its productions are
  # dead, whatever the typo where it was meant (one edit away is said above).
  first = start or categories[0]
  lines: Dict[str, int] = {}
  for number, lhs, _ in rules:
    lines.setdefault(lhs, number)
  for c in categories:
    if c != first and c not in used and c not in hinted:
      found.append((lines[c], (
          f"category {c!r} is on no right-hand side and is not the start "
          f"category {first!r}: its productions are never used (a typo in "
          f"the name where it is meant? or %start {c}?)")))
  return found


def parse_output_cfg(text: str, source: str = "<string>",
                     strict: bool = False) -> OutputCFG:
  """Parses the text format (see the module doc); errors name the line.

  Terminals that look like misspelt categories are logged as warnings
  naming the line, or with `strict` are InputErrors.
  """
  rules = []  # (line, lhs, alternatives as token lists)
  start, start_line = None, None
  if text.startswith("\ufeff"):
    text = text[1:]  # A BOM is not part of the first symbol.
  for number, line in enumerate(text.split("\n"), start=1):
    parts = line.split()
    if not parts or parts[0].startswith("#"):
      continue
    if parts[0].startswith("%"):
      if parts[0] != "%start":
        raise InputError(f"unknown directive {parts[0]}; only %start exists",
                         source, number)
      if len(parts) != 2:
        raise InputError("expected `%start CATEGORY`", source, number)
      if start is not None:
        raise InputError(f"second %start (first on line {start_line})",
                         source, number)
      start, start_line = parts[1], number
      continue
    if "->" not in parts:
      raise InputError("expected `CATEGORY -> symbols`, found no `->`",
                       source, number)
    arrow = parts.index("->")
    if arrow != 1:
      raise InputError("the left-hand side must be exactly one category, "
                       f"found {arrow} symbols", source, number)
    problem = _category_name_problem(parts[0])
    if problem:
      raise InputError(problem, source, number)
    alternatives = [[]]
    for token in parts[2:]:
      if token == "|":
        alternatives.append([])
      elif token == "->":
        raise InputError('a second `->`; quote a terminal as "->"',
                         source, number)
      else:
        alternatives[-1].append(token)
    if not all(alternatives):
      raise InputError("empty right-hand side: epsilon productions are not "
                       "supported", source, number)
    rules.append((number, parts[0], alternatives))
  if not rules:
    raise InputError("no productions", source)
  categories = {lhs for _, lhs, _ in rules}
  if start is not None and start not in categories:
    raise InputError(f"start category {start} has no productions",
                     source, start_line)
  for number, message in suspicious_terminals(rules, start):
    if strict:
      raise InputError(message, source, number)
    logging.warning("%s:%d: %s", source, number, message)
  productions, first_line = [], {}
  for number, lhs, alternatives in rules:
    for alternative in alternatives:
      rhs = tuple(_parse_symbol(t, categories, source, number)
                  for t in alternative)
      production = Production(lhs, rhs)
      if production in first_line:
        raise InputError("duplicate production (first on line "
                         f"{first_line[production]})", source, number)
      first_line[production] = number
      productions.append(production)
  return OutputCFG(tuple(productions), start)


def check_training_outputs(cfg: "OutputCFG", cfg_path: str, setting: str,
                           path: str, outputs: Sequence[Sequence[str]],
                           lines: Sequence[int], warn: bool = True) -> int:
  """How many training `outputs` (token lists, from `path` at `lines`) the
  output CFG rejects. Most of them: an InputError naming the first such
  line and the setting the CFG came from (a CFG of another dataset would
  otherwise induce and fit silently, then parse and sample nothing). A few
  (a word outside a CFG's lexicon, as COGS's gen words are for
  tasks/cogs/varfree.cfg): a warning where `warn`; the parser and sampler
  never produce those outputs."""
  verdict: Dict[Tuple[str, ...], bool] = {}
  rejected = []
  for y, line in zip(outputs, lines, strict=True):
    y = tuple(y)
    if y not in verdict:
      verdict[y] = cfg.recognizes(y)
    if not verdict[y]:
      rejected.append(line)
  if 2 * len(rejected) > len(outputs):
    raise InputError(
        f"output not in the language of the output CFG {cfg_path} "
        f"({len(rejected)} of {len(outputs)} training outputs are not; is it "
        f"the CFG of this dataset? it is {setting}: set it to yours, or to "
        "None)", path, rejected[0])
  if rejected and warn:
    logging.warning(
        "%s:%d: %d of %d training outputs are not in the language of the "
        "output CFG %s: the parser and the sampler never produce them",
        path, rejected[0], len(rejected), len(outputs), cfg_path)
  return len(rejected)


def load_output_cfg(path: str, strict: bool = False) -> OutputCFG:
  """Reads a .cfg file; a missing, unreadable or non-UTF-8 file (with the
  line) or a directory is an InputError, as is any syntax error."""
  path = os.fspath(path)
  return parse_output_cfg(read_text(path), source=path, strict=strict)


def _format_symbol(symbol: Symbol, categories) -> str:
  name = symbol.name
  if symbol.terminal and (name in categories or name in _SYNTAX or
                          name.startswith('"')):
    return f'"{name}"'
  return name


def format_output_cfg(cfg: OutputCFG) -> str:
  """Canonical text: parse_output_cfg(format_output_cfg(g)) == g."""
  categories = set(cfg.categories)
  lines = []
  if cfg.start != cfg.productions[0].lhs:
    lines.append(f"%start {cfg.start}")
  for p in cfg.productions:
    rhs = " ".join(_format_symbol(s, categories) for s in p.rhs)
    lines.append(f"{p.lhs} -> {rhs}")
  return "\n".join(lines) + "\n"
