#!/usr/bin/env bash
# What the next GPU session's calls carry (BENCHMARKS.md "Issue 15 → Z5 on
# an H100, session 28", its "Session 33" paragraph, which also has the
# time each export takes): a session's checkout holds only what landed, so
# the bundles and the gin wheel are made again here, on the CPU, before the
# first device call.
#
#   bash scripts/prepare_gpu_bundles.sh [z5|z5_50k|z6|both]     (default: z5)
#
# z5: .gpu/B16 (original and primaug 20x, seeds 0-4, bucket width 16,
#     10,000 steps) and its runner directory
#     runs/exp_scan_jump_zhou_gooddev_b16, which scores the cells once their
#     outputs are unpacked over the bundle.
# z5_50k: .gpu/B16_50k, the same cells at Zhou et al.'s 50,000 steps
#     (runs/exp_scan_jump_zhou_gooddev_50k).
# z6: .gpu/B200_16 (original and AugZero k = 200; far the longest export)
#     and runs/exp_scan_jump_zhou_az200_b16.
# Both: .whl/ with gin-config's wheel (the device machine has no network).
# An export already made is kept: the runner's cache makes a rerun cheap and
# gives the same bytes.
# Cells that earlier sessions' device calls finished are kept in the
# repository, benchmarks/gpu_results/<bundle>/ (each cell's outputs and
# selection, a few hundred KB): they are copied over the fresh export and
# the runner scores them, so a grid too long for one session's device time
# grows across sessions (a cell whose data or settings changed has another
# stage key and is not read). After a device call:
#   tar xzf back.tgz -C .gpu/<bundle>
#   bash scripts/keep_gpu_results.sh <bundle>
set -euo pipefail
cd "$(dirname "$0")/.."

what="${1:-z5}"
case "$what" in
  z5|z5_50k|z6|both) ;;
  *) echo "prepare_gpu_bundles.sh: unknown argument '$what' (z5, z5_50k, z6 or both)" >&2
     exit 2 ;;
esac

export_cells() {  # METHOD BUNDLE OUT STEPS
  local bundle="$2"
  local args=(--gin_file=gin/experiments/scan_addprim_jump_zhou.gin
    --gin_file=gin/experiments/accelerator.gin
    --gin.experiment.methods="[\"$1\"]"
    --gin.seq2seq.TrainConfig.bucket_width=16
    --gin.seq2seq.TrainConfig.num_steps="$4"
    --gin.experiment.bundle="'$bundle'" --out "$3")
  csl-jax experiment "${args[@]}"
  local kept="benchmarks/gpu_results/$(basename "$bundle")"
  if [[ -d "$kept" ]]; then
    echo "[prepare] cells finished by earlier device calls: $kept"
    cp -r "$kept/." "$bundle/"
    csl-jax experiment "${args[@]}"
  fi
}

case "$what" in
  z5|both) export_cells primaug_20 .gpu/B16 runs/exp_scan_jump_zhou_gooddev_b16 10000 ;;
  z5_50k) export_cells primaug_20 .gpu/B16_50k runs/exp_scan_jump_zhou_gooddev_50k 50000 ;;
esac
if [[ "$what" == z6 || "$what" == both ]]; then
  export_cells augzero_200 .gpu/B200_16 runs/exp_scan_jump_zhou_az200_b16 10000
fi
if ! compgen -G ".whl/gin_config-*.whl" > /dev/null; then
  pip download -q --no-deps gin-config -d .whl
fi
du -sh .gpu/* .whl
