#!/usr/bin/env bash
# What the next GPU session's calls carry (BENCHMARKS.md, Issue 15, "The
# next GPU session's calls" and "Session 33"): a session's checkout holds
# only what landed, so the bundles and the gin wheel are made again here,
# on the CPU, before the first device call.
#
#   bash scripts/prepare_gpu_bundles.sh [z5|z6|both]     (default: z5)
#
# z5: .gpu/B16 (original and primaug 20x, seeds 0-4, bucket width 16; about
#     2 min) and its runner directory runs/exp_scan_jump_zhou_gooddev_b16,
#     which scores the cells once their outputs are unpacked over the bundle.
# z6: .gpu/B200_16 (original and AugZero k = 200; about 17 min, 6 GB) and
#     runs/exp_scan_jump_zhou_az200_b16.
# Both: .whl/ with gin-config's wheel (the device machine has no network).
# An export already made is kept: the runner's cache makes a rerun cheap and
# gives the same bytes.
set -euo pipefail
cd "$(dirname "$0")/.."

what="${1:-z5}"
case "$what" in
  z5|z6|both) ;;
  *) echo "prepare_gpu_bundles.sh: unknown argument '$what' (z5, z6 or both)" >&2
     exit 2 ;;
esac

export_cells() {  # METHOD BUNDLE OUT
  csl-jax experiment --gin_file=gin/experiments/scan_addprim_jump_zhou.gin \
    --gin_file=gin/experiments/accelerator.gin \
    --gin.experiment.methods="[\"$1\"]" \
    --gin.seq2seq.TrainConfig.bucket_width=16 \
    --gin.experiment.bundle="'$2'" --out "$3"
}

if [[ "$what" != z6 ]]; then
  export_cells primaug_20 .gpu/B16 runs/exp_scan_jump_zhou_gooddev_b16
fi
if [[ "$what" != z5 ]]; then
  export_cells augzero_200 .gpu/B200_16 runs/exp_scan_jump_zhou_az200_b16
fi
if ! compgen -G ".whl/gin_config-*.whl" > /dev/null; then
  pip download -q --no-deps gin-config -d .whl
fi
du -sh .gpu/* .whl
