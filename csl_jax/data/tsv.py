"""Reading and writing `input<TAB>output` example files.

A malformed line (no tab, extra tabs, an empty side, a blank line between
examples) is an InputError naming the file and line. With
`skip_malformed=True` such lines are skipped and counted in the returned
`ReadStats`; nothing is ever dropped silently.

Accepted as they are: CRLF line ends, a missing final newline, a UTF-8 BOM
(removed, never glued to the first token) and blank lines at the end of the
file (common in hand-edited files). A file with no example at all is an
error: every stage needs at least one.
"""

import dataclasses
import hashlib
import io
import os
import re
from typing import Iterable, List, NamedTuple, Optional, Sequence, Tuple

from absl import logging

from csl_jax.errors import InputError
from csl_jax.files import atomic_write_text, read_text


class Example(NamedTuple):
  input: str
  output: str


@dataclasses.dataclass
class ReadStats:
  num_read: int = 0
  num_skipped: int = 0
  # (line number, reason) of skipped lines, for the summary.
  skipped: List[Tuple[int, str]] = dataclasses.field(default_factory=list)
  # The file line of each row read, for errors about an example later.
  lines: List[int] = dataclasses.field(default_factory=list)


# Whitespace other than space and tab (NBSP, U+2028, U+3000, \v, \f, ...):
# tokens are split at it (str.split) as at a space, which an example's
# writer may not have meant.
_OTHER_SPACE = re.compile(r"[^\S \t\r\n]")
_SAID_OTHER_SPACE = set()

# First lines that name the columns rather than give an example.
_HEADERS = {("input", "output"), ("source", "target"), ("inputs", "targets"),
            ("sentence", "lf"), ("question", "query")}


def _check_line(parts: Sequence[str], num_columns: Tuple[int, ...]) -> str:
  """Returns the reason a split line is malformed, or '' if it is fine."""
  if len(parts) == 1:
    return "no tab: expected `input<TAB>output`"
  if len(parts) not in num_columns:
    want = " or ".join(str(n) for n in num_columns)
    return f"{len(parts)} tab-separated fields, expected {want}"
  for i, part in enumerate(parts[:2]):
    if not part.strip():
      return f"empty {'input' if i == 0 else 'output'}"
  return ""


def parse_lines(lines: Iterable[str], source: str = "<string>",
                skip_malformed: bool = False,
                num_columns: Tuple[int, ...] = (2,),
                stats: Optional[ReadStats] = None) -> List[Tuple[str, ...]]:
  """Splits and validates tab-separated lines; returns the rows.

  Blank (or whitespace-only) lines are fine at the end of the input only: a
  blank line followed by an example is malformed.
  """
  stats = stats if stats is not None else ReadStats()
  rows = []
  blank = []  # line numbers of blank lines not yet followed by an example
  for line_number, line in enumerate(lines, start=1):
    line = line.rstrip("\n").rstrip("\r")
    if line_number == 1 and line.startswith("\ufeff"):
      line = line[1:]  # A BOM is not part of the first token.
    if not line.strip() and "\t" not in line:  # A lone tab is malformed.
      blank.append(line_number)
      continue
    for number in blank:  # Blank lines between examples.
      reason = ("empty line (blank lines are allowed only at the end of the "
                "file)")
      if not skip_malformed:
        raise InputError(reason, source, number)
      stats.num_skipped += 1
      stats.skipped.append((number, reason))
    blank = []
    parts = line.split("\t")
    reason = _check_line(parts, num_columns)
    if reason:
      if not skip_malformed:
        raise InputError(reason, source, line_number)
      stats.num_skipped += 1
      stats.skipped.append((line_number, reason))
      continue
    if not rows and tuple(p.strip().lower() for p in parts[:2]) in _HEADERS:
      logging.warning("%s:%d: %r looks like a header row; it is read as an "
                      "example (the format has none: remove it)", source,
                      line_number, line)
    rows.append(tuple(p.strip() for p in parts))
    stats.lines.append(line_number)
    stats.num_read += 1
  return rows


def _say_other_space(text: str, path: str) -> None:
  """A warning naming the first line with whitespace other than space and
  tab (NBSP, U+2028, ...): tokens are split at it as at a space, without a
  word otherwise. Once a process for a file's name and content (the
  pipeline reads its copy of the data again)."""
  if text.isascii() and not any(c in text for c in "\v\f\x1c\x1d\x1e\x1f"):
    return  # the common case, at C speed: no such character
  found = _OTHER_SPACE.search(text)
  if not found:
    return
  said = (os.path.basename(path),
          hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest())
  if said in _SAID_OTHER_SPACE:
    return
  _SAID_OTHER_SPACE.add(said)
  line = io.StringIO(text[:found.start()], newline=None).read().count(
      "\n") + 1
  count = len(_OTHER_SPACE.findall(text))
  logging.warning("%s:%d: U+%04X, a whitespace character other than space "
                  "and tab: tokens are split at it as at a space (%d such "
                  "character(s) in the file)", path, line,
                  ord(found.group()), count)


def read_tsv(path: str, skip_malformed: bool = False,
             stats: Optional[ReadStats] = None,
             allow_empty: bool = False) -> List[Example]:
  """Reads an `input<TAB>output` file (UTF-8).

  A missing, unreadable or non-UTF-8 file, a directory, and (unless
  `allow_empty`) a file without a single example are InputErrors.
  """
  path = os.fspath(path)
  stats = stats if stats is not None else ReadStats()
  text = read_text(path)
  # io.StringIO splits lines as reading the file in text mode would.
  rows = parse_lines(io.StringIO(text, newline=None), path, skip_malformed,
                     (2,), stats)
  _say_other_space(text, path)
  if not rows and not allow_empty:
    if stats.num_skipped:
      raise InputError(f"no examples: all {stats.num_skipped} lines are "
                       "malformed and were skipped", path)
    raise InputError("no examples: the file is empty or has only blank "
                     "lines", path)
  return [Example(*row) for row in rows]


def write_tsv(path: str, examples: Iterable[Sequence[str]]) -> int:
  """Writes examples atomically, streaming (memory: one line); returns the
  number written."""
  path = os.fspath(path)
  count = [0]

  def lines():
    for i, ex in enumerate(examples):
      inp, out = ex[0], ex[1]
      for side, text in (("input", inp), ("output", out)):
        # What read_tsv would refuse: blank, or a tab or line break inside.
        if not text.strip() or any(c in text for c in "\t\n\r"):
          raise ValueError(f"example {i}: {side} {text!r} is blank or has a "
                           "tab/line break and cannot be written as TSV")
      count[0] += 1
      yield f"{inp}\t{out}\n"

  atomic_write_text(path, lines())
  return count[0]
