"""CSL as a parser (issue 4): fit the model over an induced grammar, parse the
test set, for several seeds. Each step is a fresh `csl-jax` process.

  python3 benchmarks/bench_csl_parser.py [--only scan_addprim_jump,...]
      [--seeds 0,1,2] [--workdir /tmp/csl_bench]

Grammars come from benchmarks/bench_induction.py's work dir (induced there if
missing). Reads ../shared/data.
"""

import argparse
import json
import os

from bench_induction import DATA, timed as run  # Same directory.

from csl_jax.errors import run_script

RUNS = {  # name: (data dir, induction gin, model gin)
    "scan_addprim_jump": ("scan/addprim_jump", "scan", "scan_model"),
    "scan_addprim_turn_left": ("scan/addprim_turn_left", "scan",
                               "scan_model"),
    "scan_length": ("scan/length", "scan", "scan_model"),
    "geoquery_standard": ("geoquery/standard", "geoquery",
                          "geoquery_model"),
    "cogs": (None, "cogs", "cogs_model"),
}


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--workdir", default="/tmp/csl_bench")
  parser.add_argument("--only", default="")
  parser.add_argument("--seeds", default="0,1,2")
  args = parser.parse_args()
  names = args.only.split(",") if args.only else list(RUNS)
  print("| run | seed | fit s (steps) | forests s | train log p(y|x) | "
        "parse s (inputs/s) | coverage | accuracy |")
  print("|---|---|---|---|---|---|---|---|")
  for name in names:
    data_dir, induce_gin, model_gin = RUNS[name]
    if data_dir is None:  # COGS: variable-free files prepared locally
      data = os.path.join(args.workdir, "cogs_data")
      if not os.path.exists(os.path.join(data, "train.tsv")):
        run(["csl-jax", "prepare", "cogs", "--data_dir",
             os.path.join(DATA, "cogs"), "--out", data])
    else:
      data = os.path.join(DATA, data_dir)
    train, test = (os.path.join(data, "train.tsv"),
                   os.path.join(data, "test.tsv"))
    grammar_dir = os.path.join(args.workdir, name)
    grammar = os.path.join(grammar_dir, "grammar.qcfg")
    if not os.path.exists(grammar):
      run(["csl-jax", "induce", "--train", train, "--out", grammar_dir,
           f"--gin_file=gin/csl/{induce_gin}.gin"])
    for seed in args.seeds.split(","):
      model = os.path.join(args.workdir, f"{name}_model_{seed}")
      ckpt = os.path.join(model, "checkpoint.msgpack")
      if os.path.exists(ckpt):
        os.remove(ckpt)  # time a full fit
      fit_s = run(["csl-jax", "fit", "--grammar", grammar, "--train", train,
                   "--out", model, f"--gin_file=gin/csl/{model_gin}.gin",
                   f"--gin.FitConfig.seed={seed}"])
      parsed = os.path.join(model, "test_parse")
      run(["csl-jax", "parse", "--model", model, "--data", test, "--out",
           parsed])
      with open(os.path.join(model, "summary.json")) as f:
        fs = json.load(f)
      with open(os.path.join(parsed, "summary.json")) as f:
        ps = json.load(f)
      print(f"| {name} | {seed} | {fit_s:.1f} ({fs['num_steps']}) | "
            f"{fs['forest_seconds']:.2f} | "
            f"{fs['train_log_p_y_given_x']:.5f} | {ps['parse_seconds']:.2f} "
            f"({ps['examples_per_second']:.0f}) | {ps['coverage']:.1f}% | "
            f"{ps['accuracy']:.1f}% |", flush=True)


if __name__ == "__main__":
  run_script(main)
