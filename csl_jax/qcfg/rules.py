"""QCFG rules NT -> <source, target> over the single nonterminal NT.

Text format, one rule per line (the NQG/CSL convention):

    NT_1 twice ### NT_1 NT_1

Tokens are separated by single spaces. `NT_k` (k >= 1) is the nonterminal
with index k. Source NTs are numbered NT_1, NT_2, ... in order of appearance,
each once; every source NT appears at least once on the target side, possibly
several times (quasi-synchronous), and the target has no other NTs. A line
starting with `#` that has no ` ### ` is a comment; blank lines are skipped.
"""

import dataclasses
import functools
import os
import re
from typing import Iterable, List, Optional, Sequence, Tuple

from csl_jax.errors import InputError
from csl_jax.files import atomic_write_text, read_text

SEPARATOR = " ### "
_NT_RE = re.compile(r"^NT_([1-9][0-9]*)$")


def nt_token(index: int) -> str:
  return f"NT_{index}"


@functools.lru_cache(maxsize=1 << 20)
def nt_index(token: str) -> int:
  """The index of an NT token, or 0 for a terminal (cached: hot path)."""
  m = _NT_RE.match(token)
  return int(m.group(1)) if m else 0


@dataclasses.dataclass(frozen=True, order=True)
class Rule:
  """NT -> <source, target>; tokens are strings, NTs are `NT_k` tokens."""
  source: Tuple[str, ...]
  target: Tuple[str, ...]

  @property
  def num_nts(self) -> int:
    return sum(1 for t in self.source if nt_index(t))

  @property
  def is_unary_source(self) -> bool:
    """Source is a lone NT: the rule wraps its child's target, same span."""
    return len(self.source) == 1 and nt_index(self.source[0]) > 0

  def __str__(self) -> str:
    return format_rule(self)

  # The generated hash re-hashes both tuples on every call; the induction
  # hashes ~10^7 times (sets, caches). Same value, computed once; pickles
  # and copies carry only the fields (string hashes differ by process).
  def __hash__(self) -> int:
    try:
      return self.__dict__["_hash"]
    except KeyError:
      h = hash((self.source, self.target))
      object.__setattr__(self, "_hash", h)
      return h

  def __reduce__(self):
    return (Rule, (self.source, self.target))


def validate_rule(rule: Rule) -> str:
  """Returns why `rule` is not a well-formed QCFG rule, or ''."""
  if not rule.source:
    return "empty source side"
  if not rule.target:
    return "empty target side"
  for token in rule.source + rule.target:
    if not token:  # "a  b", "a ### b " split on single spaces
      return ("bad token '' (two spaces in a row, or a space at the start "
              "or end of a side: tokens are separated by single spaces)")
    if any(c.isspace() for c in token):
      return f"bad token {token!r}"
    if token == "###":  # the sides' separator: written, the rule reads back
      return "token '###' is reserved (it separates a rule's sides)"
    if token.startswith("NT_") and not nt_index(token):
      return f"bad nonterminal {token!r} (expected NT_1, NT_2, ...)"
  src = [nt_index(t) for t in rule.source if nt_index(t)]
  if src != list(range(1, len(src) + 1)):
    return ("source NTs must be numbered NT_1, NT_2, ... in order of "
            f"appearance, each once; got {' '.join(map(nt_token, src))}")
  tgt = {nt_index(t) for t in rule.target if nt_index(t)}
  if not tgt <= set(src):
    extra = sorted(tgt - set(src))
    return f"target NT {nt_token(extra[0])} does not occur in the source"
  if tgt != set(src):
    missing = sorted(set(src) - tgt)
    return f"source NT {nt_token(missing[0])} does not occur in the target"
  if rule.source == rule.target and rule.is_unary_source:
    return "identity rule NT_1 ### NT_1 derives nothing and loops"
  return ""


def make_rule(source: Sequence[str], target: Sequence[str]) -> Rule:
  rule = Rule(tuple(source), tuple(target))
  reason = validate_rule(rule)
  if reason:
    raise ValueError(f"invalid rule {format_rule(rule)!r}: {reason}")
  return rule


def format_rule(rule: Rule) -> str:
  # Cached on the object as the hash is: the induction sorts and breaks
  # ties by this text ~10^6 times.
  try:
    return rule.__dict__["_text"]
  except KeyError:
    text = " ".join(rule.source) + SEPARATOR + " ".join(rule.target)
    object.__setattr__(rule, "_text", text)
    return text


def parse_rule(line: str, source: str = "<string>", line_number: int = 1
               ) -> Rule:
  """Parses one rule line; errors name `source` and `line_number`."""
  if line.count(SEPARATOR) != 1:
    raise InputError(
        f"expected one {SEPARATOR.strip()!r} between source and target, "
        f"with a space on each side: {line!r}", source, line_number)
  src, tgt = line.split(SEPARATOR)
  rule = Rule(tuple(src.split(" ")) if src else (),
              tuple(tgt.split(" ")) if tgt else ())
  reason = validate_rule(rule)
  if reason:
    raise InputError(f"{reason}: {line!r}", source, line_number)
  return rule


def _is_comment(line: str) -> bool:
  return line.startswith("#") and SEPARATOR not in line


def parse_rules(text: str, source: str = "<string>") -> List[Rule]:
  """Parses a grammar; duplicates are an error naming both lines."""
  rules, seen = [], {}
  if text.startswith("\ufeff"):
    text = text[1:]  # A BOM is not part of the first token.
  for number, line in enumerate(text.split("\n"), start=1):
    line = line.rstrip("\r")
    if not line.strip() or _is_comment(line):
      continue
    rule = parse_rule(line, source, number)
    if rule in seen:
      raise InputError(f"duplicate rule (first on line {seen[rule]})",
                       source, number)
    seen[rule] = number
    rules.append(rule)
  return rules


def check_max_nts(rules: Sequence[Rule], max_nts: int, path: str,
                  setting: str) -> None:
  """An InputError naming `path` and the line of the first rule with more
  NTs than `max_nts` (the bound `setting` sets), before any work."""
  over = next((r for r in rules if r.num_nts > max_nts), None)
  if over is None:
    return
  text = format_rule(over)
  line = next((number for number, raw in enumerate(
      read_text(path).lstrip("\ufeff").split("\n"), start=1)
               if raw.rstrip("\r") == text), None)
  raise InputError(f"rule {text!r} has {over.num_nts} NTs, more than "
                   f"{setting} = {max_nts}", path, line)


def format_rules(rules: Iterable[Rule]) -> str:
  return "".join(format_rule(r) + "\n" for r in rules)


def load_rules(path: str, allow_empty: bool = False) -> List[Rule]:
  """Reads a .qcfg file. Unreadable files (missing, a directory, not UTF-8:
  file and line) and, unless `allow_empty`, files without a rule are
  InputErrors."""
  path = os.fspath(path)
  rules = parse_rules(read_text(path), path)
  if not rules and not allow_empty:
    # A grammar with no rules derives nothing: every later stage would fail.
    raise InputError("no rules: the grammar file is empty or only comments",
                     path)
  return rules


def save_rules(path: str, rules: Iterable[Rule],
               header: Optional[str] = None) -> None:
  text = format_rules(rules)
  if header:
    text = "".join(f"# {h}\n" for h in header.split("\n")) + text
  atomic_write_text(path, text)
