"""Compares our GECA with the authors' release on the same SCAN file.

The release (github jacobandreas/geca, run outside this repository; see
BENCHMARKS, issue 12) writes its generated pairs as JSON
(`[{"inp": [...], "out": [...]}, ...]`). This script reads the same SCAN
training file (`IN: ... OUT: ...` lines, as the release's loader does),
runs `csl_jax.methods.geca.augment` with the settings of the release's
`exp/scan_jump/retrieval/run.sh` (plus any overrides), times it, and
prints the set comparison as JSON.

Usage:
  python scripts/compare_geca_release.py --scan_train FILE \
      --release composed.json [--variants N] [--n_sample N] [--seed S]
"""

import argparse
import json
import time

from csl_jax.errors import run_script
from csl_jax.methods.geca import augment as augment_lib
from csl_jax.methods.geca.config import GECAConfig


def read_scan(path):
  pairs = []
  with open(path, encoding="utf-8") as f:
    for line in f:
      toks = line.strip().split()[1:]
      cut = toks.index("OUT:")
      pairs.append((" ".join(toks[:cut]), " ".join(toks[cut + 1:])))
  return pairs


def main():
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("--scan_train", required=True)
  parser.add_argument("--release", required=True)
  parser.add_argument("--variants", type=int, default=2)
  parser.add_argument("--n_sample", type=int, default=1000)
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--holdout", type=int, default=640)
  args = parser.parse_args()
  train = read_scan(args.scan_train)
  config = GECAConfig(wug_size=1, wug_count=2, max_len=40, dedup=True,
                      holdout=args.holdout, variants=args.variants,
                      n_sample=args.n_sample, seed=args.seed)
  t0 = time.perf_counter()
  ours, stats = augment_lib.augment(train, config)
  seconds = time.perf_counter() - t0
  with open(args.release, encoding="utf-8") as f:
    theirs = {(" ".join(d["inp"]), " ".join(d["out"])) for d in json.load(f)}
  ours_set = set(ours)
  print(json.dumps({
      "train_lines": len(train), "train_pairs": stats["train_pairs"],
      "ours": len(ours_set), "release": len(theirs),
      "common": len(ours_set & theirs),
      "only_ours": sorted(ours_set - theirs)[:10],
      "only_release": sorted(theirs - ours_set)[:10],
      "n_only_ours": len(ours_set - theirs),
      "n_only_release": len(theirs - ours_set),
      "fragments_used": stats["fragments_used"],
      "ours_seconds": round(seconds, 2), "ours_stage_seconds": stats["seconds"],
      "ours_peak_rss_gb": stats["peak_rss_gb"]}, indent=1))


if __name__ == "__main__":
  run_script(main)
