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

Given several bundles (the same cells exported with other settings, e.g.
bucket widths 80 and 16), it measures each as exported and, with
`--best_to FILE`, writes the path of the bundle whose cells would finish
first: compiles plus the cell's steps at the measured steady rate
(`launch/gpu_bundle.sh --bench_cell` runs that one).

  python3 benchmarks/bench_bundle_throughput.py --bundle B80 --bundle B16 \\
    --cell addprim_jump/primaug_20/seed_0 --lanes 10 --steps 300 \\
    --best_to best.txt
"""

import argparse
import json
import os
import shutil
import tempfile
import time

from csl_jax.errors import run_script
from csl_jax.seq2seq import bundle


def _cell_spec(source: str, cell: str) -> dict:
  with open(os.path.join(source, bundle.CELLS_DIR, cell,
                         bundle.CELL_FILE)) as f:
    return json.load(f)


def copies(source: str, cell: str, lanes: int, steps: int, width: int,
           into: str) -> None:
  """`lanes` copies of `cell` in a new bundle `into` (the arrays linked),
  seeds 0..lanes-1, `steps` steps, bucket `width`, nothing to decode."""
  spec = _cell_spec(source, cell)
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


def measure(source: str, cell: str, lanes: int, steps: int, width: int
            ) -> dict:
  """`lanes` copies of `cell` trained `steps` steps at bucket `width`:
  steady examples/s summed over lanes, the slowest lane's seconds and its
  compile seconds (what the steps at the steady rate leave over), and the
  projected seconds of the cell's own steps."""
  scratch = tempfile.mkdtemp(prefix="bench_bundle_")
  try:
    copies(source, cell, lanes, steps, width, scratch)
    tick = time.time()
    bundle.run_bundle(scratch, lanes=lanes, progress=False)
    wall = time.time() - tick
    lane_rates, seconds = [], []
    for seed in range(lanes):
      with open(os.path.join(scratch, bundle.CELLS_DIR, f"seed_{seed}",
                             bundle.OUTPUTS_FILE)) as f:
        done = json.load(f)
      lane_rates.append(done["train"].get("examples_per_second") or 0.0)
      seconds.append(done["train_seconds"])
  finally:
    shutil.rmtree(scratch, ignore_errors=True)
  train = _cell_spec(source, cell)["train"]
  per_step = train["batch_size"] / max(min(lane_rates), 1e-9)
  fixed = max(0.0, max(seconds) - steps * per_step)
  return {"rate": sum(lane_rates), "seconds": max(seconds), "wall": wall,
          "fixed": fixed, "projected": fixed + train["num_steps"] * per_step,
          "num_steps": train["num_steps"]}


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--bundle", required=True, action="append",
                      help="a bundle; several: each at its own settings")
  parser.add_argument("--cell", required=True,
                      help="a cell of the bundle, e.g. split/data/seed_0")
  parser.add_argument("--lanes", type=int, default=1)
  parser.add_argument("--steps", type=int, default=500)
  parser.add_argument("--bucket_widths", type=int, nargs="+", default=None,
                      help="one bundle: the widths to try (default 80 16)")
  parser.add_argument("--best_to", default=None,
                      help="write the bundle that would finish first here")
  args = parser.parse_args()
  if len(args.bundle) > 1 and args.bucket_widths:
    parser.error("--bucket_widths takes one --bundle")
  if len(args.bundle) > 1:
    settings = [(b, _cell_spec(b, args.cell)["train"]["bucket_width"])
                for b in args.bundle]
  else:
    settings = [(args.bundle[0], w) for w in args.bucket_widths or [80, 16]]
  results = []
  for source, width in settings:
    m = measure(source, args.cell, args.lanes, args.steps, width)
    results.append((m["projected"], source))
    print(f"{source}, bucket width {width}: {m['rate']:,.0f} examples/s over "
          f"{args.lanes} lane(s) (steady steps), {args.steps} steps in "
          f"{m['seconds']:.0f} s per lane ({m['fixed']:.0f} s compiling and "
          f"starting), wall {m['wall']:.0f} s; the cell's {m['num_steps']:,} "
          f"steps: about {m['projected']:.0f} s", flush=True)
  if args.best_to:
    best = min(results)[1]
    with open(args.best_to, "w") as f:
      f.write(best + "\n")
    print(f"fastest: {best}", flush=True)


if __name__ == "__main__":
  run_script(main)
