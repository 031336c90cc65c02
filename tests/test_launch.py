"""The TPU launch scripts in --dry_run mode: the commands they would run."""

import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(script, *args):
  return subprocess.run(["bash", os.path.join(ROOT, "launch", script),
                         *args], cwd=ROOT, capture_output=True, text=True)


def test_create_and_delete_print_gcloud_commands():
  out = run("create_tpu.sh", "--name", "csl", "--zone", "europe-west4-a",
            "--accelerator_type", "v3-32", "--dry_run")
  assert out.returncode == 0, out.stderr
  assert "gcloud compute tpus tpu-vm create csl" in out.stdout
  assert "v3-32" in out.stdout
  out = run("delete_tpu.sh", "--name", "csl", "--zone", "z", "--dry_run")
  assert out.returncode == 0 and "tpu-vm delete csl" in out.stdout


def test_train_runs_t5x_on_all_workers():
  out = run("train.sh", "--name", "csl", "--zone", "z", "--gin_file",
            "gin/t5x/scan.gin", "--mixture", "scan_addprim_jump_csl_mixture",
            "--data", "gs://b/data", "--model_dir", "gs://b/runs/x",
            "--dry_run")
  assert out.returncode == 0, out.stderr
  assert "--worker=all" in out.stdout
  assert "python -m t5x.train --gin_file=gin/t5x/scan.gin" in out.stdout
  assert "scan_addprim_jump_csl_mixture" in out.stdout


@pytest.mark.parametrize("args", [
    ["--dry_run", "--name"],  # a flag without its value
    ["--name", "csl", "--zone", "z", "--bogus", "--dry_run"],
])
def test_bad_flags_exit_2(args):
  assert run("create_tpu.sh", *args).returncode == 2
