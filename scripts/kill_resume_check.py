"""kill -9 `csl-jax augment` at random moments, rerun, compare bytes.

Issue 10's check: an uninterrupted run and, for each of N seeded random
moments, a run killed (SIGKILL, its whole process group) at that moment
and then rerun to the end; the final `csl/synthetic.tsv`, grammar and
parameters (or the `--files` given) must be byte-identical to the
uninterrupted run's. Moments are drawn uniformly over the uninterrupted
run's wall time, so they land in every stage in proportion to its length;
the stage each kill hit is reported, and so are temporary files left in
the rerun's directory and rerun log lines that look alarming (a
traceback, an error).

  python3 scripts/kill_resume_check.py --out /tmp/killcheck [--kills 10]
      [--at_stages csl/induce,csl/sample,report] [-- AUGMENT FLAGS]

Wall time is mostly fitting, so `--at_stages` adds one kill per named stage,
the moment that stage starts (its `stage_key.json` appears; `report`: the
method's `summary.json`, written just before the report; `@PATH`: the
moment PATH appears in the run directory, e.g. a trainer's checkpoint)
plus a seeded random delay of up to 0.5 s (`--max_delay`; 0 kills at once,
for stages shorter than the delay, such as a selector's).

Other methods and the experiment runner: `--base_gin ''` leaves out
gin/csl/scan_augment.gin, `--files` names what to compare (globs in the
run directory, e.g. '*/synthetic.tsv,*/*_100/synthetic.tsv'),
`--command experiment` runs `csl-jax experiment`, and `--signal TERM`
(or INT) asks the run to stop instead of killing it.
"""

import argparse
import glob
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

from csl_jax.errors import run_script

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILES = ("csl/induce/grammar.qcfg", "csl/fit/params.npz", "csl/synthetic.tsv")
# A rerun's log lines worth a look (a stage redone because a file it
# recorded changed is a warning of cache.run_stage).
ALARMING = re.compile(r"Traceback|Error|error:|changed since it was written|"
                      r"is missing since|cannot be read")
# Names an interrupted atomic write leaves (files.py, train.py, runner.py).
TEMPORARY = re.compile(r"\.tmp(\.|$|-)")


def command(out, extra, base_gin="gin/csl/scan_augment.gin",
            what="augment"):
  gin = ["--gin_file=" + os.path.join(REPO, base_gin)] if base_gin else []
  return [sys.executable, "-m", "csl_jax.cli.main", what, "--out", out
          ] + gin + extra


def params_digest(model_dir):
  """sha256 of a trainer directory's latest parameters (its checkpoint
  files hold random names and times; the values are what must agree)."""
  import jax  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  from csl_jax.seq2seq import train as train_lib  # pylint: disable=g-import-not-at-top
  h = hashlib.sha256()
  for leaf in jax.tree_util.tree_leaves(train_lib.load_params(model_dir)[1]):
    h.update(np.ascontiguousarray(np.asarray(leaf)).tobytes())
  return h.hexdigest()[:16]


def digest(out, files=FILES):
  """{file: sha256} of `files` (globs; `params:DIR`: a trainer's latest
  parameters; `named:FILE`: FILE with the run directory's path and name
  read as OUT, as an experiment's results.md names its directory)."""
  found = {}
  for pattern in files:
    params = pattern.startswith("params:")
    named = pattern.startswith("named:")
    pattern = pattern.split(":", 1)[1] if params or named else pattern
    paths = sorted(glob.glob(os.path.join(out, pattern)))
    if not paths:
      found[pattern] = None  # missing: never identical to a present file
    for path in paths:
      if params:
        found["params:" + os.path.relpath(path, out)] = params_digest(path)
        continue
      with open(path, "rb") as f:
        data = f.read()
      if named:
        for name in (os.path.abspath(out), os.path.basename(out)):
          data = data.replace(name.encode(), b"OUT")
      found[os.path.relpath(path, out)] = hashlib.sha256(
          data).hexdigest()[:16]
  return found


def leftovers(out):
  """Temporary files or directories under `out` (none after a run ends)."""
  left = []
  for root, dirs, names in os.walk(out):
    for name in dirs + names:
      if TEMPORARY.search(name):
        left.append(os.path.relpath(os.path.join(root, name), out))
  return sorted(left)


def running_stage(out):
  """The stage whose key file says it is incomplete, if any."""
  for root, _, files in os.walk(out):
    if "stage_key.json" in files:
      try:
        with open(os.path.join(root, "stage_key.json")) as f:
          if json.load(f).get("complete"):
            continue
      except ValueError:  # being replaced this very moment
        pass
      return os.path.relpath(root, out)
  return "report" if os.path.exists(os.path.join(out, "csl")) else "start"


def _sigint_default():
  """The run's SIGINT as a terminal's: a background shell starts its jobs
  with SIGINT ignored, which they inherit (and `--signal INT` would then
  test nothing: the run goes on to its end)."""
  signal.signal(signal.SIGINT, signal.SIG_DFL)


def stop(proc, signum):
  """`signum` to the run's process group (children too); waits for it."""
  try:
    os.killpg(proc.pid, signum)
  except ProcessLookupError:
    pass
  proc.wait()
  if signum != signal.SIGKILL:  # what it said as it stopped
    return proc.returncode
  try:
    os.killpg(proc.pid, signal.SIGKILL)  # a child it left behind
  except ProcessLookupError:
    pass
  return proc.returncode


def main():
  p = argparse.ArgumentParser()
  p.add_argument("--out", required=True)
  p.add_argument("--kills", type=int, default=10)
  p.add_argument("--seed", type=int, default=0)
  p.add_argument("--keep", action="store_true",
                 help="add kills to an earlier invocation's --out")
  p.add_argument("--at_stages", default="",
                 help="comma-separated stage dirs (or `report`, or @PATH) "
                 "to kill in")
  p.add_argument("--max_delay", type=float, default=0.5,
                 help="an --at_stages kill comes up to this many seconds "
                 "(seeded) after its stage starts")
  p.add_argument("--files", default=",".join(FILES),
                 help="comma-separated files (globs) to compare")
  p.add_argument("--base_gin", default="gin/csl/scan_augment.gin",
                 help="a gin file read first ('': none)")
  p.add_argument("--command", default="augment",
                 choices=("augment", "experiment"))
  p.add_argument("--signal", default="KILL", choices=("KILL", "TERM", "INT"))
  p.add_argument("extra", nargs="*", help="more augment flags")
  args = p.parse_args()
  files = [f for f in args.files.split(",") if f]
  signum = getattr(signal, "SIG" + args.signal)
  env = dict(os.environ, CSL_JAX_PROGRESS="0")
  quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)

  def cmd(out):
    return command(out, args.extra, args.base_gin, args.command)

  def rerun(out):
    """Reruns to the end; (alarming log lines, leftover temporary files)."""
    done = subprocess.run(cmd(out), check=True, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    with open(os.path.join(os.path.dirname(out),
                           os.path.basename(out) + ".rerun.log"), "w") as f:
      f.write(done.stdout)
    return ([l for l in done.stdout.splitlines() if ALARMING.search(l)],
            leftovers(out))

  def killed(out, proc, hit):
    """Stops `proc`; returns what the stop said (TERM, INT)."""
    code = stop(proc, signum)
    if signum == signal.SIGKILL:
      return hit
    return f"{hit}, exit {code}"

  ref = os.path.join(args.out, "uninterrupted")
  if args.keep and not os.path.exists(os.path.join(args.out, "results.json")):
    # Not the fresh start below: it would delete what the earlier
    # invocation left.
    sys.exit(f"{args.out}: --keep, but no results.json there (an earlier "
             "invocation did not finish): run without --keep to start anew")
  if args.keep:
    results_file = os.path.join(args.out, "results.json")
    with open(results_file) as f:
      earlier = json.load(f)
    total = earlier["uninterrupted_seconds"]  # the earlier reference run
  else:
    earlier = {"kills": []}
    shutil.rmtree(args.out, ignore_errors=True)
    start = time.time()
    subprocess.run(cmd(ref), check=True, **quiet)
    total = time.time() - start
  want = digest(ref, files)
  print(f"uninterrupted: {total:.1f} s, {len(want)} files", flush=True)
  rng = random.Random(args.seed)
  results = list(earlier["kills"])

  def record(i, moment, stage, out):
    alarming, left = rerun(out)
    got = digest(out, files)
    differ = sorted(f for f in set(got) | set(want)
                    if got.get(f) != want.get(f))
    results.append({"kill": i, "seconds": moment, "stage": stage,
                    "identical": not differ, "differ": differ,
                    "leftovers": left, "alarming": alarming[:5]})
    print(f"kill {i}: {stage:40s} identical: {not differ}"
          + (f" differ: {differ}" if differ else "")
          + (f" leftovers: {left}" if left else "")
          + (f" alarming: {alarming[:3]}" if alarming else ""), flush=True)

  for i in range(len(results), len(results) + args.kills):
    out = os.path.join(args.out, f"kill_{i}")
    moment = rng.uniform(0.02, 0.98) * total
    proc = subprocess.Popen(cmd(out), start_new_session=True,
                            preexec_fn=_sigint_default, **quiet)
    try:
      proc.wait(timeout=moment)
      stage = "finished before the kill"
    except subprocess.TimeoutExpired:
      stage = killed(out, proc, running_stage(out))
    record(i, round(moment, 1), f"at {moment:5.1f} s in {stage}", out)
  stages = [x for x in args.at_stages.split(",") if x]
  for i, stage in enumerate(stages, start=len(results)):
    out = os.path.join(args.out, f"kill_{i}")
    if stage.startswith("@"):
      marker = os.path.join(out, stage[1:])
    elif stage == "report":
      marker = os.path.join(out, "csl", "summary.json")
    else:
      marker = os.path.join(out, stage, "stage_key.json")
    proc = subprocess.Popen(cmd(out), start_new_session=True,
                            preexec_fn=_sigint_default, **quiet)
    while not os.path.exists(marker) and proc.poll() is None:
      time.sleep(0.002)
    time.sleep(rng.uniform(0, args.max_delay))
    hit = "finished before the kill" if proc.poll() is not None else (
        "report" if stage == "report" else running_stage(out))
    hit = killed(out, proc, hit) if proc.poll() is None else hit
    record(i, None, f"at the start of {stage} in {hit}", out)
  with open(os.path.join(args.out, "results.json"), "w") as f:
    json.dump({"uninterrupted_seconds": round(total, 1), "digest": want,
               "kills": results}, f, indent=1)
  sys.exit(0 if all(r["identical"] and not r.get("leftovers")
                    for r in results) else 1)


if __name__ == "__main__":
  run_script(main)
