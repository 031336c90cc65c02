#!/usr/bin/env bash
# The SCAN addprim_jump grid of BENCHMARKS.md (issue 11) on a 2-core CPU:
# {original, CSL mixture} × seeds {0, 1, 2}, issue 6's small model
# (gin/experiments/cpu_small.gin), greedy decoding, STEPS (default 1000)
# training steps per cell instead of the configs' 10,000.
# Usage: scripts/run_experiment_scan_jump_cpu.sh [OUT [STEPS]]
set -euo pipefail
OUT=${1:-runs/exp_scan_addprim_jump}
STEPS=${2:-1000}
exec csl-jax experiment --gin_file=gin/experiments/scan_addprim_jump.gin \
  --gin_file=gin/experiments/cpu_small.gin \
  --gin.seq2seq.TrainConfig.num_steps="$STEPS" \
  --gin.seq2seq.TrainConfig.checkpoint_every=250 --out "$OUT"
