#!/usr/bin/env bash
# Runs an experiment bundle's cells on one GPU machine in a single call and
# packs what the experiment reads back (README "Cells on a GPU machine"):
#   launch/gpu_bundle.sh --bundle B --lanes 10 --pack OUT/back.tgz \
#     [--seconds 540] [--wheels .whl] [--stage_in /tmp/bundles]
#     [--only 'GLOB'] [--dry_run]
# then, beside the experiment: tar xzf back.tgz -C B, and the experiment's
# command again. --seconds stops the lanes before that long after the script
# started, in time to pack what finished (a later call resumes the rest);
# the pack is also rewritten as each cell finishes, so a call killed from
# outside still brings back the cells done by then.
# Several --bundle (the same cells exported with other settings, e.g.
# bucket widths) with --bench_cell CELL: each is timed on CELL for
# --bench_steps steps with the lanes (benchmarks/bench_bundle_throughput.py)
# and the one whose cells would finish first runs (the first if the timing
# fails or takes over a third of --seconds). --stage_in DIR runs a copy of
# the bundle kept in DIR, with JAX's compilation cache beside it: a
# machine that keeps DIR (e.g. /tmp) but not the working tree between calls
# resumes a run stopped by --seconds when the same command is given again,
# without timing the bundles a second time. --wheels puts the wheels of a
# directory on PYTHONPATH first (a machine without network: `pip download
# gin-config -d .whl` beforehand). With several lanes NVIDIA's MPS daemon
# is started, so the lanes' processes share the GPU instead of taking turns.

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

BUNDLES=()
BENCH_CELL=""
BENCH_STEPS=300
LANES=1
PACK=""
SECONDS_LIMIT=0
WHEELS=""
STAGE_IN=""
ONLY=""

usage() {
  cat <<USAGE
Usage: $0 --bundle DIR --pack FILE [flags]
  --bundle DIR      the bundle (experiment.bundle); several with --bench_cell
  --bench_cell CELL time each bundle on CELL, run the fastest
  --bench_steps N   steps each bundle is timed for (default 300)
  --pack FILE       the .tar.gz to write (run-bundle --pack)
  --lanes N         cells trained at once (default 1)
  --seconds S       stop the lanes S seconds after the start, then pack (default: no limit)
  --wheels DIR      install DIR/*.whl into /tmp/site, first on PYTHONPATH
  --stage_in DIR    run a copy kept in DIR (a second call resumes it)
  --only GLOB       run only the pending cells matching GLOB (all are packed)
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
    --bundle) BUNDLES+=("$VALUE") ;;
    --bench_cell) BENCH_CELL="$VALUE" ;;
    --bench_steps) BENCH_STEPS="$VALUE" ;;
    --lanes) LANES="$VALUE" ;;
    --pack) PACK="$VALUE" ;;
    --seconds) SECONDS_LIMIT="$VALUE" ;;
    --wheels) WHEELS="$VALUE" ;;
    --stage_in) STAGE_IN="$VALUE" ;;
    --only) ONLY="$VALUE" ;;
    *) usage >&2; die "unknown flag $FLAG" ;;
  esac
  shift "$USED"
done
(( ${#BUNDLES[@]} )) || die "--bundle is required"
if (( ${#BUNDLES[@]} > 1 )); then
  [[ -n "$BENCH_CELL" ]] || die "several --bundle: --bench_cell says which cell times them"
elif [[ -n "$BENCH_CELL" ]]; then
  die "--bench_cell: give two or more --bundle to choose from"
fi
[[ "$BENCH_STEPS" =~ ^[1-9][0-9]*$ ]] || die "--bench_steps: a positive integer, not $BENCH_STEPS"
[[ -n "$PACK" ]] || die "--pack is required"
[[ "$LANES" =~ ^[1-9][0-9]*$ ]] || die "--lanes: a positive integer, not $LANES"
[[ "$SECONDS_LIMIT" =~ ^[0-9]+$ ]] || die "--seconds: an integer, not $SECONDS_LIMIT"
for b in "${BUNDLES[@]}"; do
  (( DRY_RUN )) || [[ -d "$b/cells" ]] || die "$b: not a bundle (no cells/)"
done

cd "$REPO_ROOT"
if [[ -n "$WHEELS" ]]; then
  # A warm machine keeps /tmp/site: a failed install need not end the call.
  run pip install --quiet --no-deps --target /tmp/site "$WHEELS"/*.whl ||
    [[ -d /tmp/site/gin ]] || die "--wheels: installing $WHEELS/*.whl failed"
  export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$REPO_ROOT${PYTHONPATH:+:$PYTHONPATH}"
# A daemon an earlier call left running (the machine keeps its processes
# and /tmp while warm) is stopped first, whatever this call's lanes:
# starting a second one fails, and one in a bad state, or a server still
# going down, let lanes fail to find the GPU or hang opening it (BENCHMARKS
# "Z5 on an H100, session 28" and "Z5 at 50,000 steps on an H200, session
# 49"). Without MPS the lanes take turns on the GPU.
mps_quit() {
  echo "+ echo quit | nvidia-cuda-mps-control"
  (( DRY_RUN )) && return 0
  # Bounded: quitting waits for the daemon's clients, and a lane hung on
  # the GPU must not keep the call from returning.
  echo quit | timeout 5 nvidia-cuda-mps-control 2> /dev/null || true
  local waited=0
  while pgrep -x nvidia-cuda-mps-server > /dev/null && (( waited < 10 )); do
    sleep 1; waited=$(( waited + 1 ))
  done
  if pgrep -x nvidia-cuda-mps-server > /dev/null; then
    echo "MPS server still up after quit: killed"
    pkill -9 -x nvidia-cuda-mps-server || true
  fi
}
MPS=0
if (( DRY_RUN )) || command -v nvidia-cuda-mps-control > /dev/null; then
  mps_quit
  if (( LANES > 1 )); then
    MPS=1
    for try in 1 2 3 4 5 6 7 8 9 10; do
      if run nvidia-cuda-mps-control -d; then break; fi
      if (( try == 10 )); then echo "MPS did not start: the lanes take turns"; MPS=0; fi
      sleep 1
    done
  fi
fi
# XLA's GPU autotuning off for every lane count, as run-bundle's lanes
# have it (bundle.lane_environment): the compilation cache kept in
# --stage_in is keyed by the flags, so a call with other lanes than the
# last one would otherwise compile everything again, autotuning included.
if [[ "${XLA_FLAGS:-}" != *xla_gpu_autotune_level* ]]; then
  export XLA_FLAGS="${XLA_FLAGS:+$XLA_FLAGS }--xla_gpu_autotune_level=0"
fi
echo "+ export XLA_FLAGS='$XLA_FLAGS'"
# On a GPU machine the lanes must use the GPU: a lane that cannot open it
# fails (and is started again) instead of training on the CPU unseen. Then
# the GPU's state, and a line of power, use and clocks every 30 s while
# the lanes run: a slow call shows whether the device was throttled.
MONITOR=""
if (( DRY_RUN )) || command -v nvidia-smi > /dev/null; then
  export JAX_PLATFORMS="${JAX_PLATFORMS:-cuda}"
  echo "+ export JAX_PLATFORMS=$JAX_PLATFORMS"
  run nvidia-smi --format=csv \
    --query-gpu=name,compute_mode,mig.mode.current,clocks.max.sm,power.limit,temperature.gpu \
    || true
  echo "+ nvidia-smi dmon -s puc -d 30 &"
  if (( ! DRY_RUN )); then nvidia-smi dmon -s puc -d 30 & MONITOR=$!; fi
fi
STAGE=()
CHOSEN=""
if [[ -n "$STAGE_IN" ]]; then
  STAGE=(--stage_in "$STAGE_IN")
  export JAX_COMPILATION_CACHE_DIR="${JAX_COMPILATION_CACHE_DIR:-$STAGE_IN/jax_cache}"
  CHOSEN="$STAGE_IN/chosen_bundle"
fi
BUNDLE="${BUNDLES[0]}"
if [[ -n "$CHOSEN" && -s "$CHOSEN" ]] &&
    printf '%s\n' "${BUNDLES[@]}" | grep -qxF "$(< "$CHOSEN")"; then
  BUNDLE="$(< "$CHOSEN")"
  echo "running $BUNDLE (chosen by an earlier call)"
elif [[ -n "$BENCH_CELL" ]]; then
  BEST="${TMPDIR:-/tmp}/gpu_bundle_best.$$"
  BENCH=(python3 benchmarks/bench_bundle_throughput.py)
  for b in "${BUNDLES[@]}"; do BENCH+=(--bundle "$b"); done
  BENCH+=(--cell "$BENCH_CELL" --lanes "$LANES" --steps "$BENCH_STEPS"
          --best_to "$BEST")
  if (( SECONDS_LIMIT > 0 )); then
    BENCH=(timeout --kill-after=10 $(( SECONDS_LIMIT / 3 )) "${BENCH[@]}")
  fi
  run "${BENCH[@]}" || echo "the timing failed: running the first bundle"
  if (( ! DRY_RUN )) && [[ -s "$BEST" ]]; then BUNDLE="$(< "$BEST")"; fi
  echo "running $BUNDLE"
  if [[ -n "$CHOSEN" ]] && (( ! DRY_RUN )); then
    mkdir -p "$STAGE_IN" && echo "$BUNDLE" > "$CHOSEN"
  fi
fi
RUN_BUNDLE=(python3 -m csl_jax.cli.main run-bundle "$BUNDLE" --lanes "$LANES"
            --pack "$PACK" ${STAGE[@]+"${STAGE[@]}"})
if [[ -n "$ONLY" ]]; then RUN_BUNDLE+=(--only "$ONLY"); fi
if (( SECONDS_LIMIT > 0 )); then
  # What the wheels and the timing took comes off the limit (bash's SECONDS:
  # since the script started). SIGTERM comes 15 s early and SIGKILL 25 s
  # after it: a lane signalled inside a compile or a dev scoring handles
  # the signal (checkpoints its step) only when that returns.
  LEFT=$(( (DRY_RUN ? SECONDS_LIMIT : SECONDS_LIMIT - SECONDS) - 15 ))
  # timeout signals the command's whole process group: its lanes too.
  if (( LEFT > 0 )); then
    run timeout --kill-after=25 "$LEFT" "${RUN_BUNDLE[@]}" || true
  fi
else
  run "${RUN_BUNDLE[@]}" || true
fi
run python3 -m csl_jax.cli.main run-bundle "$BUNDLE" --pack "$PACK" --pack_only \
  ${STAGE[@]+"${STAGE[@]}"}
if [[ -n "$MONITOR" ]]; then kill "$MONITOR" 2> /dev/null || true; fi
if (( MPS )); then mps_quit; fi
