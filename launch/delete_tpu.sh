#!/usr/bin/env bash
# Deletes a TPU VM made by create_tpu.sh (all its workers and their disks;
# checkpoints under a gs:// MODEL_DIR stay), e.g.
#   launch/delete_tpu.sh --name csl-v3-32 --zone europe-west4-a [--dry_run]
# With --queued, deletes the queued resource create_tpu.sh --queued made,
# and its TPU VM with it (a queued resource holds its slice, and is billed,
# until it is deleted). Also removes the local tarball setup_tpu.sh made.

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"


usage() {
  cat <<USAGE
Usage: $0 [flags]
  --queued          delete the queued resource (and its TPU VM)
  --queued_id ID    the queued resource's name (default: --name)
$COMMON_USAGE
USAGE
}

while (( $# )); do
  parse_resource_flag "$@"
  if (( SHIFT )); then shift "$SHIFT"; continue; fi
  case "$1" in
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown flag: $1" ;;
  esac
done

require_gcloud
gcloud_location_flags
if (( QUEUED )); then
  # --force deletes the resource's TPU VM first; without it gcloud refuses
  # an ACTIVE queued resource.
  run gcloud compute tpus queued-resources delete "${QUEUED_ID:-$TPU_NAME}" \
    "${GCLOUD_FLAGS[@]}" --force --quiet
else
  run gcloud compute tpus tpu-vm delete "$TPU_NAME" "${GCLOUD_FLAGS[@]}" --quiet
fi
run rm -f "${TMPDIR:-/tmp}/csl_jax-$TPU_NAME.tar.gz"
