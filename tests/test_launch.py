"""The TPU launch scripts in --dry_run mode: the commands they would run."""

import json
import os
import shlex
import subprocess
import sys

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


def _commands(out):
  """The printed commands (lines after "+ "), each split into its words."""
  return [shlex.split(line[2:]) for line in out.stdout.splitlines()
          if line.startswith("+ ")]


def _steps(out):
  """gpu_bundle.sh's commands less its MPS daemon's (stopped, started,
  stopped: test_gpu_bundle_runs_lanes_in_time_then_packs)."""
  return [c for c in _commands(out) if "nvidia-cuda-mps-control" not in c]


def _remote(out):
  """The worker's command line train.sh prints, split into its words."""
  lines = out.stdout.splitlines()
  start = lines.index("  REMOTE (run on each worker):") + 1
  return shlex.split(lines[start].strip())


@pytest.mark.parametrize("accelerator_type, given, image, microbatches", [
    ("v3-32", "v3-32", "tpu-ubuntu2204-base", None),
    ("v4-8", "v4-8", "tpu-ubuntu2204-base", 4),
    ("v5litepod-16", "v5litepod-16", "v2-alpha-tpuv5-lite", 2),
    ("v5e-8", "v5litepod-8", "v2-alpha-tpuv5-lite", 4),  # gcloud's name
    ("v5p-8", "v5p-8", "v2-alpha-tpuv5", 2),
    ("v6e-16", "v6e-16", "v2-alpha-tpuv6e", None),
])
def test_create_picks_the_runtime_image_by_generation(
    accelerator_type, given, image, microbatches):
  out = run("create_tpu.sh", "--name", "csl", "--zone", "z", "--project",
            "p", "--accelerator_type", accelerator_type, "--dry_run")
  assert out.returncode == 0, out.stderr
  assert _commands(out) == [[
      "gcloud", "compute", "tpus", "tpu-vm", "create", "csl", "--zone=z",
      "--project=p", f"--accelerator-type={given}", f"--version={image}"]]
  if microbatches:
    assert f"--num_microbatches {microbatches} " in out.stdout
  else:
    assert "without microbatches" in out.stdout


@pytest.mark.parametrize("accelerator_type, given, image", [
    ("v4-32", "v4-32", "tpu-ubuntu2204-base"),
    ("v5e-16", "v5litepod-16", "v2-alpha-tpuv5-lite"),
    ("v5p-16", "v5p-16", "v2-alpha-tpuv5"),
    ("v6e-8", "v6e-8", "v2-alpha-tpuv6e"),
])
def test_queued_create_status_and_delete(accelerator_type, given, image):
  flags = ["--name", "csl", "--zone", "us-east5-b", "--dry_run"]
  out = run("create_tpu.sh", *flags, "--accelerator_type", accelerator_type,
            "--queued", "--spot")
  assert out.returncode == 0, out.stderr
  assert _commands(out) == [[
      "gcloud", "compute", "tpus", "queued-resources", "create", "csl",
      "--node-id=csl", "--zone=us-east5-b", f"--accelerator-type={given}",
      f"--runtime-version={image}", "--spot"]]
  assert "launch/status_tpu.sh --queued --name csl" in out.stdout
  out = run("status_tpu.sh", *flags, "--queued")
  assert out.returncode == 0, out.stderr
  assert _commands(out) == [[
      "gcloud", "compute", "tpus", "queued-resources", "describe", "csl",
      "--zone=us-east5-b", "--format=value(state.state)"]]
  out = run("delete_tpu.sh", *flags, "--queued")
  assert out.returncode == 0, out.stderr
  assert _commands(out)[0] == [
      "gcloud", "compute", "tpus", "queued-resources", "delete", "csl",
      "--zone=us-east5-b", "--force", "--quiet"]


def test_queued_id_and_version_override():
  out = run("create_tpu.sh", "--name", "node", "--zone", "z", "--dry_run",
            "--accelerator_type", "v6e-8", "--queued_id", "qr",
            "--version", "v2-alpha-tpuv6e-next")
  assert out.returncode == 0, out.stderr
  (command,) = _commands(out)
  assert command[4:7] == ["create", "qr", "--node-id=node"]
  assert "--runtime-version=v2-alpha-tpuv6e-next" in command
  out = run("status_tpu.sh", "--name", "node", "--zone", "z", "--dry_run",
            "--queued_id", "qr", "--full")
  assert _commands(out) == [["gcloud", "compute", "tpus", "queued-resources",
                             "describe", "qr", "--zone=z"]]
  out = run("status_tpu.sh", "--name", "node", "--zone", "z", "--dry_run")
  assert _commands(out)[0][3:6] == ["tpu-vm", "describe", "node"]


def test_unknown_accelerator_type_is_one_line_exit_2():
  out = run("create_tpu.sh", "--accelerator_type", "v9x-8", "--dry_run")
  assert out.returncode == 2 and not out.stdout
  assert out.stderr.count("\n") == 1
  assert "v9x-8: unknown TPU type" in out.stderr
  # An explicit --version needs no known type.
  out = run("create_tpu.sh", "--accelerator_type", "v9x-8", "--version",
            "some-image", "--dry_run")
  assert out.returncode == 0, out.stderr
  assert "--version=some-image" in out.stdout


def test_train_quotes_paths_with_spaces():
  out = run("train.sh", "--name", "csl", "--zone", "z",
            "--data", "gs://b/my data", "--model_dir", "gs://b/runs/my run",
            "--mixture", "scan_addprim_jump_csl_mixture",
            "--input_prefix", "semanticparse: ", "--num_microbatches", "4",
            "--gin", "EVAL_SPLIT='dev'", "--dry_run")
  assert out.returncode == 0, out.stderr
  words = _remote(out)
  assert words[:3] == ["cd", "~/csl_jax", "&&"]
  assert "CSL_JAX_DATA=gs://b/my data" in words
  assert "CSL_JAX_INPUT_PREFIX=semanticparse: " in words
  assert "--gin.MODEL_DIR='gs://b/runs/my run'" in words
  assert ("--gin.MIXTURE_OR_TASK_NAME='scan_addprim_jump_csl_mixture'"
          in words)
  assert "--gin.trainer.Trainer.num_microbatches=4" in words
  assert "--gin.EVAL_SPLIT='dev'" in words
  assert "~/csl_my_run.log" in words  # the log name without the space
  # In the foreground the run's exit status is the ssh's, not tee's.
  out = run("train.sh", "--name", "csl", "--zone", "z", "--data", "gs://b/d",
            "--model_dir", "gs://b/x", "--foreground", "--dry_run")
  words = _remote(out)
  assert words[:4] == ["set", "-o", "pipefail", "&&"]
  assert words[-3:] == ["|", "tee", "~/csl_x.log"]


@pytest.mark.parametrize("args, message", [
    (["--data", "data", "--model_dir", "gs://b/x"], "--data data: not a gs://"),
    (["--data", "gs://b/d,/local", "--model_dir", "gs://b/x"],
     "--data /local: not a gs://"),
    (["--data", "gs://b/d", "--model_dir", "runs/x"],
     "--model_dir runs/x: not a gs://"),
    (["--data", "gs://b/d", "--model_dir", "gs://b/x", "--spm", "nope.model"],
     "--spm nope.model: neither a gs:// path"),
    (["--data", "gs://b/d", "--model_dir", "gs://b/x",
      "--num_microbatches", "two"], "not a positive integer"),
    # t5x.eval has no trainer.Trainer: gin would stop on the binding.
    (["--data", "gs://b/d", "--module", "t5x.eval", "--num_microbatches",
      "2"], "--num_microbatches: only for t5x.train, not t5x.eval"),
])
def test_train_rejects_paths_a_pod_cannot_share(args, message):
  out = run("train.sh", "--name", "csl", "--zone", "z", *args, "--dry_run")
  assert out.returncode == 2 and not out.stdout
  assert out.stderr.count("\n") == 1 and message in out.stderr


@pytest.mark.parametrize("args", [
    ["--dry_run", "--name"],  # a flag without its value
    ["--name", "csl", "--zone", "z", "--bogus", "--dry_run"],
])
@pytest.mark.parametrize("script", ["create_tpu.sh", "delete_tpu.sh",
                                    "status_tpu.sh"])
def test_bad_flags_exit_2(script, args):
  assert run(script, *args).returncode == 2


def test_an_unknown_flag_last_is_not_called_a_missing_value():
  out = run("train.sh", "--bogus")
  assert out.returncode == 2
  assert out.stderr == ("train.sh: --bogus: not a flag of this script, or "
                        "one without its value (--help)\n")


def test_gpu_bundle_runs_lanes_in_time_then_packs():
  out = run("gpu_bundle.sh", "--bundle", "B", "--lanes", "10", "--pack",
            "/o/back.tgz", "--seconds", "540", "--wheels", "W", "--dry_run")
  assert out.returncode == 0, out.stderr
  commands = _commands(out)
  assert commands[0][:5] == ["pip", "install", "--quiet", "--no-deps",
                             "--target"]
  # An earlier call's MPS daemon is stopped before one is started, and
  # this call's after the pack; the lanes must find the GPU.
  quit_mps = ["echo", "quit", "|", "nvidia-cuda-mps-control"]
  assert commands[1:3] == [quit_mps, ["nvidia-cuda-mps-control", "-d"]]
  # Autotuning off whatever the lanes: the kept compilation cache is keyed
  # by the flags, and one lane resuming ten lanes' cells must hit it.
  assert commands[3][0] == "export"
  assert commands[3][1].startswith("XLA_FLAGS=")
  assert commands[3][1].endswith("--xla_gpu_autotune_level=0")
  assert commands[4] == ["export", "JAX_PLATFORMS=cuda"]
  assert ["nvidia-smi", "dmon", "-s", "puc", "-d", "30", "&"] in commands
  assert any(c[:2] == ["nvidia-smi", "--format=csv"] for c in commands)
  # SIGTERM 15 s before the limit, SIGKILL 25 s after it; the pack is
  # written as cells finish and once more after the lanes.
  assert commands[-3] == ["timeout", "--kill-after=25", "525", "python3",
                          "-m", "csl_jax.cli.main", "run-bundle", "B",
                          "--lanes", "10", "--pack", "/o/back.tgz"]
  assert commands[-2] == ["python3", "-m", "csl_jax.cli.main", "run-bundle",
                          "B", "--pack", "/o/back.tgz", "--pack_only"]
  assert commands[-1] == quit_mps
  one = _commands(run("gpu_bundle.sh", "--bundle", "B", "--pack", "p",
                      "--dry_run"))
  # One lane starts no daemon but stops one an earlier call left: a lane
  # opening the GPU beside it hung (BENCHMARKS, session 49).
  assert one[0] == quit_mps
  assert ["nvidia-cuda-mps-control", "-d"] not in one
  assert one[1][1].endswith("--xla_gpu_autotune_level=0")
  assert one[-2:] == [["python3", "-m", "csl_jax.cli.main", "run-bundle", "B",
                  "--lanes", "1", "--pack", "p"],
                 ["python3", "-m", "csl_jax.cli.main", "run-bundle", "B",
                  "--pack", "p", "--pack_only"]]
  for bad, message in ((["--pack", "p"], "--bundle is required"),
                       (["--bundle", "B", "--pack", "p", "--lanes", "0"],
                        "--lanes")):
    out = run("gpu_bundle.sh", *bad, "--dry_run")
    assert out.returncode == 2 and message in out.stderr


def test_gpu_bundle_times_several_bundles_then_runs_the_fastest():
  out = run("gpu_bundle.sh", "--bundle", "B80", "--bundle", "B16",
            "--bench_cell", "s/d/seed_0", "--lanes", "10", "--pack", "p",
            "--seconds", "540", "--dry_run")
  assert out.returncode == 0, out.stderr
  commands = _steps(out)
  bench = commands[-3]
  # The timing may take a third of the limit; the lanes get the rest.
  assert bench[:4] == ["timeout", "--kill-after=10", "180", "python3"]
  assert bench[4:15] == ["benchmarks/bench_bundle_throughput.py", "--bundle",
                         "B80", "--bundle", "B16", "--cell", "s/d/seed_0",
                         "--lanes", "10", "--steps", "300"]
  assert bench[15] == "--best_to"
  # A dry run cannot time them: the first bundle is shown.
  assert commands[-2][-6:] == ["run-bundle", "B80", "--lanes", "10",
                               "--pack", "p"]
  for bad, message in (
      (["--bundle", "A", "--bundle", "B"], "--bench_cell"),
      (["--bundle", "A", "--bench_cell", "c"], "two or more --bundle"),
      (["--bundle", "A", "--bundle", "B", "--bench_cell", "c",
        "--bench_steps", "0"], "--bench_steps")):
    out = run("gpu_bundle.sh", *bad, "--pack", "p", "--dry_run")
    assert out.returncode == 2 and message in out.stderr, out.stderr


def test_gpu_bundle_stage_in_runs_a_kept_copy_and_keeps_the_choice(
    tmp_path):
  stage = str(tmp_path / "kept")
  args = ["--bundle", "B80", "--bundle", "B16", "--bench_cell", "s/d/seed_0",
          "--lanes", "10", "--pack", "p", "--seconds", "540", "--stage_in",
          stage, "--dry_run"]
  commands = _steps(run("gpu_bundle.sh", *args))
  assert commands[-3][4] == "benchmarks/bench_bundle_throughput.py"
  assert commands[-2][-8:] == ["run-bundle", "B80", "--lanes", "10",
                               "--pack", "p", "--stage_in", stage]
  assert commands[-1][-6:] == ["B80", "--pack", "p", "--pack_only",
                               "--stage_in", stage]
  # A second call (the same command) runs the bundle the first one chose,
  # without timing them again; a choice not among the bundles is ignored.
  os.makedirs(stage)
  with open(os.path.join(stage, "chosen_bundle"), "w") as f:
    f.write("B16\n")
  commands = _steps(run("gpu_bundle.sh", *args))
  assert not any("benchmarks/bench_bundle_throughput.py" in c
                 for c in commands)
  assert commands[-2][-8:] == ["run-bundle", "B16", "--lanes", "10",
                               "--pack", "p", "--stage_in", stage]
  with open(os.path.join(stage, "chosen_bundle"), "w") as f:
    f.write("B32\n")
  commands = _steps(run("gpu_bundle.sh", *args))
  assert commands[-3][4] == "benchmarks/bench_bundle_throughput.py"
  # --only: the lanes run the matching cells; the pack takes all finished.
  commands = _steps(run("gpu_bundle.sh", "--bundle", "B", "--pack", "p",
                           "--only", "*/primaug_20/*", "--dry_run"))
  assert commands[-2][-6:] == ["--lanes", "1", "--pack", "p", "--only",
                               "*/primaug_20/*"]
  assert "--only" not in commands[-1]


def test_bundle_timing_projects_the_cells_steps(load_script, tmp_path,
                                                monkeypatch):
  """Bundle "wide" trains 1,000 examples/s per lane after 10 s of
  compiling, "narrow" 2,000 after 40 s: for a 100-step timing of batch 100
  the wide one looks faster (20 s vs 45 s), but the cells' 10,000 steps
  take 10 + 1,000 s wide vs 40 + 500 s narrow, so narrow is chosen."""
  from csl_jax.seq2seq import bundle  # pylint: disable=g-import-not-at-top
  bench = load_script("bench_bundle_throughput", "benchmarks")
  speed = {80: (1000.0, 10.0), 16: (2000.0, 40.0)}  # rate, compile s
  for name, width in (("wide", 80), ("narrow", 16)):
    cell = tmp_path / name / bundle.CELLS_DIR / "s" / "d" / "seed_0"
    cell.mkdir(parents=True)
    (tmp_path / name / bundle.ARRAYS_DIR).mkdir()
    (cell / bundle.CELL_FILE).write_text(json.dumps({"train": {
        "batch_size": 100, "num_steps": 10000, "bucket_width": width,
        "seed": 0, "checkpoint_every": 1000, "log_every": 50}}))

  def fake_run_bundle(scratch, lanes, progress):
    del progress
    for seed in range(lanes):
      d = os.path.join(scratch, bundle.CELLS_DIR, f"seed_{seed}")
      with open(os.path.join(d, bundle.CELL_FILE)) as f:
        train = json.load(f)["train"]
      assert train["seed"] == seed and train["num_steps"] == 100
      rate, compile_s = speed[train["bucket_width"]]
      with open(os.path.join(d, bundle.OUTPUTS_FILE), "w") as f:
        json.dump({"train": {"examples_per_second": rate},
                   "train_seconds": compile_s + 100 * 100 / rate}, f)

  monkeypatch.setattr(bundle, "run_bundle", fake_run_bundle)
  wide = bench.measure(str(tmp_path / "wide"), "s/d/seed_0", 2, 100, 80)
  assert wide["rate"] == 2000.0 and abs(wide["seconds"] - 20.0) < 1e-9
  assert abs(wide["fixed"] - 10.0) < 1e-9
  assert abs(wide["projected"] - 1010.0) < 1e-9
  best = tmp_path / "best.txt"
  monkeypatch.setattr(sys, "argv", [
      "bench", "--bundle", str(tmp_path / "wide"), "--bundle",
      str(tmp_path / "narrow"), "--cell", "s/d/seed_0", "--lanes", "2",
      "--steps", "100", "--best_to", str(best)])
  bench.main()
  assert best.read_text() == str(tmp_path / "narrow") + "\n"


def test_keep_gpu_results_keeps_what_the_runner_reads(tmp_path):
  """scripts/keep_gpu_results.sh copies each finished cell's outputs and
  selection (not its TensorBoard files, superseded outputs or unfinished
  cells) so that a later checkout can score them."""
  gpu, kept = tmp_path / "gpu", tmp_path / "kept"
  done = gpu / "B" / "cells" / "s" / "m" / "seed_0"
  (done / "train" / "tensorboard").mkdir(parents=True)
  for name, text in [("outputs.json", "{}"), ("outputs.npz", "npz"),
                     ("cell.json", "{}"), ("train/selection.json", "[1]"),
                     ("train/tensorboard/events", "ev"),
                     ("superseded/k/outputs.json", "{}")]:
    (done / name).parent.mkdir(parents=True, exist_ok=True)
    (done / name).write_text(text)
  pending = gpu / "B" / "cells" / "s" / "m" / "seed_1"
  pending.mkdir(parents=True)
  (pending / "cell.json").write_text("{}")
  env = dict(os.environ, CSL_JAX_GPU_DIR=str(gpu),
             CSL_JAX_GPU_RESULTS=str(kept))
  script = os.path.join(ROOT, "scripts", "keep_gpu_results.sh")
  out = subprocess.run(["bash", script, "B"], env=env, capture_output=True,
                       text=True, check=True)
  assert "1 finished cell(s)" in out.stdout
  files = sorted(str(p.relative_to(kept)) for p in kept.rglob("*")
                 if p.is_file())
  assert files == ["B/cells/s/m/seed_0/outputs.json",
                   "B/cells/s/m/seed_0/outputs.npz",
                   "B/cells/s/m/seed_0/train/selection.json"]
  missing = subprocess.run(["bash", script, "C"], env=env,
                           capture_output=True, text=True)
  assert missing.returncode == 2
  assert "no such directory" in missing.stderr.strip()
