"""A fresh install's first run of the README main command against a warm run
(issue 17): `pip install -e ".[test]" && csl-jax augment
--gin_file=gin/csl/scan_augment.gin`.

Each round clones the repository's HEAD into a scratch directory and
installs the clone into a fresh virtualenv (with the system's packages, so
that only csl_jax itself is installed), timing the install; then runs the
command with an empty JAX compilation cache and again with both caches
filled, and checks the two runs wrote the same synthetic data. Two ways
per round, interleaved: the kernels compiled at install (setup.py's
default) and compiled by the first run (CSL_JAX_COMPILE_AT_INSTALL=0).

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

from csl_jax.errors import run_script

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMAND = ["augment", "--gin_file=gin/csl/scan_augment.gin"]
WAYS = {"at install": "1", "at first run": "0"}


def _env(work: str, compile_at_install: str) -> dict:
  env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=os.path.join(work, "jax"),
             CSL_JAX_COMPILE_AT_INSTALL=compile_at_install)
  for name in ("NUMBA_CACHE_DIR", "PYTHONPATH"):  # the clone's __pycache__
    env.pop(name, None)
  return env


def install(work: str, env: dict) -> float:
  clone = os.path.join(work, "clone")
  venv = os.path.join(work, "venv")
  subprocess.run(["git", "clone", "-q", ROOT, clone], check=True)
  subprocess.run([sys.executable, "-m", "venv", "--system-site-packages",
                  venv], check=True)
  start = time.time()
  subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q", "-e",
                  ".[test]"], cwd=clone, env=env, check=True,
                 capture_output=True)
  seconds = time.time() - start
  where = subprocess.run(
      [os.path.join(venv, "bin", "python"), "-c",
       "import csl_jax; print(csl_jax.__file__)"], cwd=work, env=env,
      check=True, capture_output=True, text=True).stdout
  if not where.startswith(clone):
    sys.exit(f"the virtualenv imports csl_jax from {where}")
  return seconds


def _compiled(clone: str) -> set:
  """numba's cached machine code in the clone (one file per signature)."""
  return {os.path.join(d, f) for d, _, files in os.walk(clone)
          for f in files if f.endswith(".nbc")}


def run(work: str, out: str, env: dict) -> dict:
  before = _compiled(os.path.join(work, "clone"))
  start = time.time()
  proc = subprocess.run(
      [os.path.join(work, "venv", "bin", "csl-jax")] + COMMAND
      + ["--out", out], cwd=os.path.join(work, "clone"), env=env,
      capture_output=True, text=True, check=False)
  wall = time.time() - start
  if proc.returncode:
    sys.exit(f"failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
  with open(os.path.join(out, "summary.json"), encoding="utf-8") as f:
    stages = json.load(f)["stages"]
  return {"wall": wall,
          "stages": {k: round(v["seconds"], 1) for k, v in stages.items()},
          "kernels_compiled": len(_compiled(os.path.join(work, "clone"))
                                  - before)}


def one_round(work: str, compile_at_install: str) -> dict:
  env = _env(work, compile_at_install)
  seconds = install(work, env)
  first = run(work, os.path.join(work, "first"), env)
  warm = run(work, os.path.join(work, "warm"), env)
  same = filecmp.cmp(os.path.join(work, "first", "csl", "synthetic.tsv"),
                     os.path.join(work, "warm", "csl", "synthetic.tsv"),
                     shallow=False)
  return {"install": seconds, "first": first, "warm": warm,
          "ratio": first["wall"] / warm["wall"], "same_data": same}


def main() -> None:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--rounds", type=int, default=1)
  p.add_argument("--ways", default=",".join(WAYS),
                 help="comma-separated, of: " + ", ".join(WAYS))
  p.add_argument("--out", help="JSON of every round")
  args = p.parse_args()
  results = []
  print("| round | kernels compiled | install | first | warm | first / warm "
        "| first's stages (s) | signatures compiled by the first run | same "
        "data |\n|---|---|---|---|---|---|---|---|---|")
  for k in range(args.rounds):
    for way in args.ways.split(","):
      with tempfile.TemporaryDirectory() as work:
        r = one_round(work, WAYS[way])
      r.update(round=k + 1, way=way)
      results.append(r)
      print(f"| {k + 1} | {way} | {r['install']:.1f} s | "
            f"{r['first']['wall']:.1f} s | {r['warm']['wall']:.1f} s | "
            f"**{r['ratio']:.2f}×** | {r['first']['stages']} | "
            f"{r['first']['kernels_compiled']} | {r['same_data']} |",
            flush=True)
  if args.out:
    with open(args.out, "w", encoding="utf-8") as f:
      json.dump(results, f, indent=1)


if __name__ == "__main__":
  run_script(main)
