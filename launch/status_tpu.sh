#!/usr/bin/env bash
# Prints a TPU VM's state (READY, CREATING, PREEMPTED, ...) or, with
# --queued, its queued resource's (WAITING_FOR_RESOURCES, PROVISIONING,
# ACTIVE, FAILED, SUSPENDED, ...), e.g.
#   launch/status_tpu.sh --name csl-v5e-16 --zone us-west4-a --queued
# --full prints gcloud's whole description (a FAILED request's reason).

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

FULL=0

usage() {
  cat <<USAGE
Usage: $0 [flags]
  --queued          the queued resource's state, not the TPU VM's
  --queued_id ID    the queued resource's name (default: --name)
  --full            the whole description, not just the state
$COMMON_USAGE
USAGE
}

while (( $# )); do
  parse_resource_flag "$@"
  if (( SHIFT )); then shift "$SHIFT"; continue; fi
  case "$1" in
    --full) FULL=1; shift; continue ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown flag: $1" ;;
  esac
done

require_gcloud
gcloud_location_flags
if (( QUEUED )); then
  FORMAT=(--format="value(state.state)")  # QueuedResource.state.state
  if (( FULL )); then FORMAT=(); fi
  run gcloud compute tpus queued-resources describe "${QUEUED_ID:-$TPU_NAME}" \
    "${GCLOUD_FLAGS[@]}" ${FORMAT[@]+"${FORMAT[@]}"}
else
  FORMAT=(--format="value(state)")
  if (( FULL )); then FORMAT=(); fi
  run gcloud compute tpus tpu-vm describe "$TPU_NAME" "${GCLOUD_FLAGS[@]}" \
    ${FORMAT[@]+"${FORMAT[@]}"}
fi
