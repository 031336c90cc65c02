"""Training throughput of a bundle's cells on an accelerator, by setting.

For one exported cell of a bundle (`experiment.bundle`), trains `--lanes`
copies of it at once (seeds 0, 1, ...; `csl-jax run-bundle`'s lanes) for
`--steps` steps under each `--bucket_widths` value, decoding nothing, and
prints the examples/s summed over the lanes (steps that compiled nothing)
and the wall time. Meant as the first few minutes of an accelerator
session, to choose the setting the experiment's cells then train with;
it works on a CPU as well (slowly).

SCAN's targets are 1 to 49 tokens (mean 13.7 on addprim_jump), so one
bucket padded to 50 (accelerator.gin's width 80) computes mostly padding;
width 16 pads to 16/32/48/50 at the cost of four compiles per lane.

  python3 benchmarks/bench_bundle_throughput.py --bundle B \\
    --cell addprim_jump/primaug_20/seed_0 --lanes 10 --steps 600 \\
    --bucket_widths 80 16
"""

import argparse
import json
import os
import shutil
import tempfile
import time

from csl_jax.seq2seq import bundle


def copies(source: str, cell: str, lanes: int, steps: int, width: int,
           into: str) -> None:
  """`lanes` copies of `cell` in a new bundle `into` (the arrays linked),
  seeds 0..lanes-1, `steps` steps, bucket `width`, nothing to decode."""
  with open(os.path.join(source, bundle.CELLS_DIR, cell,
                         bundle.CELL_FILE)) as f:
    spec = json.load(f)
  spec.pop("pretrain", None)
  spec.pop("dev", None)
  spec["eval"] = {}
  os.symlink(os.path.abspath(os.path.join(source, bundle.ARRAYS_DIR)),
             os.path.join(into, bundle.ARRAYS_DIR))
  for seed in range(lanes):
    cell_spec = dict(spec, stage_key=f"bench {seed}", train=dict(
        spec["train"], seed=seed, num_steps=steps, bucket_width=width,
        checkpoint_every=steps, log_every=max(1, steps // 4)))
    directory = os.path.join(into, bundle.CELLS_DIR, f"seed_{seed}")
    os.makedirs(directory)
    with open(os.path.join(directory, bundle.CELL_FILE), "w") as f:
      json.dump(cell_spec, f)


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--bundle", required=True)
  parser.add_argument("--cell", required=True,
                      help="a cell of the bundle, e.g. split/data/seed_0")
  parser.add_argument("--lanes", type=int, default=1)
  parser.add_argument("--steps", type=int, default=500)
  parser.add_argument("--bucket_widths", type=int, nargs="+",
                      default=[80, 16])
  args = parser.parse_args()
  for width in args.bucket_widths:
    scratch = tempfile.mkdtemp(prefix="bench_bundle_")
    try:
      copies(args.bundle, args.cell, args.lanes, args.steps, width, scratch)
      tick = time.time()
      bundle.run_bundle(scratch, lanes=args.lanes, progress=False)
      wall = time.time() - tick
      rates, seconds = [], []
      for seed in range(args.lanes):
        with open(os.path.join(scratch, bundle.CELLS_DIR, f"seed_{seed}",
                               bundle.OUTPUTS_FILE)) as f:
          done = json.load(f)
        rates.append(done["train"].get("examples_per_second") or 0.0)
        seconds.append(done["train_seconds"])
      print(f"bucket width {width}: {sum(rates):,.0f} examples/s over "
            f"{args.lanes} lane(s) (steady steps), {args.steps} steps in "
            f"{max(seconds):.0f} s per lane (compiles included), wall "
            f"{wall:.0f} s", flush=True)
    finally:
      shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
  main()
