"""GECA with its index built once, as partitioned joins in this process, and
on Beam (issue 16): the same new pairs, and the time and memory of each.

  python benchmarks/bench_geca_beam.py --train ../shared/data/cogs_varfree/train.tsv \
    --gin_file gin/geca/cogs.gin [--shards 8] [--runner DirectRunner] -- BEAM_FLAGS

Each way runs in its own process (peak RSS of the driver, and of the largest
worker process where Beam starts any). Prints one JSON line per way and
whether every way gave the one build's pairs.
"""

import argparse
import dataclasses
import hashlib
import json
import os
import resource
import subprocess
import sys
import time

from csl_jax.errors import run_script


def _one(args):
  import gin  # pylint: disable=g-import-not-at-top
  from csl_jax.data.tsv import read_tsv  # pylint: disable=g-import-not-at-top
  from csl_jax.methods.geca import augment  # pylint: disable=g-import-not-at-top
  from csl_jax.methods.geca.config import GECAConfig  # pylint: disable=g-import-not-at-top
  gin.parse_config_file(args.gin_file)
  config = GECAConfig()
  if args.way != "one":
    config = dataclasses.replace(
        config, num_shards=args.shards,
        runner=args.runner if args.way == "beam" else None,
        pipeline_args=tuple(args.pipeline_args))
  pairs = [tuple(x) for x in read_tsv(args.train)]
  tick = time.time()
  new, stats = augment.augment(pairs, config)
  seconds = time.time() - tick
  digest = hashlib.md5("".join(f"{i}\t{o}\n" for i, o in new).encode())
  print(json.dumps({
      "way": args.way, "shards": config.num_shards, "runner": config.runner,
      "seconds": round(seconds, 2), "generated": len(new),
      "pairs_md5": digest.hexdigest(),
      "pairs_indexed": stats.get("pairs_indexed"),
      "driver_peak_rss_gb": round(resource.getrusage(
          resource.RUSAGE_SELF).ru_maxrss / 2**20, 3),
      "largest_child_peak_rss_gb": round(resource.getrusage(
          resource.RUSAGE_CHILDREN).ru_maxrss / 2**20, 3)}))


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--train", required=True)
  parser.add_argument("--gin_file", required=True)
  parser.add_argument("--shards", type=int, default=8)
  parser.add_argument("--runner", default="DirectRunner")
  parser.add_argument("--ways", nargs="+", default=["one", "local", "beam"])
  parser.add_argument("--way", help=argparse.SUPPRESS)
  parser.add_argument("pipeline_args", nargs="*")
  args = parser.parse_args()
  if args.way:
    _one(args)
    return
  digests = set()
  for way in args.ways:
    cmd = [sys.executable, os.path.abspath(__file__), "--train", args.train,
           "--gin_file", args.gin_file, "--shards", str(args.shards),
           "--runner", args.runner, "--way", way, "--", *args.pipeline_args]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    line = out.stdout.strip().splitlines()[-1]
    print(line, flush=True)
    digests.add(json.loads(line)["pairs_md5"])
  print(json.dumps({"same_pairs": len(digests) == 1}))


if __name__ == "__main__":
  run_script(main)
