"""Structurally diverse selection (issue 14): speed and diversity on a pool.

Make the pool with the project, e.g. a 1,000,000-sample CSL pool:
  csl-jax augment --out /tmp/sel_geo --dataset geoquery --split template_1 \
    --data_dir ../shared/data/geoquery \
    --gin_file=gin/csl/geoquery_augment.gin --gin.CSL.num_samples=1000000
then
  python benchmarks/bench_selection.py --pool /tmp/sel_geo/csl/candidates.tsv \
    --out /tmp/sel_geo_bench [--sizes 2000 5000 50000] [--naive_steps 5]
    (--naive_steps 0 / --numpy_steps 0: the naive greedies not measured)

Measured (each in this process, timings wall clock):
* featurization (keys, trees, templates, atoms, Keysers-weighted compounds);
* the selectors end to end (`selection.get(name).select`, featurization
  included, pool already in memory) at `--speed_k`: UAT, CMaxEnt,
  CMaxEnt+UAT; CMaxEnt's greedy and UAT's sampling alone; and UAT and
  CMaxEnt selecting `--subpool_k` of the first `--subpool` candidates;
* the naive greedy (`cmaxent_kernel_reference`, pure Python, re-scoring every
  query from scratch each step) for `--naive_steps` steps on the same pool,
  extrapolated linearly to `--speed_k` steps (a lower bound: its steps get
  slower as the selection's feature set grows), and a NumPy full re-score per
  step (every query's gain recomputed from the sparse matrix each step, no
  incremental updates) for `--numpy_steps` steps, extrapolated likewise;
* diversity (templates covered, template entropy, H(A), H(C), nats) of
  random (mean of `--random_repeats` seeds) / UAT and hybrid (mean over
  `--seeds` seeds, templates covered with its std: O5 orders them) /
  CMaxEnt (deterministic, once) at each `--sizes` entry, and the
  template-frequency plot (Oren Fig. 5/7, seed 0) per size.

Writes `OUT/bench.json`, `OUT/bench.md` and `OUT/template_frequency_<k>.png`.
"""

import argparse
import json
import os
import resource
import time

import numpy as np

from csl_jax import selection
from csl_jax.data import tsv
from csl_jax.errors import run_script
from csl_jax.selection import cmaxent
from csl_jax.selection import cmaxent_kernel_reference
from csl_jax.selection import diversity
from csl_jax.selection import uat


def _rss_gb() -> float:
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


def _numpy_naive_step_seconds(features, steps: int) -> float:
  """Seconds per step of a greedy that re-scores the whole pool each step."""
  # pylint: disable-next=protected-access
  ptr, ids, vals, num_atoms, num_features = cmaxent._matrix(features)
  rows = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
  side = (ids >= num_atoms).astype(np.int64)
  g = lambda x: np.where(x > 0, x * np.log(np.maximum(x, 1e-300)), 0.0)
  n = np.zeros(num_features)
  z = np.zeros(2)
  s = np.zeros(2)
  avail = features.query_count.copy()
  num_q = len(ptr) - 1
  d = np.stack([np.bincount(rows, vals * (side == j), num_q) for j in (0, 1)])
  start = time.perf_counter()
  for _ in range(steps):
    delta = g(n[ids] + vals) - g(n[ids])
    ds = np.stack([np.bincount(rows, delta * (side == j), num_q)
                   for j in (0, 1)])
    zz = z[:, None] + d
    with np.errstate(divide="ignore", invalid="ignore"):
      h = np.where(zz > 0, np.log(zz) - (s[:, None] + ds) / zz, 0.0)
    score = np.where(avail > 0, h.sum(0), -np.inf)
    e = int(np.argmax(score))
    avail[e] -= 1
    for p in range(ptr[e], ptr[e + 1]):
      j = side[p]
      s[j] += g(n[ids[p]] + vals[p]) - g(n[ids[p]])
      z[j] += vals[p]
      n[ids[p]] += vals[p]
  return (time.perf_counter() - start) / steps


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--pool", required=True)
  parser.add_argument("--out", required=True)
  parser.add_argument("--sizes", type=int, nargs="+",
                      default=[2000, 5000, 50000])
  parser.add_argument("--speed_k", type=int, default=5000)
  parser.add_argument("--naive_steps", type=int, default=3)
  parser.add_argument("--numpy_steps", type=int, default=20)
  parser.add_argument("--random_repeats", type=int, default=5)
  parser.add_argument("--seeds", type=int, default=5,
                      help="seeds of UAT and the hybrid per size (mean, std)")
  parser.add_argument("--abstraction", default="auto")
  parser.add_argument("--limit", type=int, default=0,
                      help="use only the pool's first LIMIT candidates")
  parser.add_argument("--subpool", type=int, default=100000)
  parser.add_argument("--subpool_k", type=int, default=10000)
  parser.add_argument("--skip_cmaxent_above", type=int, default=10**9,
                      help="sizes above this run without CMaxEnt")
  args = parser.parse_args()
  if not os.path.isfile(args.pool):  # before --out is made
    parser.error(f"--pool {args.pool}: no such file")
  os.makedirs(args.out, exist_ok=True)
  record = {"pool": args.pool}

  start = time.perf_counter()
  pool = tsv.read_tsv(args.pool)
  if args.limit:
    pool = pool[:args.limit]  # the pool's first candidates (samples are iid)
  record["read_seconds"] = time.perf_counter() - start
  record["pool_size"] = len(pool)

  start = time.perf_counter()
  feats = diversity.featurize(pool, args.abstraction, "keysers")
  record["featurize_seconds"] = time.perf_counter() - start
  record.update(abstraction=feats.abstraction, queries=feats.num_queries,
                templates=len(feats.templates),
                atoms=feats.atoms.shape[1], compounds=feats.compounds.shape[1],
                pool_diversity=diversity.diversity(feats,
                                                   np.arange(len(pool))))
  print(json.dumps(record), flush=True)

  # Speed, end to end (featurization included), at speed_k.
  speed = {}
  for name in ("uat", "cmaxent", "cmaxent_uat"):
    chooser = selection.get(name)
    if name != "uat":
      chooser.abstraction = feats.abstraction
    start = time.perf_counter()
    chooser.select(pool, [], args.speed_k, 0)
    speed[name] = time.perf_counter() - start
    print(name, speed[name], flush=True)
  start = time.perf_counter()
  cmaxent.greedy_queries(feats, args.speed_k)
  speed["cmaxent_greedy_only"] = time.perf_counter() - start
  start = time.perf_counter()
  uat.uat_indices(feats.template_of[feats.query_of], args.speed_k, 0.0, 0)
  speed["uat_sampling_only"] = time.perf_counter() - start
  # O6: k = 10,000 of the pool's first 100,000 candidates, end to end.
  sub = pool[:args.subpool]
  for name in ("uat", "cmaxent"):
    start = time.perf_counter()
    selection.get(name).select(sub, [], args.subpool_k, 0)
    speed[f"{name}_{args.subpool_k}_of_first_{args.subpool}"] = (
        time.perf_counter() - start)
  record["speed_seconds"] = speed
  record["peak_rss_gb_after_speed"] = _rss_gb()

  # The naive greedy on the same pool, a few steps, extrapolated (0 steps:
  # not measured).
  if args.naive_steps:
    start = time.perf_counter()
    cmaxent.greedy_queries(feats, args.naive_steps,
                           kernel=cmaxent_kernel_reference)
    per_step = (time.perf_counter() - start) / args.naive_steps
    record["naive_python_seconds_per_step"] = per_step
    record["naive_python_extrapolated_seconds"] = per_step * args.speed_k
  if args.numpy_steps:
    per_step = _numpy_naive_step_seconds(feats, args.numpy_steps)
    record["naive_numpy_seconds_per_step"] = per_step
    record["naive_numpy_extrapolated_seconds"] = per_step * args.speed_k
  print(json.dumps(record), flush=True)

  # Diversity at each size: random over --random_repeats permutations,
  # UAT and the hybrid over --seeds seeds, CMaxEnt once (deterministic).
  rows = []
  for k in args.sizes:
    sels, figures, times = {}, {}, {}
    for name in ("uat", "cmaxent", "cmaxent_uat"):
      if name == "cmaxent" and k > args.skip_cmaxent_above:
        continue
      runs = []
      for seed in range(1 if name == "cmaxent" else args.seeds):
        start = time.perf_counter()
        if name == "uat":
          idx = uat.select_from_features(feats, k, 0.0, seed)
        elif name == "cmaxent":
          idx = cmaxent.examples_for(cmaxent.greedy_queries(feats, k), feats,
                                     0)
        else:
          idx = cmaxent.examples_for(cmaxent.hybrid_queries(feats, k, seed),
                                     feats, seed)
        times.setdefault(name, time.perf_counter() - start)  # seed 0's
        sels.setdefault(name, idx)
        runs.append(diversity.diversity(feats, idx))
      figures[name] = runs
    figures["random"] = [diversity.diversity(
        feats, np.random.default_rng(s).permutation(len(pool))[:k])
                         for s in range(args.random_repeats)]
    for name in ("random", *sels):
      runs = figures[name]
      row = {"k": k, "selector": name, "runs": len(runs),
             **{key: float(np.mean([r[key] for r in runs])) for key in runs[0]},
             "templates_covered_std": float(np.std(
                 [r["templates_covered"] for r in runs], ddof=1))
                                      if len(runs) > 1 else 0.0}
      if name in times:
        row["seconds"] = times[name]
      rows.append(row)
    plot_sels = {"random": np.random.default_rng(0).permutation(len(pool))[:k],
                 **sels}
    diversity.plot_template_frequency(
        os.path.join(args.out, f"template_frequency_{k}.png"), feats,
        plot_sels, title=f"{feats.abstraction}: template frequencies, k={k}")
    print(json.dumps(rows[-len(sels) - 1:]), flush=True)
  record["diversity"] = rows
  record["peak_rss_gb"] = _rss_gb()
  with open(os.path.join(args.out, "bench.json"), "w") as f:
    json.dump(record, f, indent=1)
  lines = ["| k | selector | runs | templates covered | template H | H(A) "
           "| H(C) |", "|---|---|---|---|---|---|---|"]
  for r in rows:
    spread = (f" ± {r['templates_covered_std']:.1f}" if r["runs"] > 1
              else "")
    lines.append(f"| {r['k']} | {r['selector']} | {r['runs']} |"
                 f" {r['templates_covered']:.1f}{spread}"
                 f" | {r['template_entropy']:.2f} | {r['atom_entropy']:.2f} |"
                 f" {r['compound_entropy']:.2f} |")
  with open(os.path.join(args.out, "bench.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
  print("\n".join(lines))


if __name__ == "__main__":
  run_script(main)
