"""Issue 15: primitive augmentation and AugZero on the shared data: time,
peak memory, sizes and vocabularies, and (SCAN) that every new pair is a
correct SCAN pair once its copies are renamed back.

Each case runs in its own subprocess (peak RSS is that case's) and prints
one JSON record; the driver prints a markdown table.

Usage:
  python benchmarks/bench_data_factors.py [--cases primaug_jump_20 ...]
  python benchmarks/bench_data_factors.py --one augzero_jump_200
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

from csl_jax.errors import run_script

# The shared data beside the checkout, as the other benchmarks read it.
DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))), "..", "shared", "data")

# name -> (method, data dir, setting)
CASES = {}
for _data, _short in (("scan/addprim_jump", "jump"),
                      ("scan/template_around_right", "around_right"),
                      ("geoquery/standard", "geo")):
  for _k in (2, 20, 200):
    CASES[f"primaug_{_short}_{_k}"] = ("primaug", _data, _k)
  for _k in (20, 200):
    CASES[f"augzero_{_short}_{_k}"] = ("augzero", _data, _k)


def one(name: str) -> dict:
  # pylint: disable=g-import-not-at-top
  from csl_jax.data import scan
  from csl_jax.data import token_copies
  # pylint: enable=g-import-not-at-top
  method, data, k = CASES[name]
  train = os.path.join(DATA, data, "train.tsv")
  with tempfile.TemporaryDirectory() as out:
    if method == "primaug":
      from csl_jax.methods.primaug import method as lib  # pylint: disable=g-import-not-at-top
      # GeoQuery: every example with primitives gets K - 1 new versions
      # (App. C.2; gin/primaug/geoquery.gin), SCAN: up to 2K draws.
      attempts = 0 if data.startswith("geoquery/") else 2
      stats = lib.generate(out, train, lib.PrimAugConfig(factor=k,
                                                         attempts=attempts))
    else:
      from csl_jax.methods.augzero import method as lib  # pylint: disable=g-import-not-at-top
      stats = lib.generate(out, train, lib.AugZeroConfig(k=k))
    record = {"case": name, "method": method, "data": data, "k": k,
              "seconds": stats["total_seconds"],
              "peak_rss_gb": stats["peak_rss_gb"],
              "original": stats["num_original"],
              "generated": stats["generated"]}
    if method == "augzero":
      record.update(vocab_input=stats["vocab_input"],
                    vocab_output=stats["vocab_output"],
                    file_mb=round(stats["candidates_bytes"] / 2**20, 1))
    else:
      record.update(units=len(stats["units"]),
                    with_primitives=stats["num_with_primitives"])
    if data.startswith("scan/"):
      wrong = 0
      path = os.path.join(out, "candidates.tsv")
      with open(path, encoding="utf-8") as f:
        for line in f:
          x, y = line.rstrip("\n").split("\t")
          back = " ".join(map(token_copies.original_token, x.split()))
          if scan.interpret(back) != " ".join(
              map(token_copies.original_token, y.split())):
            wrong += 1
      record["incorrect_after_renaming"] = wrong
  return record


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--cases", nargs="*", default=sorted(CASES))
  parser.add_argument("--one")
  args = parser.parse_args()
  if args.one:
    print(json.dumps(one(args.one)))
    return 0
  print("| case | s | peak RSS GB | original | new | vocab in / out "
        "| units | SCAN pairs wrong |")
  print("|---|---|---|---|---|---|---|---|")
  for name in args.cases:
    out = subprocess.run([sys.executable, __file__, "--one", name],
                         capture_output=True, text=True, check=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    vocab = (f'{r["vocab_input"][0]}→{r["vocab_input"][1]} / '
             f'{r["vocab_output"][0]}→{r["vocab_output"][1]}'
             if "vocab_input" in r else "")
    print(f'| {name} | {r["seconds"]:.1f} | {r["peak_rss_gb"]:.2f} | '
          f'{r["original"]:,} | {r["generated"]:,} | {vocab} | '
          f'{r.get("units", "")} | {r.get("incorrect_after_renaming", "")} |',
          flush=True)
  return 0


if __name__ == "__main__":
  run_script(main)
