"""How many of a SCAN `pcfg_bt` run's backtranslated pairs are right.

SCAN's interpreter (`csl_jax.data.scan.interpret`) turns a command into its
actions, so a backtranslated pair (command, program) is right when the
command's actions are the program. Programs new to training (not an output
of the seed's training pairs, RUN/augment/SPLIT/seed_N/data/) are counted
apart: on SCAN length the reverse model reads them longer than any it was
trained on (Issue 13, "The reverse model's buckets" in BENCHMARKS.md).

  python3 benchmarks/bench_scan_bt_correct.py --run runs/y8_b32 --split length \
    [--methods pcfg_bt_uniform ...] [--by_length] \
    [--pattern '(walk|run|jump|look) around (left|right) thrice'] [--out RESULT.json]

`--by_length` also prints, for the new programs, the share right per
program length (actions): how far past its training lengths a reverse
model still reads. `--pattern REGEX` splits the new programs by whether
every command of SCAN's grammar that gives the program matches REGEX, and
counts how many backtranslations match it: whether a reverse model writes a
construction no training command holds (Issue 13, "The reverse model's
distances clipped").
"""

import argparse
import collections
import glob
import json
import os
import re

from csl_jax.data import scan
from csl_jax.data.tsv import read_tsv
from csl_jax.errors import InputError
from csl_jax.errors import run_script
from csl_jax.pipeline.augment import DATA_DIR


def is_right(command: str, program: str) -> bool:
  """Whether the command is SCAN and its actions are the program."""
  try:
    return scan.interpret(command) == program
  except InputError:
    return False


def score(pairs, known_programs):
  """{"n", "right", "new", "new_right", "new_by_length"} over (command,
  program) pairs; "new_by_length" maps a new program's number of actions to
  [new, right]."""
  counts = {"n": 0, "right": 0, "new": 0, "new_right": 0, "new_by_length": {}}
  for command, program in pairs:
    right = is_right(command, program)
    new = program not in known_programs
    counts["n"] += 1
    counts["right"] += right
    counts["new"] += new
    counts["new_right"] += right and new
    if new:
      cell = counts["new_by_length"].setdefault(len(program.split()), [0, 0])
      cell[0] += 1
      cell[1] += right
  return counts


def score_pattern(pairs, known_programs, gold_commands, pattern):
  """Over the new programs: {"all"|"other": [n, right, writes pattern]},
  "all" when every gold command of the program matches `pattern`."""
  counts = {"all": [0, 0, 0], "other": [0, 0, 0]}
  for command, program in pairs:
    if program in known_programs:
      continue
    right = is_right(command, program)
    golds = gold_commands.get(program, ())
    cell = counts["all" if golds and all(
        pattern.search(g) for g in golds) else "other"]
    cell[0] += 1
    cell[1] += right
    cell[2] += bool(pattern.search(command))
  return counts


def gold_commands():
  """Every SCAN program -> the commands that give it (the whole grammar)."""
  golds = collections.defaultdict(list)
  for command in scan.all_commands():
    golds[scan.interpret(command)].append(command)
  return golds


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--run", required=True,
                      help="an experiment's output directory")
  parser.add_argument("--split", required=True,
                      help="the SCAN split's name in the run")
  parser.add_argument("--methods", nargs="+", default=[
      "pcfg_bt_train", "pcfg_bt_uniform", "pcfg_bt_test"])
  parser.add_argument("--by_length", action="store_true",
                      help="also the new programs' share right per length")
  parser.add_argument("--pattern", help="split the new programs by this "
                      "regular expression over their gold commands")
  parser.add_argument("--out", help="write the counts here as JSON")
  args = parser.parse_args()
  results = {}
  try:
    regex = re.compile(args.pattern) if args.pattern else None
  except re.error as e:
    parser.error(f"--pattern {args.pattern!r} is not a regular expression: {e}")
  golds = gold_commands() if regex else None
  seeds_glob = os.path.join(args.run, "augment", args.split, "seed_*")
  for seed_dir in sorted(glob.glob(seeds_glob)):
    # The run's own training pairs, as its reverse model saw them.
    known = {example.output for example in read_tsv(
        os.path.join(seed_dir, DATA_DIR, "train.tsv"))}
    for method in args.methods:
      path = os.path.join(seed_dir, method, "backtranslate", "candidates.tsv")
      if not os.path.exists(path):
        continue
      pairs = list(read_tsv(path))
      counts = score(pairs, known)
      name = f"{os.path.basename(seed_dir)}/{method}"
      results[name] = counts
      print(f"{name}: {counts['n']} pairs, "
            f"{100 * counts['right'] / max(counts['n'], 1):.1f} % right; "
            f"{counts['new']} programs new to training, "
            f"{100 * counts['new_right'] / max(counts['new'], 1):.1f} % right",
            flush=True)
      if args.by_length:
        print("  new, by length: " + ", ".join(
            f"{n}: {100 * r / t:.0f} % of {t}" for n, (t, r)
            in sorted(counts["new_by_length"].items())), flush=True)
      if regex:
        split = score_pattern(pairs, known, golds, regex)
        counts["pattern"] = split
        for key, (n, right, writes) in split.items():
          print(f"  new, {'every' if key == 'all' else 'not every'} gold "
                f"command matching: {n} programs, "
                f"{100 * right / max(n, 1):.1f} % right, "
                f"{100 * writes / max(n, 1):.1f} % written matching",
                flush=True)
  if not results:
    raise SystemExit(f"no backtranslated candidates under {seeds_glob}")
  if args.out:
    with open(args.out, "w", encoding="utf-8") as f:
      json.dump(results, f, indent=1, sort_keys=True)


if __name__ == "__main__":
  run_script(main)
