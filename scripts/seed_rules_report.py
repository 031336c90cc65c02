"""Runs the seed-rule generators on COGS and GeoQuery and scores them on COGS.

Usage: python3 scripts/seed_rules_report.py [DATA_DIR]

DATA_DIR (default: <repo>/../shared/data) holds cogs/, cogs_varfree/ and
geoquery/. For each dataset this prints the number of rules, the time taken
and samples.

COGS is scored against a gold lexicon read off the original LFs: a variable
`x _ i` is the 0-based index of the word that introduces it, so each
predicate `p ( x _ i )` or `p . role ( x _ i , ...)` gives the pair
(word i, p), e.g. (slept, sleep), and each proper-name argument gives
(name, name). Primitive rows give (word, predicate). A rule <x', x> is
correct iff (x', x) is such a pair somewhere in the training set; recall is
over all gold pairs. "Lenient" precision also counts x' == x as correct, as
the paper's definition does ("x' is x or an inflected form of x").
"""

import os
import random
import re
import sys
import time
from typing import Dict, List, Sequence, Set, Tuple

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _REPO_ROOT)

# pylint: disable=g-import-not-at-top,wrong-import-position
from csl_jax.data.tsv import Example, read_tsv
from csl_jax.errors import run_script
from csl_jax.induction import seed_rules

DEFAULT_DIR = os.path.join(_REPO_ROOT, "..", "shared", "data")
_SHOW = 12
# A conjunct: predicate, then `. role` / `. nmod . prep`, then its arguments.
_CONJUNCT = re.compile(
    r"(?:^|; |AND |\* )(\S+) (?:\. \S+ )*\( x _ (\d+) (?:, (\S+) "
    r"(?:_ \d+ )?)?\)")
_LAMBDAS = re.compile(r"^(?:LAMBDA \S+ \. )+")

Pair = Tuple[str, str]


def gold_lexicon(cogs_rows: Sequence[Example]) -> Set[Pair]:
  """(input word, output word) pairs given by the original COGS LFs."""
  gold = set()
  for sentence, lf in cogs_rows:
    words = sentence.split()
    if len(words) == 1:  # primitive: a lambda term or the name itself
      gold.add((words[0], _LAMBDAS.sub("", lf).split()[0]))
      continue
    for m in _CONJUNCT.finditer(lf):
      predicate, index, argument = m.groups()
      gold.add((words[int(index)], predicate))
      if argument not in (None, "x"):
        gold.add((argument, argument))
  return gold


def _score(rules, gold: Set[Pair]) -> Dict[str, object]:
  got = {(r.source[0], r.target[0]) for r in rules}
  correct = got & gold
  exact = {p for p in got - gold if p[0] == p[1]}
  return dict(n=len(got), p=len(correct) / max(len(got), 1),
              lenient=len(correct | exact) / max(len(got), 1),
              r=len(correct) / max(len(gold), 1),
              fp=sorted(got - gold), fn=sorted(gold - got))


def _fmt_pairs(pairs: Sequence[Pair], limit: int = _SHOW) -> str:
  text = ", ".join(f"<{a}, {b}>" for a, b in pairs[:limit])
  more = len(pairs) - limit
  return (text + (f", ... (+{more})" if more > 0 else "")) or "-"


def _show(rules, limit: int = _SHOW) -> None:
  step = max(len(rules) // limit, 1)
  for r in rules[::step][:limit]:
    print(f"    {r}")


def _timed(fn, *args, **kwargs):
  start = time.perf_counter()
  out = fn(*args, **kwargs)
  return out, time.perf_counter() - start


def _print_score(label: str, s: Dict[str, object], seconds=None) -> None:
  t = f"  {seconds:5.2f}s" if seconds is not None else ""
  print(f"  {label:<44} {s['n']:5d} rules  P {s['p']:.3f}  "
        f"(lenient {s['lenient']:.3f})  R {s['r']:.3f}{t}")


def report_cogs(data_dir: str) -> None:
  varfree = read_tsv(os.path.join(data_dir, "cogs_varfree", "train.tsv"))
  original = read_tsv(os.path.join(data_dir, "cogs", "train.tsv"))
  if [e.input for e in varfree] != [e.input for e in original]:
    sys.exit("cogs/ and cogs_varfree/ train.tsv have different sentences")
  gold = gold_lexicon(original)
  print(f"== COGS train: {len(varfree)} examples; gold lexicon "
        f"{len(gold)} pairs over "
        f"{len({x for _, x in gold})} output words")

  exact, secs = _timed(seed_rules.exact_match_rules, varfree)
  nonword = [str(r.target[0]) for r in exact
             if not seed_rules.is_word(r.target[0])]
  print(f"exact_match_rules: {len(exact)} rules in {secs:.2f}s "
        f"(non-words among them: {nonword})")

  stats, secs = _timed(seed_rules.ibm1_link_stats, varfree)
  print(f"ibm1_link_stats: {len(stats)} word links in {secs:.2f}s "
        "(IBM-1, 10 EM iterations + Viterbi)")
  rules, secs = _timed(seed_rules.ibm1_lexical_rules, varfree)
  s = _score(rules, gold)
  print(f"ibm1_lexical_rules (defaults): {len(rules)} rules in "
        f"{secs:.2f}s end to end")
  _print_score("defaults", s)
  print(f"    false positives: {_fmt_pairs(s['fp'])}")
  print(f"    missed gold:     {_fmt_pairs(s['fn'])}")
  print("  sample:")
  _show(rules)

  print("ablations (same IBM-1 links, one criterion changed):")
  variants = [
      ("min_shared_prefix=0 (no spelling check)",
       dict(min_shared_prefix=0)),
      ("min_shared_prefix=2", dict(min_shared_prefix=2)),
      ("min_shared_prefix=3", dict(min_shared_prefix=3)),
      ("max_forms=inf (no fan-in limit)", dict(max_forms=10**9)),
      ("max_forms=inf, min_shared_prefix=0",
       dict(max_forms=10**9, min_shared_prefix=0)),
      ("min_source_share=0 (no reliability)", dict(min_source_share=0.0)),
      ("min_source_share=0.9", dict(min_source_share=0.9)),
      ("min_count=2", dict(min_count=2)),
  ]
  for label, kwargs in variants:
    v = _score(seed_rules.select_lexical_rules(stats, **kwargs), gold)
    _print_score(label, v)
    extra_fp = [p for p in v["fp"] if p not in s["fp"]]
    extra_fn = [p for p in v["fn"] if p not in s["fn"]]
    print(f"      extra FP: {_fmt_pairs(extra_fp, 6)}; "
          f"extra FN: {_fmt_pairs(extra_fn, 6)}")

  print("robustness: random subsets of train (gold restricted to them):")
  rng = random.Random(0)
  for fraction in (0.05, 0.1, 0.25):
    idx = sorted(rng.sample(range(len(varfree)),
                            int(fraction * len(varfree))))
    sub_rules, secs = _timed(seed_rules.ibm1_lexical_rules,
                             [varfree[i] for i in idx])
    v = _score(sub_rules, gold_lexicon([original[i] for i in idx]))
    _print_score(f"{fraction:.0%} ({len(idx)} examples)", v, secs)
    print(f"      FP: {_fmt_pairs(v['fp'], 8)}; FN: {_fmt_pairs(v['fn'], 8)}")


def report_geoquery(data_dir: str) -> None:
  train = read_tsv(os.path.join(data_dir, "geoquery", "standard",
                                "train.tsv"))
  print(f"== GeoQuery standard train: {len(train)} examples")
  exact, secs = _timed(seed_rules.exact_match_rules, train)
  print(f"exact_match_rules: {len(exact)} rules in {secs:.3f}s")
  print("  all: " + " ".join(r.source[0] for r in exact))
  exact2 = seed_rules.exact_match_rules(train, min_count=2)
  print(f"  min_count=2: {len(exact2)} rules")
  lexical, secs = _timed(seed_rules.ibm1_lexical_rules, train)
  print(f"ibm1_lexical_rules (not used for GeoQuery by the paper; for "
        f"reference): {len(lexical)} rules in {secs:.2f}s")
  inflected = [r for r in lexical if r.source != r.target]
  print(f"  {len(lexical) - len(inflected)} exact, {len(inflected)} "
        "others: " + ", ".join(str(r) for r in inflected))


def main(argv: List[str]) -> int:
  data_dir = argv[1] if len(argv) > 1 else DEFAULT_DIR
  report_cogs(data_dir)
  print()
  report_geoquery(data_dir)
  return 0


if __name__ == "__main__":
  run_script(main, sys.argv)
