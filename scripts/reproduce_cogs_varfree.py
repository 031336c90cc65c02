"""Checks our COGS variable-free conversion on every line of the data.

Usage: python3 scripts/reproduce_cogs_varfree.py [COGS_DIR [VARFREE_DIR]]

COGS_DIR (default: <repo>/../shared/data/cogs) holds {train,dev,test}.tsv and
optionally gen.tsv, `sentence<TAB>lf`; VARFREE_DIR (default: the sibling
`cogs_varfree`) holds the same sentences with the variable-free LF. For each
split this reports:

  1. lambda round trip: from_varfree(to_varfree(lf, s, "lambda"), s) == lf;
  2. word form: to_varfree(lf, s, "word") equals VARFREE_DIR's line. The 51
     gen rows of COGS_DIR/gen_rows_changed_2022.txt (2022 `agent`->`theme`
     fix, where CSL's older files differ) are reported apart;
  3. word round trip on the non-primitive rows, and how many primitive rows
     are recoverable from the word alone (proper names only).

Exits 1 if check 1 fails on any line, or check 2 fails on a line other than
the 51 listed gen rows; 0 otherwise.
"""

import os
import sys
import time
from typing import List, Sequence, Set, Tuple

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _REPO_ROOT)

# pylint: disable=g-import-not-at-top,wrong-import-position
from csl_jax.data import cogs
from csl_jax.errors import InputError
from csl_jax.errors import run_script

DEFAULT_DIR = os.path.join(_REPO_ROOT, "..", "shared", "data", "cogs")
SPLITS = ("train", "dev", "test", "gen")
_SHOW = 3


def _changed_rows(cogs_dir: str) -> Set[int]:
  path = os.path.join(cogs_dir, "gen_rows_changed_2022.txt")
  if not os.path.exists(path):
    return set()
  with open(path, encoding="utf-8") as f:
    return {int(line) for line in f if line.strip()}


def _try(fn, *args) -> Tuple[str, str]:
  """(result, "") or ("", error message)."""
  try:
    return fn(*args), ""
  except InputError as e:
    return "", str(e)


def check_split(path: str, varfree_path: str,
                changed: Set[int]) -> Tuple[bool, List[str]]:
  examples = cogs.load_cogs(path)
  published = cogs.load_cogs(varfree_path)
  if len(published) != len(examples):
    return False, [f"  FAIL {len(examples)} lines but {len(published)} in "
                   f"{varfree_path}"]
  lam_ok, word_ok, listed, rt_ok, rt_total, names = 0, 0, [], 0, 0, 0
  lam_bad, word_bad, rt_bad = [], [], []
  num_prim = 0
  for line, (ex, pub) in enumerate(zip(examples, published), start=1):
    s, lf = ex.input, ex.output
    where = f"line {line}: {s!r}"
    vf, err = _try(cogs.to_varfree, lf, s, "lambda")
    back, err = _try(cogs.from_varfree, vf, s) if not err else ("", err)
    if back == lf:
      lam_ok += 1
    else:
      lam_bad.append(f"{where}: {err or repr(back)}")
    word, err = _try(cogs.to_varfree, lf, s, "word")
    if pub.input == s and word == pub.output:
      word_ok += 1
    elif line in changed:
      listed.append(f"{where}: ours {word!r}, published {pub.output!r}")
    else:
      word_bad.append(f"{where}: {err or repr(word)} vs published "
                      f"{pub.output!r}")
    is_prim = cogs.is_primitive(lf)
    num_prim += is_prim
    if not err:
      back, err = _try(cogs.from_varfree, word, s)
      if is_prim:
        names += back == lf
      else:
        rt_total += 1
        rt_ok += back == lf
        if back != lf:
          rt_bad.append(f"{where}: {err or repr(back)}")
  n = len(examples)
  report = [
      f"  {'OK  ' if not lam_bad else 'FAIL'} lambda round trip: "
      f"{lam_ok}/{n} exact",
      f"  {'OK  ' if not word_bad else 'FAIL'} word form = published: "
      f"{word_ok}/{n}" + (f" ({len(listed)} other lines are listed 2022 "
                          "rows)" if listed else ""),
      f"  {'OK  ' if not rt_bad else 'note'} word round trip, non-primitive "
      f"rows: {rt_ok}/{rt_total} exact",
      f"  note primitive rows: {num_prim}; recoverable from the word alone "
      f"(proper names): {names}",
  ]
  for label, bad in (("lambda", lam_bad), ("word", word_bad),
                     ("listed", listed), ("word round trip", rt_bad)):
    report.extend(f"       {label}: {b}" for b in bad[:_SHOW])
    if len(bad) > _SHOW:
      report.append(f"       {label}: ... {len(bad) - _SHOW} more")
  if changed and "gen" in os.path.basename(path):
    report.append(f"  note {len(changed)} rows listed as changed in 2022 "
                  "(agent->theme; CSL's older files have agent): "
                  f"{len(changed) - len(listed)} equal ours, {len(listed)} "
                  "differ")
  return not lam_bad and not word_bad, report


def main(argv: Sequence[str]) -> int:
  if len(argv) > 3:
    print(__doc__, file=sys.stderr)
    return 2
  cogs_dir = argv[1] if len(argv) > 1 else DEFAULT_DIR
  varfree_dir = (argv[2] if len(argv) > 2 else
                 os.path.join(os.path.dirname(os.path.abspath(cogs_dir)),
                              "cogs_varfree"))
  changed = _changed_rows(cogs_dir)
  all_ok, total = True, 0
  for split in SPLITS:
    path = os.path.join(cogs_dir, f"{split}.tsv")
    if split == "gen" and not os.path.exists(path):
      print("gen: not present, skipped")
      continue
    start = time.time()
    print(f"{split} ({os.path.normpath(path)})")
    try:
      ok, report = check_split(path, os.path.join(varfree_dir,
                                                  f"{split}.tsv"),
                               changed if split == "gen" else set())
    except InputError as e:
      ok, report = False, [f"  FAIL {e}"]
    print("\n".join(report))
    print(f"  ({time.time() - start:.1f}s)")
    all_ok &= ok
    if split != "gen":
      total += sum(1 for _ in open(path, encoding="utf-8"))
  print(f"train+dev+test lines: {total}")
  print("ALL CHECKS PASS" if all_ok else "MISMATCH")
  return 0 if all_ok else 1


if __name__ == "__main__":
  run_script(main, sys.argv)
