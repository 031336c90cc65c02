"""Checks our generated SCAN splits against the published ones.

Usage: python3 scripts/reproduce_scan_splits.py [SCAN_DIR]

SCAN_DIR (default: <repo>/../shared/data/scan) holds <split>/train.tsv and
<split>/test.tsv, one `command<TAB>actions` per line. The rule-defined splits
(addprim_jump, addprim_turn_left, length, template_around_right) must equal
the published files as multisets of lines. `simple` is random, so for it we check that our
train and test partition all 20,910 commands and that the published train and
test together hold exactly our command set with our interpretations.
Exits 1 on any mismatch.
"""

import argparse
import collections
import os
import sys
from typing import Counter, Iterable, List, Sequence, Tuple

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _REPO_ROOT)

# pylint: disable=g-import-not-at-top,wrong-import-position
from csl_jax.data import scan
from csl_jax.data.tsv import Example
from csl_jax.errors import InputError
from csl_jax.errors import run_script

DEFAULT_DIR = os.path.join(_REPO_ROOT, "..", "shared", "data", "scan")
_NUM_COMMANDS = 20910


def _lines(examples: Iterable[Example]) -> Counter:
  return collections.Counter(f"{e.input}\t{e.output}" for e in examples)


def _diff(ours: Counter, published: Counter, limit: int = 3) -> List[str]:
  """Describes how two multisets of lines differ (empty if equal)."""
  out = []
  for label, a, b in (("only ours", ours, published),
                      ("only published", published, ours)):
    extra = a - b
    if extra:
      sample = "; ".join(f"{line!r} x{n}" for line, n in
                         sorted(extra.items())[:limit])
      out.append(f"{sum(extra.values())} lines {label} (e.g. {sample})")
  return out


def _summary(examples: Sequence[Example]) -> str:
  c = _lines(examples)
  return f"{len(examples)} lines, {len(c)} distinct"


def check_rule_split(name: str, directory: str) -> Tuple[bool, List[str]]:
  train, test = scan.make_split(name)
  pub_train, pub_test = scan.load_local(directory)
  report, ok = [], True
  for part, ours, pub in (("train", train, pub_train),
                          ("test", test, pub_test)):
    problems = _diff(_lines(ours), _lines(pub))
    ok &= not problems
    status = "OK  " if not problems else "FAIL"
    report.append(f"  {status} {part}: ours {_summary(ours)}; published "
                  f"{_summary(pub)}")
    report.extend(f"       {p}" for p in problems)
  return ok, report


def check_simple(directory: str) -> Tuple[bool, List[str]]:
  train, test = scan.make_split("simple")
  pub_train, pub_test = scan.load_local(directory)
  report, ok = [], True
  all_lines = _lines(Example(c, scan.interpret(c))
                     for c in scan.all_commands())
  ok_count = len(all_lines) == _NUM_COMMANDS
  ok &= ok_count
  report.append(f"  {'OK  ' if ok_count else 'FAIL'} command set: "
                f"{len(all_lines)} commands (expected {_NUM_COMMANDS})")
  problems = _diff(_lines(train) + _lines(test), all_lines)
  ok &= not problems
  report.append(f"  {'OK  ' if not problems else 'FAIL'} ours: train "
                f"{len(train)} + test {len(test)} partition all commands")
  report.extend(f"       {p}" for p in problems)
  pub = _lines(pub_train) + _lines(pub_test)
  problems = _diff(pub, all_lines)
  overlap = len(set(_lines(pub_train)) & set(_lines(pub_test)))
  if overlap:
    problems.append(f"{overlap} lines in both published train and test")
  ok &= not problems
  report.append(f"  {'OK  ' if not problems else 'FAIL'} published: train "
                f"{len(pub_train)} + test {len(pub_test)} = our command set "
                "with our interpretations")
  report.extend(f"       {p}" for p in problems)
  sizes_match = (len(train), len(test)) == (len(pub_train), len(pub_test))
  report.append(f"  {'OK  ' if sizes_match else 'note'} sizes: ours "
                f"{len(train)}/{len(test)}, published "
                f"{len(pub_train)}/{len(pub_test)}")
  return ok, report


def main(argv: Sequence[str]) -> int:
  parser = argparse.ArgumentParser(
      description=__doc__.split("\n")[0],
      epilog="SCAN_DIR holds <split>/train.tsv and <split>/test.tsv.")
  parser.add_argument("scan_dir", nargs="?", default=DEFAULT_DIR,
                      metavar="SCAN_DIR")
  root = parser.parse_args(argv[1:]).scan_dir
  if not os.path.isdir(root):
    raise InputError("no such directory (SCAN_DIR)", root)
  all_ok = True
  for name in scan.SPLITS:
    directory = os.path.join(root, name)
    print(f"{name} ({os.path.normpath(directory)})")
    try:
      if name == "simple":
        ok, report = check_simple(directory)
      else:
        ok, report = check_rule_split(name, directory)
    except InputError as e:
      ok, report = False, [f"  FAIL {e}"]
    print("\n".join(report))
    all_ok &= ok
  print("ALL SPLITS MATCH" if all_ok else "MISMATCH")
  return 0 if all_ok else 1


if __name__ == "__main__":
  run_script(main, sys.argv)
