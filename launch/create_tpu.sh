#!/usr/bin/env bash
# Creates a Cloud TPU VM (a pod slice when the accelerator type has more
# than one host), e.g.
#   launch/create_tpu.sh --name csl-v3-32 --zone europe-west4-a \
#     --accelerator_type v3-32 [--spot] [--dry_run]
# Then: launch/setup_tpu.sh, launch/train.sh, launch/delete_tpu.sh.

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# Qiu et al. (2022) fine-tuned T5 on 32 TPU v3 cores: v3-32.
ACCELERATOR_TYPE="v3-32"
# TPU software version: tpu-ubuntu2204-base for v2-v4; v5e needs
# v2-alpha-tpuv5-lite, v5p v2-alpha-tpuv5, v6e v2-alpha-tpuv6e.
VERSION="tpu-ubuntu2204-base"
CAPACITY=()

usage() {
  cat <<USAGE
Usage: $0 [flags]
  --accelerator_type TYPE  e.g. v3-32, v4-32, v5litepod-16 (default $ACCELERATOR_TYPE)
  --version VERSION        TPU software version (default $VERSION)
  --spot                   Spot capacity (cheaper; may be preempted)
$COMMON_USAGE
USAGE
}

while (( $# )); do
  parse_common_flag "$@"
  if (( SHIFT )); then shift "$SHIFT"; continue; fi
  case "$1" in
    --spot) CAPACITY=(--spot); shift; continue ;;
    -h|--help) usage; exit 0 ;;
  esac
  split_flag "$@"
  case "$FLAG" in
    --accelerator_type) ACCELERATOR_TYPE="$VALUE" ;;
    --version) VERSION="$VALUE" ;;
    *) usage >&2; die "unknown flag: $1" ;;
  esac
  shift "$USED"
done

require_gcloud
gcloud_location_flags
run gcloud compute tpus tpu-vm create "$TPU_NAME" "${GCLOUD_FLAGS[@]}" \
  --accelerator-type="$ACCELERATOR_TYPE" --version="$VERSION" \
  ${CAPACITY[@]+"${CAPACITY[@]}"}
