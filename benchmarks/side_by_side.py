"""CSL side by side with the reference implementation, one run, one box.

The reference (google-research/language, `language/compgen/csl` and
`language/compgen/nqg`) is NOT part of this repository: fetch it into a
scratch directory yourself and pass that directory (the one holding
`language/`) as --reference_dir. Its stages after induction need `tf_keras`
(TF_USE_LEGACY_KERAS=1, set here) and `tensorboard`: install them into a
virtual environment of their own (`python3 -m venv --system-site-packages
/tmp/refvenv && /tmp/refvenv/bin/pip install tf_keras==2.21.*`, for
TensorFlow 2.21) and pass its python as --reference_python, so the
project's environment stays as it is. Each stage of each dataset runs the
reference, then ours, one after the other, each as its own process under
/usr/bin/time (start-up included: the user waits for it), and the table
gives CPU (user + sys), wall time and peak RSS per process with the
reference / ours ratios.

  python3 benchmarks/side_by_side.py --reference_dir /tmp/refcsl \
      --reference_python /tmp/refvenv/bin/python \
      --data_dir ../shared/data --out /tmp/side_by_side.json

Stages (each needs the ones before it; they are run too when left out):

- `induction`: the reference's `induction.search_main` with its task's
  `induction_config.json`, seed rules and target CFG as its demo scripts
  give them; ours `csl-jax induce` with `gin/csl/<task>.gin` and the
  reference's log2 penalty (`InductionConfig.log_base` 2). Same result: the
  two grammars' rules.
- `forests`: from here on both sides work on the reference's induced
  grammar (the same work on both sides). The reference's
  `model.data.write_examples` (a forest per training example, written as
  tf.Examples) against ours building the training forests and their padded
  batches (`csl_jax.model.train.Dataset`, what `csl-jax fit` does before
  its first step; this script runs it as `side_by_side.py _our_forests`).
  Same result: examples written / derivable.
- `fit`: the reference's `model.training.train_model` with its task's
  `model_config` (its fixed number of steps) against `csl-jax fit
  --gin_file=gin/csl/<task>_model.gin` (ours stops at convergence). Each
  side with its own default settings for the task; the result is the
  steps, and the parse row below gives the accuracy each fit reached.
- `parse`: the reference's `model.inference.eval_model` (which also checks
  for each example whether the grammar can derive the gold output) against
  `csl-jax parse`, on the test inputs. Same result: exact-match accuracy.
- `sample`: 100,000 pairs, the reference's
  `augment.generate_synthetic_examples` with its task's `augment_config`
  and the fitted model, against `csl-jax sample` with the recursion depth
  of the reference's config. Same result: distinct pairs and the share of
  right pairs (SCAN: the output the SCAN interpreter gives the input;
  GeoQuery: an output our typed FunQL CFG, `tasks/geoquery/funql.cfg`,
  accepts; the reference samples under its own looser `target_cfg.txt`).

--reference_max_steps caps the reference's training steps (a copy of its
model config with `training_steps` lowered; the table says so), for
configs that take longer than the run can afford (GeoQuery's 2,000 steps
of one batch each).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from typing import Dict, List, Tuple

from csl_jax.errors import run_script

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CSL = "language/compgen/csl"
_NUM_SAMPLES = 100_000
# Runs a reference module as `python -m` would. The released
# `augment/joint_sampler.py` uses typing's FrozenSet, List, Tuple and Union
# without importing them (a NameError at import); they are given as
# builtins here, so the reference's files stay as released.
_RUN_REFERENCE = (
    "import builtins, runpy, sys, typing\n"
    "for n in ('FrozenSet', 'List', 'Tuple', 'Union'):\n"
    "  setattr(builtins, n, getattr(typing, n))\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)\n")


class Dataset:
  """Where a dataset's data lives and each side's settings for it."""

  def __init__(self, sub: str, task: str, gin: str, model_config: str,
               max_nts: int, max_depth: int):
    self.sub = sub                  # data subdirectory
    self.task = task                # the reference's task directory
    self.gin = gin                  # our gin/csl/<gin>.gin, <gin>_model.gin
    self.model_config = model_config  # the reference's model config
    self.max_nts = max_nts          # fit.max_nts of our model gin file
    self.max_depth = max_depth      # the reference's max_recursions


# The reference's SCAN model config: |S| = 2 (`model_config_t2.json`), the
# paper's choice for these splits (B.4); ours: gin/csl/scan_model.gin.
DATASETS = {
    "scan/addprim_jump": Dataset("scan/addprim_jump", "scan", "scan",
                                 "model_config_t2.json", 2, 5),
    "scan/addprim_turn_left": Dataset("scan/addprim_turn_left", "scan",
                                      "scan", "model_config_t2.json", 2, 5),
    "scan/length": Dataset("scan/length", "scan", "scan",
                           "model_config_t2.json", 2, 5),
    "geoquery/standard": Dataset("geoquery/standard", "geoquery",
                                 "geoquery", "model_config.json", 4, 20),
}


class Run:
  """One dataset's run: paths, and the reference's interpreter and env."""

  def __init__(self, name: str, ref_dir: str, ref_python: str,
               data_dir: str, work: str, ref_max_steps: int = 0,
               ref_model_config: str = ""):
    self.name, self.ds = name, DATASETS[name]
    self.ref_max_steps = ref_max_steps
    self.ref_model_config = ref_model_config or self.ds.model_config
    self.ref_dir, self.ref_python, self.work = ref_dir, ref_python, work
    self.train = os.path.join(data_dir, self.ds.sub, "train.tsv")
    self.test = os.path.join(data_dir, self.ds.sub, "test.tsv")
    self.ref_env = dict(os.environ, PYTHONPATH=ref_dir,
                        TF_CPP_MIN_LOG_LEVEL="3", TF_USE_LEGACY_KERAS="1")
    self.ref_rules = self.path("ref_rules.txt")
    self.ref_model = self.path("ref_model")
    self.our_model = self.path("ours_fit")

  def path(self, name: str) -> str:
    return os.path.join(self.work, name)

  def task_file(self, name: str) -> str:
    return f"{_CSL}/tasks/{self.ds.task}/{name}"

  def model_config(self) -> str:
    """The reference's model config; with `ref_max_steps`, a copy in the
    work directory with `training_steps` capped there."""
    config = self.task_file(self.ref_model_config)
    with open(os.path.join(self.ref_dir, config), encoding="utf-8") as f:
      values = json.load(f)
    if not self.ref_max_steps or values["training_steps"] <= \
        self.ref_max_steps:
      return config
    values["training_steps"] = self.ref_max_steps
    capped = self.path("ref_model_config.json")
    with open(capped, "w", encoding="utf-8") as f:
      json.dump(values, f)
    return capped

  def target_grammar(self) -> List[str]:
    """The reference's output CFG flag, for the tasks that have one."""
    if self.ds.task == "scan":
      return []
    return ["--target_grammar", self.task_file("target_cfg.txt")]

  def reference(self, module: str, *flags: str) -> Tuple[dict, str]:
    return timed([self.ref_python, "-c", _RUN_REFERENCE,
                  f"language.compgen.csl.{module}", *flags], self.ref_dir,
                 self.ref_env)

  def ours(self, *cmd: str) -> Tuple[dict, str]:
    return timed(list(cmd), _REPO)


def timed(cmd: List[str], cwd: str, env=None) -> Tuple[Dict[str, float],
                                                         str]:
  """Runs `cmd` under /usr/bin/time; (CPU, wall and peak RSS, its output)."""
  with tempfile.NamedTemporaryFile("r", suffix=".time") as f:
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "%e %U %S %M", "-o", f.name] + cmd,
        cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, check=False)
    if proc.returncode:
      sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n"
               f"{proc.stdout[-3000:]}")
    wall, user, system, rss_kb = f.read().split()[-4:]
  return {"wall": float(wall), "cpu": float(user) + float(system),
          "peak_rss_gb": int(rss_kb) / 2**20}, proc.stdout


def summary(out_dir: str) -> dict:
  """A `csl-jax` stage's summary.json."""
  with open(os.path.join(out_dir, "summary.json"), encoding="utf-8") as f:
    return json.load(f)


def rules_of(path: str) -> set:
  with open(path, encoding="utf-8") as f:
    return {" ".join(line.split()) for line in f if line.strip()}


def pairs_of(path: str) -> List[Tuple[str, str]]:
  with open(path, encoding="utf-8") as f:
    return [tuple(" ".join(c.split()) for c in line.rstrip("\n").split("\t"))
            for line in f if line.strip()]


def induction(run: Run) -> dict:
  ref_flags = ["--input", run.train, "--output", run.ref_rules,
               "--config", run.task_file("induction_config.json")]
  seeding = None
  if run.ds.task == "geoquery":
    # The reference writes its exact-match seed rules in a step of its own;
    # ours makes them inside `induce`, so the step counts on its side.
    seeds = run.path("seed_rules.txt")
    seeding, _ = timed([run.ref_python, "-m",
                        "language.compgen.csl.tasks.generate_exact_match_rules",
                        "--input", run.train, "--output", seeds],
                       run.ref_dir, run.ref_env)
    ref_flags += ["--seed_rules_file", seeds] + run.target_grammar()
  ref, _ = run.reference("induction.search_main", *ref_flags)
  if seeding:
    ref = {"wall": ref["wall"] + seeding["wall"],
           "cpu": ref["cpu"] + seeding["cpu"],
           "peak_rss_gb": max(ref["peak_rss_gb"], seeding["peak_rss_gb"])}
  ours_dir = run.path("ours_induce")
  # The reference's penalty is in bits (log2), the paper's Eq. 7 in nats.
  ours, _ = run.ours("csl-jax", "induce", f"--gin_file=gin/csl/{run.ds.gin}.gin",
                     "--gin.InductionConfig.log_base=2.0",
                     "--train", run.train, "--out", ours_dir)
  a = rules_of(run.ref_rules)
  b = rules_of(os.path.join(ours_dir, "grammar.qcfg"))
  same = f"{'yes' if a == b else 'no'} ({len(a)} / {len(b)} rules)"
  return {"reference": ref, "ours": ours, "same": same,
          "reference_rules": len(a), "our_rules": len(b),
          "same_rules": a == b, "only_reference": sorted(a - b)[:5],
          "only_ours": sorted(b - a)[:5]}


def forests(run: Run) -> dict:
  records = run.path("ref_examples.tfrecord")
  ref, ref_log = run.reference(
      "model.data.write_examples", "--input", run.train, "--output", records,
      "--config", run.task_file(run.ref_model_config), "--rules",
      run.ref_rules)
  written = re.findall(r"Wrote (\d+) examples", ref_log)
  ours, our_log = run.ours(sys.executable, os.path.abspath(__file__),
                           "_our_forests", run.ref_rules, run.train,
                           str(run.ds.max_nts))
  got = json.loads(our_log.strip().splitlines()[-1])
  same = (f"{written[-1] if written else '?'} examples / "
          f"{got['num_examples']} ({got['num_distinct']} distinct, "
          f"{got['num_underivable']} underivable; forests "
          f"{got['forest_seconds']:.1f} s)")
  return {"reference": ref, "ours": ours, "same": same,
          "reference_examples": int(written[-1]) if written else None,
          "ours_forests": got}


def our_forests(grammar: str, train: str, max_nts: int) -> None:
  """Ours: the forests and padded batches of `csl-jax fit`, nothing else."""
  import time  # pylint: disable=g-import-not-at-top
  from csl_jax.data import tsv  # pylint: disable=g-import-not-at-top
  from csl_jax.model import train as train_lib  # pylint: disable=g-import-not-at-top
  from csl_jax.qcfg.rules import load_rules  # pylint: disable=g-import-not-at-top
  start = time.time()
  rules = load_rules(grammar)
  pairs = [(e.input.split(), e.output.split()) for e in tsv.read_tsv(train)]
  data = train_lib.Dataset(rules, pairs, max_nts)
  print(json.dumps({"num_examples": len(pairs),
                    "num_distinct": len(data.pairs),
                    "num_underivable": data.num_underivable,
                    "num_batches": len(data.batches),
                    "forest_seconds": data.forest_seconds,
                    "seconds": time.time() - start}))


def fit(run: Run) -> dict:
  config = run.model_config()
  ref, ref_log = run.reference(
      "model.training.train_model", "--input",
      run.path("ref_examples.tfrecord"), "--model_dir", run.ref_model,
      "--config", config)
  with open(os.path.join(run.ref_dir, config), encoding="utf-8") as f:
    ref_steps = json.load(f)["training_steps"]
  with open(os.path.join(run.ref_dir, run.task_file(run.ref_model_config)),
            encoding="utf-8") as f:
    config_steps = json.load(f)["training_steps"]
  losses = re.findall(r"\] loss: tf.Tensor\(([-0-9.eE+]+)", ref_log)
  ours, _ = run.ours("csl-jax", "fit",
                     f"--gin_file=gin/csl/{run.ds.gin}_model.gin",
                     "--grammar", run.ref_rules, "--train", run.train,
                     "--out", run.our_model)
  got = summary(run.our_model)
  note = (f", capped; its config {config_steps}"
          if ref_steps < config_steps else "")
  same = (f"{ref_steps} ({run.ref_model_config}{note}) / "
          f"{got['num_steps']} steps (accuracy: "
          f"parse row; forests in our fit {got['forest_seconds']:.1f} s)")
  return {"reference": ref, "ours": ours, "same": same,
          "reference_steps": ref_steps, "reference_config_steps": config_steps,
          "reference_final_loss": float(losses[-1]) if losses else None,
          "our_steps": got["num_steps"], "our_final_loss": got["final_loss"],
          "our_forest_seconds": got["forest_seconds"]}


def parse(run: Run) -> dict:
  ref, ref_log = run.reference(
      "model.inference.eval_model", "--input", run.test, "--model_dir",
      run.ref_model, "--config", run.model_config(), "--rules",
      run.ref_rules, *run.target_grammar())
  metric = lambda name: float(re.findall(
      rf"\] {name} at \S+: ([-0-9.eE+]+)", ref_log)[-1]) * 100
  out = run.path("ours_parse")
  ours, _ = run.ours("csl-jax", "parse", "--model", run.our_model,
                     "--data", run.test, "--out", out)
  got = summary(out)
  ref_acc, ref_cov = metric("accuracy"), metric("coverage")
  same = (f"accuracy {ref_acc:.1f} % / {got['accuracy']:.1f} % "
          f"({got['num_examples']} test inputs)")
  return {"reference": ref, "ours": ours, "same": same,
          "reference_accuracy": ref_acc, "reference_coverage": ref_cov,
          "reference_can_parse": metric("can_parse"),
          "our_accuracy": got["accuracy"], "our_coverage": got["coverage"]}


def _right_share(run: Run, pairs: List[Tuple[str, str]]) -> float:
  """SCAN: the interpreter's output; GeoQuery: accepted by the FunQL CFG."""
  if run.ds.task == "scan":
    from csl_jax.data import scan  # pylint: disable=g-import-not-at-top
    right = sum(scan.is_valid_command(x) and scan.interpret(x) == y
                for x, y in pairs)
  else:
    from csl_jax.qcfg.output_cfg import load_output_cfg  # pylint: disable=g-import-not-at-top
    cfg = load_output_cfg(os.path.join(_REPO, "tasks/geoquery/funql.cfg"))
    right = sum(cfg.recognizes(y.split()) for _, y in pairs)
  return 100 * right / max(len(pairs), 1)


def sample(run: Run) -> dict:
  ref_out = run.path("ref_samples.tsv")
  ref, _ = run.reference(
      "augment.generate_synthetic_examples", "--augment_config",
      run.task_file("augment_config.json"), "--output", ref_out,
      "--num_examples", str(_NUM_SAMPLES), "--rules", run.ref_rules,
      "--model_dir", run.ref_model, "--model_config", run.model_config(),
      *run.target_grammar())
  out = run.path("ours_sample")
  ours, _ = run.ours("csl-jax", "sample", "--model", run.our_model,
                     "--num", str(_NUM_SAMPLES), "--max_depth",
                     str(run.ds.max_depth), "--out", out)
  a, b = pairs_of(ref_out), pairs_of(os.path.join(out, "samples.tsv"))
  right = "correct" if run.ds.task == "scan" else "in the FunQL CFG"
  ra, rb = _right_share(run, a), _right_share(run, b)
  same = (f"{len(set(a))} / {len(set(b))} distinct of {len(a)} / {len(b)}; "
          f"{ra:.1f} % / {rb:.1f} % {right}")
  return {"reference": ref, "ours": ours, "same": same,
          "reference_samples": len(a), "our_samples": len(b),
          "reference_distinct": len(set(a)), "our_distinct": len(set(b)),
          "reference_right": ra, "our_right": rb}


STAGES = {"induction": induction, "forests": forests, "fit": fit,
          "parse": parse, "sample": sample}
_NEEDS = {"forests": ["induction"], "fit": ["forests"], "parse": ["fit"],
          "sample": ["fit"]}


def with_needs(stages: List[str]) -> List[str]:
  """The stages and those they need, in STAGES order."""
  todo, chosen = list(stages), set()
  while todo:
    s = todo.pop()
    if s not in chosen:
      chosen.add(s)
      todo += _NEEDS.get(s, [])
  return [s for s in STAGES if s in chosen]


def fmt(m: dict) -> str:
  return f"{m['cpu']:.1f} s / {m['wall']:.1f} s / {m['peak_rss_gb']:.2f} GB"


def main() -> None:
  if sys.argv[1:2] == ["_our_forests"]:
    our_forests(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    return
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--reference_dir", required=True,
                 help="the directory holding the reference's `language/`")
  p.add_argument("--reference_python", default=sys.executable,
                 help="the interpreter for the reference (one with tf_keras)")
  p.add_argument("--data_dir", required=True, help="../shared/data")
  p.add_argument("--datasets", nargs="+", default=list(DATASETS),
                 choices=list(DATASETS))
  p.add_argument("--stages", nargs="+", default=list(STAGES),
                 choices=list(STAGES))
  p.add_argument("--reference_max_steps", type=int, default=0,
                 help="cap the reference's training steps (0: its config's)")
  p.add_argument("--reference_model_config", default="",
                 help="another model config of the reference's task "
                 "directory, e.g. model_config_t4.json for SCAN (default: "
                 "each dataset's, see DATASETS)")
  p.add_argument("--out", help="JSON of every measurement")
  args = p.parse_args()
  if not os.path.isdir(os.path.join(args.reference_dir, _CSL)):
    sys.exit(f"no {_CSL} under {args.reference_dir}")
  results = {}
  print("| dataset | stage | reference CPU / wall / RSS | ours CPU / wall / "
        "RSS | CPU ratio | wall ratio | same result (reference / ours) |")
  print("|---|---|---|---|---|---|---|")
  for name in args.datasets:
    with tempfile.TemporaryDirectory() as work:
      run = Run(name, os.path.abspath(args.reference_dir),
                args.reference_python, os.path.abspath(args.data_dir), work,
                args.reference_max_steps, args.reference_model_config)
      for stage in with_needs(args.stages):
        r = STAGES[stage](run)
        results[f"{name} {stage}"] = r
        ref, ours = r["reference"], r["ours"]
        print(f"| {name} | {stage} | {fmt(ref)} | {fmt(ours)} | "
              f"{ref['cpu'] / ours['cpu']:.1f}x | "
              f"{ref['wall'] / ours['wall']:.1f}x | {r['same']} |",
              flush=True)
        if args.out:  # after every stage: a long run keeps what it measured
          with open(args.out, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
  run_script(main)
