"""CSL side by side with the reference implementation, one run, one box.

The reference (google-research/language, `language/compgen/csl` and
`language/compgen/nqg`) is NOT part of this repository: fetch it into a
scratch directory yourself and pass that directory (the one holding
`language/`) as --reference_dir. Each stage of each dataset runs the
reference, then ours, one after the other, each as its own process under
/usr/bin/time (start-up included: the user waits for it), and the table
gives CPU (user + sys), wall time and peak RSS per process with the
reference / ours ratios; for induction it checks the two grammars are the
same rules.

  python3 benchmarks/side_by_side.py --reference_dir /tmp/refcsl \
      --data_dir ../shared/data --out /tmp/side_by_side.json

Stages: `induction` (the reference's `induction.search_main` with its
task's `induction_config.json`, seed rules and target CFG as its demo
scripts give them; ours `csl-jax induce` with `gin/csl/<task>.gin` and the
reference's log2 penalty, `InductionConfig.log_base` 2).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from typing import Dict, List

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CSL = "language/compgen/csl"

# dataset -> (data subdirectory, the reference's task, our gin file)
DATASETS = {
    "scan/addprim_jump": ("scan/addprim_jump", "scan", "scan"),
    "scan/addprim_turn_left": ("scan/addprim_turn_left", "scan", "scan"),
    "scan/length": ("scan/length", "scan", "scan"),
    "geoquery/standard": ("geoquery/standard", "geoquery", "geoquery"),
}


def timed(cmd: List[str], cwd: str, env=None) -> Dict[str, float]:
  """Runs `cmd` under /usr/bin/time; CPU, wall and peak RSS."""
  with tempfile.NamedTemporaryFile("r", suffix=".time") as f:
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "%e %U %S %M", "-o", f.name] + cmd,
        cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, check=False)
    if proc.returncode:
      sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n"
               f"{proc.stderr[-3000:]}")
    wall, user, system, rss_kb = f.read().split()[-4:]
  return {"wall": float(wall), "cpu": float(user) + float(system),
          "peak_rss_gb": int(rss_kb) / 2**20}


def rules_of(path: str) -> set:
  with open(path, encoding="utf-8") as f:
    return {" ".join(line.split()) for line in f if line.strip()}


def induction(name: str, ref_dir: str, data_dir: str, work: str) -> dict:
  sub, task, gin = DATASETS[name]
  train = os.path.join(data_dir, sub, "train.tsv")
  env = dict(os.environ, PYTHONPATH=ref_dir, TF_CPP_MIN_LOG_LEVEL="3")
  ref_rules = os.path.join(work, "ref_rules.txt")
  cmd = [sys.executable, "-m", "language.compgen.csl.induction.search_main",
         "--input", train, "--output", ref_rules,
         "--config", f"{_CSL}/tasks/{task}/induction_config.json"]
  seeds = None
  if task == "geoquery":
    seeds = os.path.join(work, "seed_rules.txt")
    subprocess.run([sys.executable, "-m",
                    "language.compgen.csl.tasks.generate_exact_match_rules",
                    "--input", train, "--output", seeds], cwd=ref_dir,
                   env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    cmd += ["--seed_rules_file", seeds,
            "--target_grammar", f"{_CSL}/tasks/{task}/target_cfg.txt"]
  ref = timed(cmd, ref_dir, env)
  ours_dir = os.path.join(work, "ours")
  # The reference's penalty is in bits (log2), the paper's Eq. 7 in nats.
  ours = timed(["csl-jax", "induce", f"--gin_file=gin/csl/{gin}.gin",
                "--gin.InductionConfig.log_base=2.0",
                "--train", train, "--out", ours_dir], _REPO)
  a, b = rules_of(ref_rules), rules_of(os.path.join(ours_dir,
                                                     "grammar.qcfg"))
  return {"reference": ref, "ours": ours, "reference_rules": len(a),
          "our_rules": len(b), "same_rules": a == b,
          "only_reference": sorted(a - b)[:5], "only_ours": sorted(b - a)[:5]}


STAGES = {"induction": induction}


def main() -> None:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--reference_dir", required=True,
                 help="the directory holding the reference's `language/`")
  p.add_argument("--data_dir", required=True, help="../shared/data")
  p.add_argument("--datasets", nargs="+", default=list(DATASETS),
                 choices=list(DATASETS))
  p.add_argument("--stages", nargs="+", default=list(STAGES),
                 choices=list(STAGES))
  p.add_argument("--out", help="JSON of every measurement")
  args = p.parse_args()
  if not os.path.isdir(os.path.join(args.reference_dir, _CSL)):
    sys.exit(f"no {_CSL} under {args.reference_dir}")
  results = {}
  print("| dataset | stage | reference CPU / wall / RSS | ours CPU / wall / "
        "RSS | CPU ratio | wall ratio | same result |")
  print("|---|---|---|---|---|---|---|")
  for name in args.datasets:
    for stage in args.stages:
      with tempfile.TemporaryDirectory() as work:
        r = STAGES[stage](name, os.path.abspath(args.reference_dir),
                          os.path.abspath(args.data_dir), work)
      results[f"{name} {stage}"] = r
      ref, ours = r["reference"], r["ours"]
      fmt = lambda m: (f"{m['cpu']:.1f} s / {m['wall']:.1f} s / "
                       f"{m['peak_rss_gb']:.2f} GB")
      same = (f"{'yes' if r['same_rules'] else 'NO'} "
              f"({r['reference_rules']} / {r['our_rules']} rules)")
      print(f"| {name} | {stage} | {fmt(ref)} | {fmt(ours)} | "
            f"{ref['cpu'] / ours['cpu']:.1f}x | "
            f"{ref['wall'] / ours['wall']:.1f}x | {same} |", flush=True)
  if args.out:
    with open(args.out, "w", encoding="utf-8") as f:
      json.dump(results, f, indent=1)


if __name__ == "__main__":
  main()
