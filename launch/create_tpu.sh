#!/usr/bin/env bash
# Creates a Cloud TPU VM (a pod slice when the accelerator type has more
# than one host), e.g.
#   launch/create_tpu.sh --name csl-v3-32 --zone europe-west4-a \
#     --accelerator_type v3-32 [--spot] [--queued] [--dry_run]
# Then: launch/setup_tpu.sh, launch/train.sh, launch/delete_tpu.sh.
# With --queued it asks for the slice as a queued resource (how v5e, v5p
# and v6e capacity is usually granted); the TPU VM appears under the same
# --name once launch/status_tpu.sh --queued reports ACTIVE.

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# Qiu et al. (2022) fine-tuned T5 on 32 TPU v3 cores: v3-32.
ACCELERATOR_TYPE="v3-32"
VERSION=""  # Default: by accelerator type (tpu_generation in common.sh).
CAPACITY=()

usage() {
  cat <<USAGE
Usage: $0 [flags]
  --accelerator_type TYPE  v2-N, v3-N, v4-N, v5litepod-N (or v5e-N), v5p-N,
                           v6e-N (default $ACCELERATOR_TYPE)
  --version VERSION        TPU software version (default by type:
                           tpu-ubuntu2204-base for v2-v4,
                           v2-alpha-tpuv5-lite for v5e, v2-alpha-tpuv5 for
                           v5p, v2-alpha-tpuv6e for v6e)
  --spot                   Spot capacity (cheaper; may be preempted)
  --queued                 request a queued resource instead (its node is
                           the TPU VM --name)
  --queued_id ID           the queued resource's name (default: --name)
$COMMON_USAGE
USAGE
}

while (( $# )); do
  parse_resource_flag "$@"
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

if tpu_generation "$ACCELERATOR_TYPE"; then
  # gcloud names v5e slices v5litepod-N.
  ACCELERATOR_TYPE="${ACCELERATOR_TYPE/#v5e-/v5litepod-}"
  VERSION="${VERSION:-$TPU_RUNTIME}"
elif [[ -z "$VERSION" ]]; then
  die "--accelerator_type $ACCELERATOR_TYPE: unknown TPU type (want v2-N, v3-N, v4-N, v5litepod-N, v5e-N, v5p-N or v6e-N; or give --version)"
fi
QUEUED_ID="${QUEUED_ID:-$TPU_NAME}"

require_gcloud
gcloud_location_flags
if (( QUEUED )); then
  # The request waits in the queue (WAITING_FOR_RESOURCES) until the slice
  # is granted (ACTIVE); then tpu-vm commands reach it as --name.
  run gcloud compute tpus queued-resources create "$QUEUED_ID" \
    --node-id="$TPU_NAME" "${GCLOUD_FLAGS[@]}" \
    --accelerator-type="$ACCELERATOR_TYPE" --runtime-version="$VERSION" \
    ${CAPACITY[@]+"${CAPACITY[@]}"}
  status="launch/status_tpu.sh --queued --name $TPU_NAME --zone $ZONE"
  if [[ "$QUEUED_ID" != "$TPU_NAME" ]]; then status+=" --queued_id $QUEUED_ID"; fi
  if [[ -n "$PROJECT" ]]; then status+=" --project $PROJECT"; fi
  echo "Wait for ACTIVE (WAITING_FOR_RESOURCES, PROVISIONING before it): $status"
else
  run gcloud compute tpus tpu-vm create "$TPU_NAME" "${GCLOUD_FLAGS[@]}" \
    --accelerator-type="$ACCELERATOR_TYPE" --version="$VERSION" \
    ${CAPACITY[@]+"${CAPACITY[@]}"}
fi
if [[ -n "${TPU_GENERATION:-}" ]]; then
  microbatches="$(suggest_microbatches)"
  if (( microbatches > 1 )); then
    echo "T5-Base at the papers' 2048 rows a batch on $ACCELERATOR_TYPE: start with launch/train.sh --num_microbatches $microbatches (raise it if XLA runs out of memory)"
  else
    echo "T5-Base at the papers' 2048 rows a batch fits $ACCELERATOR_TYPE without microbatches (launch/train.sh --num_microbatches N if XLA runs out of memory)"
  fi
fi
