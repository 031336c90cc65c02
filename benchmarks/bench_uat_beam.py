"""UAT locally against UAT with its templating on Beam (issue 16): the same
picks, and the time of each, on one pool.

  python benchmarks/bench_uat_beam.py --pool /tmp/cogs_pool/csl/candidates.tsv \
    [--k 5000] [--shards 8] [--runner DirectRunner] -- BEAM_FLAGS

Writes a JSON line to stdout: seconds of both, whether the picks are equal.
"""

import argparse
import json
import time

import numpy as np

from csl_jax.data import tsv
from csl_jax.errors import run_script
from csl_jax.selection import uat


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--pool", required=True)
  parser.add_argument("--k", type=int, default=5000)
  parser.add_argument("--shards", type=int, default=8)
  parser.add_argument("--runner", default="DirectRunner")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("pipeline_args", nargs="*")
  args = parser.parse_args()
  pool = tsv.read_tsv(args.pool)
  report = {"pool": len(pool), "k": args.k, "shards": args.shards,
            "runner": args.runner, "pipeline_args": args.pipeline_args}
  tick = time.time()
  local = uat.UAT().select(pool, [], args.k, args.seed)
  report["local_seconds"] = round(time.time() - tick, 2)
  tick = time.time()
  beam = uat.UAT(num_shards=args.shards, runner=args.runner,
                 pipeline_args=args.pipeline_args).select(pool, [], args.k,
                                                          args.seed)
  report["beam_seconds"] = round(time.time() - tick, 2)
  report["same_picks"] = bool(np.array_equal(local, beam))
  print(json.dumps(report))


if __name__ == "__main__":
  run_script(main)
