"""Grammar induction on the paper's datasets (issue 3): time, memory, size,
coverage. Each run is a fresh `csl-jax induce` process (wall time includes
start-up and numba's cache loading), then `csl-jax coverage` on the test set.

  python3 benchmarks/bench_induction.py [--only scan_addprim_jump,...]

Reads ../shared/data; writes runs under --workdir (default /tmp/csl_bench).
"""

import argparse
import json
import os
import subprocess
import sys
import time

from csl_jax.errors import run_script

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "..", "shared", "data")


def runs(workdir):
  """name -> (train tsv, test tsv, gin file); SCAN/COGS prepared first."""
  out = {}
  for split in ("addprim_jump", "addprim_turn_left", "length"):
    out[f"scan_{split}"] = (os.path.join(DATA, "scan", split, "train.tsv"),
                            os.path.join(DATA, "scan", split, "test.tsv"),
                            "gin/csl/scan.gin")
  for split in ("standard", "template_1", "length"):
    out[f"geoquery_{split}"] = (
        os.path.join(DATA, "geoquery", split, "train.tsv"),
        os.path.join(DATA, "geoquery", split, "test.tsv"),
        "gin/csl/geoquery.gin")
  cogs = os.path.join(workdir, "cogs_data")
  out["cogs"] = (os.path.join(cogs, "train.tsv"),
                 os.path.join(cogs, "test.tsv"), "gin/csl/cogs.gin")
  return out


def timed(cmd):
  start = time.time()
  proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
  if proc.returncode:
    sys.exit(f"failed: {' '.join(cmd)}\n{proc.stderr[-3000:]}")
  return time.time() - start


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--workdir", default="/tmp/csl_bench")
  parser.add_argument("--only", default="")
  args = parser.parse_args()
  table = runs(args.workdir)
  names = args.only.split(",") if args.only else list(table)
  unknown = [n for n in names if n not in table]
  if unknown:
    parser.error(f"unknown run {unknown[0]!r} in --only; valid: "
                 f"{', '.join(table)}")
  if "cogs" in names and not os.path.exists(table["cogs"][0]):
    timed(["csl-jax", "prepare", "cogs", "--data_dir",
           os.path.join(DATA, "cogs"), "--out",
           os.path.join(args.workdir, "cogs_data")])
  print("| run | wall s | peak MB | rules | train derivable | test inputs "
        "parsed | test pairs derived |")
  print("|---|---|---|---|---|---|---|")
  for name in names:
    train, test, gin_file = table[name]
    out = os.path.join(args.workdir, name)
    state = os.path.join(out, "induction_state.json")
    if os.path.exists(state):
      os.remove(state)  # measure a full run, not a resumed one
    wall = timed(["csl-jax", "induce", "--train", train, "--out", out,
                  f"--gin_file={gin_file}"])
    timed(["csl-jax", "coverage", "--grammar",
           os.path.join(out, "grammar.qcfg"), "--data", test, "--out",
           os.path.join(out, "test_coverage")])
    with open(os.path.join(out, "summary.json")) as f:
      s = json.load(f)
    with open(os.path.join(out, "test_coverage", "summary.json")) as f:
      c = json.load(f)
    print(f"| {name} | {wall:.1f} | {s['peak_memory_mb']:.0f} | "
          f"{s['num_rules']} | {s['train_coverage']:.1f}% | "
          f"{c['input_coverage']:.1f}% | {c['pair_coverage']:.1f}% |",
          flush=True)


if __name__ == "__main__":
  run_script(main)
