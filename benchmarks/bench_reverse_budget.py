"""The SCAN reverse model's budget, chosen without the test set (issue 13).

Yao & Koller's gains on SCAN length come from backtranslating programs
longer than any training output: the program -> command model must
extrapolate in length. This measures that on the training data alone: the
reverse model trains on SCAN length's training pairs whose programs have
at most `--train_max` actions and decodes those with more (the longest
training programs, 17-22 actions by default), then SCAN's interpreter says
which decoded commands are correct (evaluate to their program). One row per
setting: training steps and the relative-position buckets (the T5 bias's
`num_buckets`/`max_distance`: does clipping the distances, so that every
bucket a longer input meets is trained, help?) and the sinusoidal absolute
positions (`+abs`; the experiments' models have them, and an encoder with
them meets positions it never trained on in a longer program).

  python3 benchmarks/bench_reverse_budget.py --out /tmp/rev \
      [--settings 1000 4000 4000:32:128 4000+abs] [--dev 1000] [--seeds 0 1 2]

A setting is STEPS[:NUM_BUCKETS:MAX_DISTANCE][+abs] (MAX_DISTANCE >
NUM_BUCKETS // 2, as `Seq2SeqConfig` requires). The model is
gin/experiments/cpu_small.gin's, with the lengths of
gin/experiments/scan_pcfg_bt.gin's reverse model (64 in, 16 out), word
vocabulary, greedy decoding. `--seeds` trains each setting once per seed
(initialization and data order): how far a reverse model extrapolates
varies by seed (BENCHMARKS.md, Issue 13, "The forward budget doubled again").

`--hold_out REGEX` asks the other thing SCAN length's test needs of a
reverse model: to write a construction it never saw in its targets (the
test's `verb around dir thrice`, in no training command). Training keeps
the pairs whose command does not match REGEX (all lengths); the test is up
to `--dev` of those that do, e.g. `(walk|run|jump|look) around (left|right)
twice` (`turn around left twice` stays in training, as `turn around left
thrice` does in SCAN length's). `--dropouts` crosses every setting with
the model's dropout rates (cpu_small's is 0).
"""

import argparse
import json
import os
import random
import re
import subprocess
import sys
import time

from csl_jax.data import scan
from csl_jax.data import tsv
from csl_jax.errors import InputError
from csl_jax.errors import run_script

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# gin/experiments/cpu_small.gin's model and training (that file also binds
# the experiment runner, which `csl-jax train` does not load).
MODEL = [f"--gin.seq2seq.{k}={v}" for k, v in (
    ("Seq2SeqConfig.d_model", 64), ("Seq2SeqConfig.num_heads", 4),
    ("Seq2SeqConfig.d_ff", 256), ("Seq2SeqConfig.num_layers", 2),
    ("Seq2SeqConfig.dropout", 0.0), ("Seq2SeqConfig.max_input_len", 64),
    ("Seq2SeqConfig.max_target_len", 16), ("TrainConfig.batch_size", 64),
    ("TrainConfig.learning_rate", 2e-3), ("TrainConfig.warmup_steps", 200))]


def make_data(out: str, train_max: int, dev: int, hold_out: str = "") -> str:
  """train.tsv: programs <= train_max actions -> commands; test.tsv: up to
  `dev` of the longer ones (a fixed shuffle). With `hold_out`, the split is
  by whether the command matches it instead."""
  data = os.path.join(out, "data")
  os.makedirs(data, exist_ok=True)
  train, _ = scan.make_split("length")
  reverse = [tsv.Example(e.output, e.input) for e in train]
  if hold_out:
    held = re.compile(hold_out)
    short = [e for e in reverse if not held.search(e.output)]
    long = [e for e in reverse if held.search(e.output)]
  else:
    short = [e for e in reverse if len(e.input.split()) <= train_max]
    long = [e for e in reverse if len(e.input.split()) > train_max]
  if not long:
    sys.exit(f"no training command matches --hold_out {hold_out!r}"
             if hold_out else f"no training program is over --train_max "
             f"{train_max} actions")
  random.Random(0).shuffle(long)
  tsv.write_tsv(os.path.join(data, "train.tsv"), short)
  tsv.write_tsv(os.path.join(data, "test.tsv"), long[:dev])
  return data


def _csl_jax(args, env):
  proc = subprocess.run([sys.executable, "-m", "csl_jax.cli.main"] + args,
                        cwd=ROOT, env=env, capture_output=True, text=True,
                        check=False)
  if proc.returncode:
    sys.exit(f"csl-jax {args[0]} failed:\n{proc.stderr[-3000:]}")


def correct(predictions: str, hold_out: str = ""):
  """(share of valid SCAN commands, share that evaluate to their program,
  share written with the held-out construction)."""
  with open(predictions, encoding="utf-8") as f:
    rows = [line.rstrip("\n").split("\t") for line in f]
  valid = right = written = 0
  for row in rows:
    program, command = row[0], row[-1]
    written += bool(hold_out and re.search(hold_out, command))
    try:
      actions = scan.interpret(command)
    except InputError:
      continue
    valid += 1
    right += actions == program
  return valid / len(rows), right / len(rows), written / len(rows)


def run_setting(out: str, data: str, setting: str, seed: int, env,
                dropout: float = 0.0, hold_out: str = "") -> dict:
  plain, absolute = (setting[:-len("+abs")], True) if setting.endswith(
      "+abs") else (setting, False)
  parts = plain.split(":")
  flags = [f"--gin.seq2seq.TrainConfig.num_steps={int(parts[0])}",
           f"--gin.seq2seq.TrainConfig.seed={seed}",
           f"--gin.seq2seq.Seq2SeqConfig.absolute_positions={absolute}",
           f"--gin.seq2seq.Seq2SeqConfig.dropout={dropout}"]
  if len(parts) == 3:
    flags += [f"--gin.seq2seq.Seq2SeqConfig.num_buckets={int(parts[1])}",
              f"--gin.seq2seq.Seq2SeqConfig.max_distance={int(parts[2])}"]
  name = setting.replace(":", "_").replace("+", "_") + (
      f"_drop{dropout:g}" if dropout else "") + (f"_seed{seed}" if seed else "")
  model = os.path.join(out, f"model_{name}")
  task = ["--task", "reverse_budget", "--data_dir", data]
  start = time.time()
  _csl_jax(["train"] + task + ["--out", model] + MODEL + flags, env)
  seconds = time.time() - start
  predictions = os.path.join(out, f"decode_{name}")
  _csl_jax(["decode"] + task + ["--model", model, "--split", "test",
                                "--out", predictions] + MODEL + flags, env)
  with open(os.path.join(model, "summary.json"), encoding="utf-8") as f:
    final_loss = json.load(f)["final_loss"]
  with open(os.path.join(predictions, "summary.json"), encoding="utf-8") as f:
    exact = json.load(f)["exact_match"]
  valid, right, written = correct(
      os.path.join(predictions, "predictions.tsv"), hold_out)
  return {"setting": setting, "dropout": dropout, "seed": seed,
          "train_seconds": round(seconds, 1),
          "final_loss": round(final_loss, 4), "exact_match": exact,
          "valid": round(100 * valid, 1), "correct": round(100 * right, 1),
          "written_with_held_out": round(100 * written, 1)}


def main() -> None:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--out", required=True)
  p.add_argument("--settings", nargs="+", default=["1000", "4000"])
  p.add_argument("--train_max", type=int, default=16)
  p.add_argument("--dev", type=int, default=1000)
  p.add_argument("--seeds", type=int, nargs="+", default=[0])
  p.add_argument("--dropouts", type=float, nargs="+", default=[0.0])
  p.add_argument("--hold_out", default="",
                 help="a regex over commands: test on the matching pairs")
  args = p.parse_args()
  data = make_data(args.out, args.train_max, args.dev, args.hold_out)
  spm = os.path.join(args.out, "vocab", "spm")
  env = dict(os.environ)
  _csl_jax(["vocab", "--tsv", os.path.join(data, "train.tsv"), "--tsv",
            os.path.join(data, "test.tsv"), "--out", spm, "--model_type",
            "word"], env)
  env.update(CSL_JAX_VOCAB="sentencepiece", CSL_JAX_SPM=spm + ".model")
  print("| setting | dropout | seed | train s | final loss | exact match | "
        "valid | correct | written with the held-out construction |\n"
        "|---|---|---|---|---|---|---|---|---|")
  rows = []
  for setting in args.settings:
    for seed in args.seeds:
      for dropout in args.dropouts:
        r = run_setting(args.out, data, setting, seed, env, dropout,
                        args.hold_out)
        rows.append(r)
        print(f"| {r['setting']} | {dropout:g} | {seed} | "
              f"{r['train_seconds']} | {r['final_loss']} | "
              f"{r['exact_match']:.1f} % | {r['valid']} % | {r['correct']} % | "
              f"{r['written_with_held_out']} % |", flush=True)
  with open(os.path.join(args.out, "results.json"), "w",
            encoding="utf-8") as f:
    json.dump(rows, f, indent=1)


if __name__ == "__main__":
  run_script(main)
