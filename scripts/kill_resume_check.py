"""kill -9 `csl-jax augment` at random moments, rerun, compare bytes.

Issue 10's check: an uninterrupted run and, for each of N seeded random
moments, a run killed (SIGKILL) at that moment and then rerun to the end;
the final `csl/synthetic.tsv`, grammar and parameters must be byte-identical
to the uninterrupted run's. Moments are drawn uniformly over the
uninterrupted run's wall time, so they land in every stage in proportion
to its length; the stage each kill hit is reported.

  python3 scripts/kill_resume_check.py --out /tmp/killcheck [--kills 10]
      [--at_stages csl/induce,csl/sample,report] [-- AUGMENT FLAGS]

Wall time is mostly fitting, so `--at_stages` adds one kill per named stage,
the moment that stage starts (its `stage_key.json` appears; `report`: the
method's `summary.json`, written just before the report) plus a seeded
random delay of up to 0.5 s.
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

from csl_jax.errors import run_script

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
  p.add_argument("--keep", action="store_true",
                 help="add kills to an earlier invocation's --out")
  p.add_argument("--at_stages", default="",
                 help="comma-separated stage dirs (or `report`) to kill in")
  p.add_argument("extra", nargs="*", help="more augment flags")
  args = p.parse_args()
  env = dict(os.environ, CSL_JAX_PROGRESS="0")
  quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
  ref = os.path.join(args.out, "uninterrupted")
  if args.keep and os.path.exists(os.path.join(ref, FILES[-1])):
    results_file = os.path.join(args.out, "results.json")
    with open(results_file) as f:
      earlier = json.load(f)
    total = earlier["uninterrupted_seconds"]  # the earlier reference run
  else:
    earlier = {"kills": []}
    shutil.rmtree(args.out, ignore_errors=True)
    start = time.time()
    subprocess.run(command(ref, args.extra), check=True, **quiet)
    total = time.time() - start
  want = digest(ref)
  print(f"uninterrupted: {total:.1f} s {want}")
  rng = random.Random(args.seed)
  results = list(earlier["kills"])
  for i in range(len(results), len(results) + args.kills):
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
  stages = [x for x in args.at_stages.split(",") if x]
  for i, stage in enumerate(stages, start=len(results)):
    out = os.path.join(args.out, f"kill_{i}")
    marker = os.path.join(out, "csl", "summary.json") if stage == "report" \
        else os.path.join(out, stage, "stage_key.json")
    proc = subprocess.Popen(command(out, args.extra), **quiet)
    while not os.path.exists(marker) and proc.poll() is None:
      time.sleep(0.01)
    time.sleep(rng.uniform(0, 0.5))
    hit = "finished before the kill" if proc.poll() is not None else (
        "report" if stage == "report" else running_stage(out))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    subprocess.run(command(out, args.extra), check=True, **quiet)
    got = digest(out)
    results.append({"kill": i, "seconds": None, "stage": hit,
                    "identical": got == want})
    print(f"kill {i}: at the start of {stage:18s} in {hit:28s} identical: "
          f"{got == want}", flush=True)
  with open(os.path.join(args.out, "results.json"), "w") as f:
    json.dump({"uninterrupted_seconds": round(total, 1), "digest": want,
               "kills": results}, f, indent=1)
  sys.exit(0 if all(r["identical"] for r in results) else 1)


if __name__ == "__main__":
  run_script(main)
