"""Distributed CMaxEnt against the exact greedy (issue 16): the objective
H(A) + H(C) of the selection and the time, on one pool.

  python benchmarks/bench_cmaxent_sharded.py --pool /tmp/cogs_pool/csl/candidates.tsv \
    --out /tmp/cmaxent_sharded [--k 5000] [--shards 2,4,8] \
    [--runner DirectRunner --beam_shards 8 -- BEAM_FLAGS]

Featurizes once, then the exact greedy (`cmaxent.greedy_queries`) and the
sharded approximation (`cmaxent.sharded_greedy_queries`: the exact greedy
within each shard of the queries, then over the shards' winners) for each
shard count, locally one shard after another; the same selection through
Beam when `--runner` is given (checked equal to the local one). Reports
atom and compound entropy of each selection and the gap to the exact.
Writes OUT/sharded.json.
"""

import argparse
import json
import os
import time

from csl_jax.data import tsv
from csl_jax.errors import run_script
from csl_jax.selection import cmaxent
from csl_jax.selection import diversity


def _scores(features, picks, seed):
  d = diversity.diversity(features, cmaxent.examples_for(picks, features,
                                                         seed))
  return {"atom_entropy": d["atom_entropy"],
          "compound_entropy": d["compound_entropy"],
          "objective": d["atom_entropy"] + d["compound_entropy"],
          "templates_covered": d["templates_covered"]}


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--pool", required=True)
  parser.add_argument("--out", required=True)
  parser.add_argument("--k", type=int, default=5000)
  parser.add_argument("--shards", default="2,4,8")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--runner")
  parser.add_argument("--beam_shards", type=int, default=8)
  parser.add_argument("beam_args", nargs="*")
  args = parser.parse_args()
  os.makedirs(args.out, exist_ok=True)
  pool = tsv.read_tsv(args.pool)
  start = time.time()
  features = diversity.featurize(pool, "auto")
  rows = [{"method": "featurize", "seconds": time.time() - start,
           "queries": features.num_queries}]
  start = time.time()
  exact = cmaxent.greedy_queries(features, args.k)
  rows.append({"method": "exact greedy", "seconds": time.time() - start,
               **_scores(features, exact, args.seed)})
  best = rows[-1]["objective"]
  for shards in (int(s) for s in args.shards.split(",")):
    start = time.time()
    picks = cmaxent.sharded_greedy_queries(features, args.k, shards)
    rows.append({"method": f"sharded, {shards} shards (local)",
                 "seconds": time.time() - start,
                 **_scores(features, picks, args.seed)})
  if args.runner:
    from csl_jax.selection import beam_cmaxent  # pylint: disable=g-import-not-at-top
    start = time.time()
    picks = beam_cmaxent.sharded_greedy_queries(
        features, args.k, args.beam_shards, 1e-9, args.runner, args.beam_args)
    seconds = time.time() - start
    local = cmaxent.sharded_greedy_queries(features, args.k, args.beam_shards)
    rows.append({"method": f"sharded, {args.beam_shards} shards "
                           f"({args.runner} {' '.join(args.beam_args)})",
                 "seconds": seconds, "same_as_local":
                     bool((picks == local).all()),
                 **_scores(features, picks, args.seed)})
  for row in rows:
    if "objective" in row:
      row["gap_to_exact"] = best - row["objective"]
  with open(os.path.join(args.out, "sharded.json"), "w",
            encoding="utf-8") as f:
    json.dump(rows, f, indent=1)
  print("| method | seconds | H(A) | H(C) | H(A) + H(C) | gap to exact | "
        "templates |")
  print("|---|---|---|---|---|---|---|")
  for r in rows[1:]:
    print(f"| {r['method']} | {r['seconds']:.1f} | {r['atom_entropy']:.4f} |"
          f" {r['compound_entropy']:.4f} | {r['objective']:.4f} | "
          f"{r['gap_to_exact']:.4f} | {r['templates_covered']} |")
  print(f"featurize: {rows[0]['seconds']:.1f} s, {rows[0]['queries']} "
        "queries")


if __name__ == "__main__":
  run_script(main)
