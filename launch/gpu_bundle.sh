#!/usr/bin/env bash
# Runs an experiment bundle's cells on one GPU machine in a single call and
# packs what the experiment reads back (README "Cells on a GPU machine"):
#   launch/gpu_bundle.sh --bundle B --lanes 10 --pack OUT/back.tgz \
#     [--seconds 540] [--wheels .whl] [--dry_run]
# then, beside the experiment: tar xzf back.tgz -C B, and the experiment's
# command again. --seconds stops the lanes in time to pack what finished
# (a later call resumes the rest); --wheels puts the wheels of a directory
# on PYTHONPATH first (a machine without network: `pip download
# gin-config -d .whl` beforehand). With several lanes NVIDIA's MPS daemon
# is started, so the lanes' processes share the GPU instead of taking turns.

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

BUNDLE=""
LANES=1
PACK=""
SECONDS_LIMIT=0
WHEELS=""

usage() {
  cat <<USAGE
Usage: $0 --bundle DIR --pack FILE [flags]
  --bundle DIR      the bundle (experiment.bundle)
  --pack FILE       the .tar.gz to write (run-bundle --pack)
  --lanes N         cells trained at once (default 1)
  --seconds S       stop the lanes after S seconds, then pack (default: no limit)
  --wheels DIR      install DIR/*.whl into /tmp/site, first on PYTHONPATH
  --dry_run         print the commands instead of running them
USAGE
}

while (( $# )); do
  case "$1" in
    --dry_run|--dry-run) DRY_RUN=1; shift; continue ;;
    -h|--help) usage; exit 0 ;;
  esac
  split_flag "$@"
  case "$FLAG" in
    --bundle) BUNDLE="$VALUE" ;;
    --lanes) LANES="$VALUE" ;;
    --pack) PACK="$VALUE" ;;
    --seconds) SECONDS_LIMIT="$VALUE" ;;
    --wheels) WHEELS="$VALUE" ;;
    *) usage >&2; die "unknown flag $FLAG" ;;
  esac
  shift "$USED"
done
[[ -n "$BUNDLE" ]] || die "--bundle is required"
[[ -n "$PACK" ]] || die "--pack is required"
[[ "$LANES" =~ ^[1-9][0-9]*$ ]] || die "--lanes: a positive integer, not $LANES"
[[ "$SECONDS_LIMIT" =~ ^[0-9]+$ ]] || die "--seconds: an integer, not $SECONDS_LIMIT"
(( DRY_RUN )) || [[ -d "$BUNDLE/cells" ]] || die "$BUNDLE: not a bundle (no cells/)"

cd "$REPO_ROOT"
if [[ -n "$WHEELS" ]]; then
  run pip install --quiet --no-deps --target /tmp/site "$WHEELS"/*.whl
  export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$REPO_ROOT${PYTHONPATH:+:$PYTHONPATH}"
if (( LANES > 1 )) && { (( DRY_RUN )) || command -v nvidia-cuda-mps-control > /dev/null; }; then
  run nvidia-cuda-mps-control -d
fi
RUN_BUNDLE=(python3 -m csl_jax.cli.main run-bundle "$BUNDLE" --lanes "$LANES")
if (( SECONDS_LIMIT > 0 )); then
  # timeout signals the command's whole process group: its lanes too.
  run timeout --kill-after=10 "$SECONDS_LIMIT" "${RUN_BUNDLE[@]}" || true
else
  run "${RUN_BUNDLE[@]}" || true
fi
run python3 -m csl_jax.cli.main run-bundle "$BUNDLE" --pack "$PACK" --pack_only
