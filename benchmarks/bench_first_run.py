"""A fresh install's first run of the README main command against a warm run
(issue 17): `csl-jax augment --gin_file=gin/csl/scan_augment.gin`.

The repository's HEAD is cloned into a scratch directory and run from there
through PYTHONPATH, so its numba cache (the clone's __pycache__) starts
empty, with an empty JAX compilation cache; then the same command again
with both caches filled. Prints wall time and each stage's seconds, and
checks the two runs wrote the same synthetic data.

  python3 benchmarks/bench_first_run.py [--rounds 2] [--out RESULT.json]
"""

import argparse
import filecmp
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMAND = ["-m", "csl_jax.cli.main", "augment",
           "--gin_file=gin/csl/scan_augment.gin"]


def run(clone: str, out: str, jax_cache: str) -> dict:
  env = dict(os.environ, PYTHONPATH=clone, JAX_COMPILATION_CACHE_DIR=jax_cache)
  env.pop("NUMBA_CACHE_DIR", None)  # the clone's own __pycache__
  start = time.time()
  proc = subprocess.run([sys.executable] + COMMAND + ["--out", out],
                        cwd=clone, env=env, capture_output=True, text=True,
                        check=False)
  wall = time.time() - start
  if proc.returncode:
    sys.exit(f"failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
  with open(os.path.join(out, "summary.json"), encoding="utf-8") as f:
    stages = json.load(f)["stages"]
  return {"wall": wall,
          "stages": {k: round(v["seconds"], 1) for k, v in stages.items()}}


def one_round(work: str) -> dict:
  clone = os.path.join(work, "clone")
  subprocess.run(["git", "clone", "-q", ROOT, clone], check=True)
  jax_cache = os.path.join(work, "jax_cache")
  first = run(clone, os.path.join(work, "first"), jax_cache)
  warm = run(clone, os.path.join(work, "warm"), jax_cache)
  same = filecmp.cmp(os.path.join(work, "first", "csl", "synthetic.tsv"),
                     os.path.join(work, "warm", "csl", "synthetic.tsv"),
                     shallow=False)
  return {"first": first, "warm": warm,
          "ratio": first["wall"] / warm["wall"], "same_data": same}


def main() -> None:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--rounds", type=int, default=1)
  p.add_argument("--out", help="JSON of every round")
  args = p.parse_args()
  results = []
  print("| round | run | wall | stages (s) |\n|---|---|---|---|")
  for k in range(args.rounds):
    with tempfile.TemporaryDirectory() as work:
      r = one_round(work)
    results.append(r)
    for name in ("first", "warm"):
      print(f"| {k + 1} | {name} | {r[name]['wall']:.1f} s | "
            f"{r[name]['stages']} |", flush=True)
    print(f"| {k + 1} | first / warm | **{r['ratio']:.2f}x** | same data: "
          f"{r['same_data']} |", flush=True)
  if args.out:
    with open(args.out, "w", encoding="utf-8") as f:
      json.dump(results, f, indent=1)


if __name__ == "__main__":
  main()
