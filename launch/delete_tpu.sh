#!/usr/bin/env bash
# Deletes a TPU VM made by create_tpu.sh (all its workers and their disks;
# checkpoints under a gs:// MODEL_DIR stay), e.g.
#   launch/delete_tpu.sh --name csl-v3-32 --zone europe-west4-a [--dry_run]
# Also removes the local tarball setup_tpu.sh made.

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() {
  cat <<USAGE
Usage: $0 [flags]
$COMMON_USAGE
USAGE
}

while (( $# )); do
  parse_common_flag "$@"
  if (( SHIFT )); then shift "$SHIFT"; continue; fi
  case "$1" in
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown flag: $1" ;;
  esac
done

require_gcloud
gcloud_location_flags
run gcloud compute tpus tpu-vm delete "$TPU_NAME" "${GCLOUD_FLAGS[@]}" --quiet
run rm -f "${TMPDIR:-/tmp}/csl_jax-$TPU_NAME.tar.gz"
