"""Checks the task output CFGs on every output of the benchmark data.

Usage: python3 scripts/check_output_cfgs.py [--data_dir D] [--show N]

D (default: <repo>/../shared/data) holds geoquery/ and cogs_varfree/. The
grammars are tasks/geoquery/funql.cfg, tasks/cogs/varfree.cfg and
tasks/cogs/typed.cfg (which must also reject well-formed but ill-typed
outputs). For each
data file this reports how many outputs the grammar recognizes (from its
start category) and the time taken. A failing output that contains a token
the grammar has no terminal for is an out-of-lexicon failure (COGS: words in
no train output, see tasks/cogs/varfree.cfg); any other is a structural
failure. It also checks that junk outputs are rejected and that the COGS
Word lexicon equals the words of the COGS train outputs.

Exits 1 on a structural failure, an accepted junk string or a lexicon
mismatch; out-of-lexicon failures are listed but allowed.
"""

import argparse
import os
import sys
import time
from typing import List, Sequence, Set, Tuple

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _REPO_ROOT)

# pylint: disable=g-import-not-at-top,wrong-import-position
from csl_jax.errors import InputError
from csl_jax.errors import run_script
from csl_jax.qcfg.output_cfg import OutputCFG, load_output_cfg

DEFAULT_DATA_DIR = os.path.join(_REPO_ROOT, "..", "shared", "data")
GEOQUERY_CFG = os.path.join(_REPO_ROOT, "tasks", "geoquery", "funql.cfg")
COGS_CFG = os.path.join(_REPO_ROOT, "tasks", "cogs", "varfree.cfg")
COGS_TYPED_CFG = os.path.join(_REPO_ROOT, "tasks", "cogs", "typed.cfg")

GEOQUERY_FILES = ["all.tsv"] + [
    f"{split}/{part}.tsv"
    for split in ("standard", "length", "template_1", "template_2",
                  "template_3")
    for part in ("train", "dev", "test")]
COGS_FILES = ["train.tsv", "dev.tsv", "test.tsv", "gen.tsv"]

# Tokens of the COGS variable-free syntax; every other token is a Word.
COGS_STRUCTURE = frozenset(
    "( ) , = * . nmod agent theme recipient ccomp xcomp in on beside".split())

GEOQUERY_JUNK = [
    "answer ( ( m0 )",  # unbalanced
    "answer ( m0",
    "answer ( m0 ) )",
    "answer ( )",
    "state",  # no answer
    "answer ( answer ( state ) )",
    "answer ( loc_1 ( m0 , m1 ) )",  # wrong arity
    "answer ( intersection ( state ) )",
    "answer ( largest_one ( population_1 ) )",
    "answer ( most ( state , loc_1 ) )",
    "answer ( population_1 )",  # a relation is no value
    "answer ( state city )",
    "answer ( len ( state ) )",  # len takes a river
    "answer ( count ( 0 ) )",  # count takes a set of entities
    "answer ( largest_one ( len , state ) )",
    "answer ( most ( loc_1 , state , river ) )",
    "answer ( m10 )",
]

COGS_JUNK = [
    "give ( agent = Emma",
    "give ( agent = Emma ) )",
    "sleep ( )",
    "* sleep ( agent = Emma )",  # a starred event
    "* Emma",  # a starred primitive row
    "sleep ( agent = Emma , agent = Liam )",  # a repeated role
    "eat ( agent = Emma , theme = cake , theme = cookie )",
    "eat ( agent = Emma , theme = cake ( nmod . under = box ) )",
    "eat ( agent = Emma , theme = cake ( nmod . in = box , nmod . on = table"
    " ) )",  # two PPs on one noun
    "eat ( agent = Emma ( agent = Liam ) )",  # an entity with roles
    "eat ( ccomp = Emma )",
    "say ( agent = Emma , ccomp = cake )",  # ccomp takes an event
    "eat ( agent = * * Emma )",
    "eat ( agent = Emma theme = cake )",
    "cake ( nmod . in = box )",  # an entity is no whole output
    "eat ( agent = hedgehogz )",  # not a word of the lexicon
]

# Well-formed, so varfree.cfg takes them; typed.cfg must not.
COGS_ILL_TYPED = [
    "cake ( agent = Emma )",  # a noun as a verb
    "Emma ( agent = Liam )",  # a name as a verb
    "eat ( agent = Emma , theme = sleep )",  # a verb as a noun
    "cook ( agent = Emma , theme = cake , recipient = dog )",  # not dative
    "sleep ( agent = Emma , ccomp = run ( agent = Liam ) )",
    "need ( agent = * girl , xcomp = eat ( agent = * girl , theme = cake ) )",
]


def _outputs(path: str) -> List[str]:
  with open(path, encoding="utf-8") as f:
    return [line.rstrip("\n").split("\t")[1] for line in f if line.strip()]


def check_files(cfg: OutputCFG, data_dir: str, files: Sequence[str],
                show: int) -> Tuple[bool, List[str]]:
  """Recognition rate per file; ok iff no structural failure."""
  terminals = set(cfg.terminals)
  ok, report = True, []
  for name in files:
    path = os.path.join(data_dir, name)
    if not os.path.exists(path):
      report.append(f"  {name}: not present, skipped")
      continue
    outputs = _outputs(path)
    start = time.perf_counter()
    failed = [(line, out) for line, out in enumerate(outputs, start=1)
              if not cfg.recognizes(out.split())]
    seconds = time.perf_counter() - start
    structural = [(line, out) for line, out in failed
                  if set(out.split()) <= terminals]
    lexical = [(line, out, sorted(set(out.split()) - terminals))
               for line, out in failed if not set(out.split()) <= terminals]
    n = len(outputs)
    status = "FAIL" if structural else ("note" if lexical else "OK  ")
    report.append(
        f"  {status} {name}: {n - len(failed)}/{n} recognized "
        f"({100.0 * (n - len(failed)) / max(n, 1):.2f}%); "
        f"{len(structural)} structural, {len(lexical)} out-of-lexicon "
        f"failures; {seconds:.3f}s ({1e6 * seconds / max(n, 1):.0f} us/row)")
    if lexical:
      words = sorted({w for _, _, unknown in lexical for w in unknown})
      report.append(f"       out-of-lexicon tokens: {' '.join(words)}")
    for line, out in structural[:show]:
      report.append(f"       structural, line {line}: {out}")
    for line, out, unknown in lexical[:show]:
      report.append(f"       out-of-lexicon {unknown}, line {line}: {out}")
    if len(structural) > show or len(lexical) > show:
      report.append("       ...")
    ok &= not structural
  return ok, report


def check_junk(cfg: OutputCFG, junk: Sequence[str]) -> Tuple[bool, List[str]]:
  accepted = [s for s in junk if cfg.recognizes(s.split())]
  report = [f"  {'FAIL' if accepted else 'OK  '} junk rejected: "
            f"{len(junk) - len(accepted)}/{len(junk)}"]
  report.extend(f"       accepted: {s}" for s in accepted)
  return not accepted, report


def check_cogs_lexicon(cfg: OutputCFG,
                       train_path: str) -> Tuple[bool, List[str]]:
  """The Word lexicon equals the non-structural tokens of train outputs."""
  lexicon: Set[str] = {p.rhs[0].name for p in cfg.productions
                       if p.lhs == "Word" and len(p.rhs) == 1 and
                       p.rhs[0].terminal}
  if not os.path.exists(train_path):
    return True, [f"  lexicon: {len(lexicon)} words ({train_path} not "
                  "present, not compared)"]
  observed = set()
  for out in _outputs(train_path):
    observed.update(out.split())
  observed -= COGS_STRUCTURE
  missing, extra = sorted(observed - lexicon), sorted(lexicon - observed)
  ok = not missing and not extra
  report = [f"  {'OK  ' if ok else 'FAIL'} Word lexicon: {len(lexicon)} "
            f"words; train outputs have {len(observed)}"]
  if missing:
    report.append(f"       in train outputs, not in the lexicon: {missing}")
  if extra:
    report.append(f"       in the lexicon, not in train outputs: {extra}")
  return ok, report


def main(argv: Sequence[str]) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--data_dir", default=DEFAULT_DATA_DIR)
  parser.add_argument("--show", type=int, default=5,
                      help="failures to list per file and kind")
  args = parser.parse_args(argv[1:])
  if not any(os.path.isdir(os.path.join(args.data_dir, d))
             for d in ("geoquery", "cogs_varfree")):
    # every file would be "not present, skipped" and the checks "pass"
    raise InputError("no geoquery/ or cogs_varfree/ directory here: "
                     "nothing to check (--data_dir)", args.data_dir)
  all_ok = True
  for title, cfg_path, subdir, files, junk in (
      ("GeoQuery FunQL", GEOQUERY_CFG, "geoquery", GEOQUERY_FILES,
       GEOQUERY_JUNK),
      ("COGS variable-free", COGS_CFG, "cogs_varfree", COGS_FILES,
       COGS_JUNK),
      ("COGS variable-free, typed", COGS_TYPED_CFG, "cogs_varfree",
       COGS_FILES, COGS_JUNK + COGS_ILL_TYPED)):
    start = time.perf_counter()
    cfg = load_output_cfg(cfg_path)
    cfg.recognizes(["x"])  # Builds the recognizer tables (and compiles).
    print(f"{title}: {os.path.relpath(cfg_path, _REPO_ROOT)}: "
          f"{len(cfg.productions)} productions, {len(cfg.categories)} "
          f"categories, {len(cfg.terminals)} terminals "
          f"(load + build {time.perf_counter() - start:.2f}s)")
    data_dir = os.path.join(args.data_dir, subdir)
    ok, report = check_files(cfg, data_dir, files, args.show)
    print("\n".join(report))
    all_ok &= ok
    ok, report = check_junk(cfg, junk)
    print("\n".join(report))
    all_ok &= ok
    if cfg_path == COGS_CFG:
      ok, report = check_cogs_lexicon(cfg, os.path.join(data_dir,
                                                        "train.tsv"))
      print("\n".join(report))
      all_ok &= ok
  print("ALL CHECKS PASS" if all_ok else "FAILURES")
  return 0 if all_ok else 1


if __name__ == "__main__":
  run_script(main, sys.argv)
