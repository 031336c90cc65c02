"""`csl-jax augment` end to end on SCAN (shortened), and its stage cache."""

import json
import os

import gin

from csl_jax.cli import main as cli

GIN = os.path.join(os.path.dirname(os.path.dirname(__file__)), "gin", "csl",
                   "scan_augment.gin")


def test_augment_runs_every_stage_and_reuses_them(tmp_path):
  out = str(tmp_path / "run")
  args = ["augment", "--out", out, f"--gin_file={GIN}",
          "--gin.augment.num_samples=2000",
          "--gin.FitConfig.num_steps=40", "--gin.FitConfig.num_restarts=2",
          "--gin.FitConfig.restart_steps=10"]
  gin.clear_config()
  assert cli.main(args) == 0
  with open(os.path.join(out, "summary.json")) as f:
    summary = json.load(f)
  assert summary["num_rules"] == 20 and summary["num_examples"] == 2000
  for name in ("data/train.tsv", "grammar/grammar.qcfg", "model/params.npz",
               "parse/predictions.tsv", "samples/samples.tsv", "report.html",
               "report.md"):
    assert os.path.exists(os.path.join(out, name)), name
  with open(os.path.join(out, "report.html")) as f:
    page = f.read()
  assert "<svg" in page and "NT_1 twice ### NT_1 NT_1" in page
  # Same config: every stage is reused; more samples: only sampling reruns.
  gin.clear_config()
  assert cli.main(args) == 0
  gin.clear_config()
  assert cli.main(args[:-4] + ["--gin.augment.num_samples=3000"] +
                  args[-3:]) == 0
  with open(os.path.join(out, "report.md")) as f:
    report = f.read()
  assert "fit:" in report and "(reused)" in report
  with open(os.path.join(out, "samples", "summary.json")) as f:
    assert json.load(f)["num_examples"] == 3000
  gin.clear_config()
