"""How many of a SCAN `pcfg_bt` run's backtranslated pairs are right.

SCAN's interpreter (`csl_jax.data.scan.interpret`) turns a command into its
actions, so a backtranslated pair (command, program) is right when the
command's actions are the program. Programs new to training (not an output
of the seed's training pairs, RUN/augment/SPLIT/seed_N/data/) are counted
apart: on SCAN length the reverse model reads them longer than any it was
trained on (Issue 13, "The reverse model's buckets" in BENCHMARKS.md).

  python3 benchmarks/bench_scan_bt_correct.py --run runs/y8_b32 --split length \
    [--methods pcfg_bt_uniform ...] [--out RESULT.json]
"""

import argparse
import glob
import json
import os

from csl_jax.data import scan
from csl_jax.data.tsv import read_tsv
from csl_jax.errors import InputError
from csl_jax.pipeline.augment import DATA_DIR


def score(pairs, known_programs):
  """{"n", "right", "new", "new_right"} over (command, program) pairs."""
  counts = {"n": 0, "right": 0, "new": 0, "new_right": 0}
  for command, program in pairs:
    try:
      right = scan.interpret(command) == program
    except InputError:
      right = False
    new = program not in known_programs
    counts["n"] += 1
    counts["right"] += right
    counts["new"] += new
    counts["new_right"] += right and new
  return counts


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--run", required=True,
                      help="an experiment's output directory")
  parser.add_argument("--split", required=True,
                      help="the SCAN split's name in the run")
  parser.add_argument("--methods", nargs="+", default=[
      "pcfg_bt_train", "pcfg_bt_uniform", "pcfg_bt_test"])
  parser.add_argument("--out", help="write the counts here as JSON")
  args = parser.parse_args()
  results = {}
  pattern = os.path.join(args.run, "augment", args.split, "seed_*")
  for seed_dir in sorted(glob.glob(pattern)):
    # The run's own training pairs, as its reverse model saw them.
    known = {example.output for example in read_tsv(
        os.path.join(seed_dir, DATA_DIR, "train.tsv"))}
    for method in args.methods:
      path = os.path.join(seed_dir, method, "backtranslate", "candidates.tsv")
      if not os.path.exists(path):
        continue
      counts = score(read_tsv(path), known)
      name = f"{os.path.basename(seed_dir)}/{method}"
      results[name] = counts
      print(f"{name}: {counts['n']} pairs, "
            f"{100 * counts['right'] / max(counts['n'], 1):.1f} % right; "
            f"{counts['new']} programs new to training, "
            f"{100 * counts['new_right'] / max(counts['new'], 1):.1f} % right",
            flush=True)
  if not results:
    raise SystemExit(f"no backtranslated candidates under {pattern}")
  if args.out:
    with open(args.out, "w", encoding="utf-8") as f:
      json.dump(results, f, indent=1, sort_keys=True)


if __name__ == "__main__":
  main()
