"""CMaxEnt's speed on one pool (issue 14): featurization, greedy, end to end.

  python benchmarks/bench_cmaxent_speed.py --pool /tmp/cogs_pool/csl/candidates.tsv \
    --out /tmp/cmaxent_speed [--k 5000] [--naive_steps 1] [--numpy_steps 3] \
    [--compare OTHER/picks.npz]

Times (wall clock, this process, pool already read): featurization
(`diversity.featurize`, Keysers weights), the greedy
(`cmaxent.greedy_queries`), the example draw (`cmaxent.examples_for`); their
sum is what `CMaxEnt.select` does, end to end. Numba kernels are compiled
(or loaded from their cache) on a 10-candidate pool first, and that time is
reported apart. Then the naive greedy on the same pool: the pure-Python
twin (`cmaxent_kernel_reference`) for `--naive_steps` steps and a NumPy full
re-score for `--numpy_steps` (`bench_selection`), each extrapolated linearly
to k steps (lower bounds: steps get slower as the selection grows). Peak
RSS is read before the naive runs. `--compare` checks the query picks and
example indices against another run's `picks.npz` (e.g. an older commit's).

Writes OUT/speed.json and OUT/picks.npz (query picks, example indices).
"""

import argparse
import json
import os
import resource
import time

import numpy as np

import bench_selection  # benchmarks/ is the script's directory
from csl_jax.data import tsv
from csl_jax.errors import run_script
from csl_jax.selection import cmaxent
from csl_jax.selection import cmaxent_kernel_reference
from csl_jax.selection import diversity


def _rss_gb() -> float:
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--pool", required=True)
  parser.add_argument("--out", required=True)
  parser.add_argument("--k", type=int, default=5000)
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--abstraction", default="auto")
  parser.add_argument("--naive_steps", type=int, default=1)
  parser.add_argument("--numpy_steps", type=int, default=3)
  parser.add_argument("--compare", default="")
  args = parser.parse_args()
  for flag, path in (("--pool", args.pool), ("--compare", args.compare)):
    if path and not os.path.isfile(path):  # before any work
      parser.error(f"{flag} {path}: no such file")
  os.makedirs(args.out, exist_ok=True)
  rec = {"pool": args.pool, "k": args.k}

  start = time.perf_counter()
  pool = tsv.read_tsv(args.pool)
  rec["read_seconds"] = time.perf_counter() - start
  rec["pool_size"] = len(pool)

  start = time.perf_counter()
  small = diversity.featurize(pool[:10], args.abstraction)
  cmaxent.examples_for(cmaxent.greedy_queries(small, 2), small, 0)
  rec["compile_or_cache_load_seconds"] = time.perf_counter() - start

  start = time.perf_counter()
  feats = diversity.featurize(pool, args.abstraction, "keysers")
  rec["featurize_seconds"] = time.perf_counter() - start
  start = time.perf_counter()
  picks = cmaxent.greedy_queries(feats, args.k)
  rec["greedy_seconds"] = time.perf_counter() - start
  start = time.perf_counter()
  idx = cmaxent.examples_for(picks, feats, args.seed)
  rec["examples_seconds"] = time.perf_counter() - start
  rec["end_to_end_seconds"] = (rec["featurize_seconds"] +
                               rec["greedy_seconds"] + rec["examples_seconds"])
  rec["peak_rss_gb"] = _rss_gb()
  rec.update(abstraction=feats.abstraction, queries=feats.num_queries,
             templates=len(feats.templates), atoms=feats.atoms.shape[1],
             compounds=feats.compounds.shape[1])
  np.savez(os.path.join(args.out, "picks.npz"), picks=picks, idx=idx)
  if args.compare:
    other = np.load(args.compare)
    rec["same_picks_as_compare"] = bool(np.array_equal(other["picks"], picks))
    if "idx" in other:
      rec["same_examples_as_compare"] = bool(np.array_equal(other["idx"], idx))
  print(json.dumps(rec), flush=True)

  if args.naive_steps:
    start = time.perf_counter()
    naive = cmaxent.greedy_queries(feats, args.naive_steps,
                                   kernel=cmaxent_kernel_reference)
    per_step = (time.perf_counter() - start) / args.naive_steps
    rec["naive_python_seconds_per_step"] = per_step
    rec["naive_python_extrapolated_seconds"] = per_step * args.k
    rec["naive_python_same_first_picks"] = bool(
        np.array_equal(naive, picks[:args.naive_steps]))
  if args.numpy_steps:
    # pylint: disable-next=protected-access
    per_step = bench_selection._numpy_naive_step_seconds(feats,
                                                         args.numpy_steps)
    rec["naive_numpy_seconds_per_step"] = per_step
    rec["naive_numpy_extrapolated_seconds"] = per_step * args.k
  with open(os.path.join(args.out, "speed.json"), "w") as f:
    json.dump(rec, f, indent=1)
  print(json.dumps(rec), flush=True)


if __name__ == "__main__":
  run_script(main)
