"""kill -9 `csl-jax augment` at random moments, rerun, compare bytes.

Issue 10's check: an uninterrupted run and, for each of N seeded random
moments, a run killed (SIGKILL) at that moment and then rerun to the end;
the final `csl/synthetic.tsv`, grammar and parameters must be byte-identical
to the uninterrupted run's. Moments are drawn uniformly over the
uninterrupted run's wall time, so they land in every stage in proportion
to its length; the stage each kill hit is reported.

  python3 scripts/kill_resume_check.py --out /tmp/killcheck [--kills 10]
"""

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILES = ("csl/induce/grammar.qcfg", "csl/fit/params.npz", "csl/synthetic.tsv")


def command(out, extra):
  return [sys.executable, "-m", "csl_jax.cli.main", "augment", "--out", out,
          "--gin_file=" + os.path.join(REPO, "gin/csl/scan_augment.gin")
          ] + extra


def digest(out):
  return {f: hashlib.sha256(open(os.path.join(out, f), "rb").read())
          .hexdigest()[:16] for f in FILES}


def running_stage(out):
  """The stage whose key file says it is incomplete, if any."""
  for root, _, files in os.walk(out):
    if "stage_key.json" in files:
      with open(os.path.join(root, "stage_key.json")) as f:
        if not json.load(f).get("complete"):
          return os.path.relpath(root, out)
  return "report" if os.path.exists(os.path.join(out, "csl")) else "start"


def main():
  p = argparse.ArgumentParser()
  p.add_argument("--out", required=True)
  p.add_argument("--kills", type=int, default=10)
  p.add_argument("--seed", type=int, default=0)
  p.add_argument("extra", nargs="*", help="more augment flags")
  args = p.parse_args()
  env = dict(os.environ, CSL_JAX_PROGRESS="0")
  quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
  shutil.rmtree(args.out, ignore_errors=True)
  ref = os.path.join(args.out, "uninterrupted")
  start = time.time()
  subprocess.run(command(ref, args.extra), check=True, **quiet)
  total = time.time() - start
  want = digest(ref)
  print(f"uninterrupted: {total:.1f} s {want}")
  rng = random.Random(args.seed)
  results = []
  for i in range(args.kills):
    out = os.path.join(args.out, f"kill_{i}")
    moment = rng.uniform(0.02, 0.98) * total
    proc = subprocess.Popen(command(out, args.extra), **quiet)
    try:
      proc.wait(timeout=moment)
      stage = "finished before the kill"
    except subprocess.TimeoutExpired:
      stage = running_stage(out)
      proc.send_signal(signal.SIGKILL)
      proc.wait()
    subprocess.run(command(out, args.extra), check=True, **quiet)
    got = digest(out)
    results.append({"kill": i, "seconds": round(moment, 1), "stage": stage,
                    "identical": got == want})
    print(f"kill {i}: at {moment:5.1f} s in {stage:28s} identical: "
          f"{got == want}", flush=True)
  with open(os.path.join(args.out, "results.json"), "w") as f:
    json.dump({"uninterrupted_seconds": round(total, 1), "digest": want,
               "kills": results}, f, indent=1)
  sys.exit(0 if all(r["identical"] for r in results) else 1)


if __name__ == "__main__":
  main()
