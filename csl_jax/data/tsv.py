"""Reading and writing `input<TAB>output` example files.

A malformed line (no tab, extra tabs, an empty side) is an InputError naming
the file and line. With `skip_malformed=True` such lines are skipped and
counted in the returned `ReadStats`; nothing is ever dropped silently.
"""

import dataclasses
import io
import os
from typing import Iterable, List, NamedTuple, Optional, Sequence, Tuple

from csl_jax.errors import InputError
from csl_jax.files import atomic_write_text


class Example(NamedTuple):
  input: str
  output: str


@dataclasses.dataclass
class ReadStats:
  num_read: int = 0
  num_skipped: int = 0
  # (line number, reason) of skipped lines, for the summary.
  skipped: List[Tuple[int, str]] = dataclasses.field(default_factory=list)


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
  """Splits and validates tab-separated lines; returns the rows."""
  stats = stats if stats is not None else ReadStats()
  rows = []
  for line_number, line in enumerate(lines, start=1):
    line = line.rstrip("\n").rstrip("\r")
    if not line:
      reason = "empty line"
    else:
      parts = line.split("\t")
      reason = _check_line(parts, num_columns)
    if reason:
      if not skip_malformed:
        raise InputError(reason, source, line_number)
      stats.num_skipped += 1
      stats.skipped.append((line_number, reason))
      continue
    rows.append(tuple(p.strip() for p in parts))
    stats.num_read += 1
  return rows


def read_tsv(path: str, skip_malformed: bool = False,
             stats: Optional[ReadStats] = None) -> List[Example]:
  """Reads an `input<TAB>output` file (UTF-8)."""
  path = os.fspath(path)
  try:
    with io.open(path, encoding="utf-8") as f:
      rows = parse_lines(f, path, skip_malformed, (2,), stats)
  except UnicodeDecodeError as e:
    raise InputError(f"not valid UTF-8 ({e.reason})", path) from None
  except FileNotFoundError:
    raise InputError("no such file", path) from None
  return [Example(*row) for row in rows]


def write_tsv(path: str, examples: Iterable[Sequence[str]]) -> int:
  """Writes examples atomically; returns the number written."""
  path = os.fspath(path)
  lines = []
  for i, ex in enumerate(examples):
    inp, out = ex[0], ex[1]
    for side, text in (("input", inp), ("output", out)):
      if not text or "\t" in text or "\n" in text:
        raise ValueError(f"example {i}: {side} {text!r} is empty or has a "
                         "tab/newline and cannot be written as TSV")
    lines.append(f"{inp}\t{out}\n")
  atomic_write_text(path, "".join(lines))
  return len(lines)
