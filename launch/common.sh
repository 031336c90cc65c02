# Shared by the launch/*.sh scripts (sourced, not run): defaults, flag
# parsing for the flags every script takes, and `run`, which prints each
# command and runs it unless --dry_run was given.

set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Every script takes these (also from the environment).
TPU_NAME="${TPU_NAME:-csl-jax}"
ZONE="${ZONE:-europe-west4-a}"
PROJECT="${PROJECT:-}"
DRY_RUN=0

# Where the project and its virtual environment live on every worker.
REMOTE_DIR='~/csl_jax'
REMOTE_VENV='~/csl_venv'

COMMON_USAGE="Common flags:
  --name NAME       TPU VM name (\$TPU_NAME; default csl-jax)
  --zone ZONE       e.g. europe-west4-a, us-central2-b (\$ZONE)
  --project ID      Google Cloud project (\$PROJECT; default: gcloud's)
  --dry_run         print the commands instead of running them"

die() { echo "$(basename "$0"): $*" >&2; exit 2; }

# parse_common_flag "$@": handles one common flag at the front of the
# arguments, setting SHIFT to the number of arguments it used (0: not one).
parse_common_flag() {
  SHIFT=0
  case "$1" in
    --name|--zone|--project)
      (( $# >= 2 )) || die "$1 needs a value"
      set_common "${1#--}" "$2"; SHIFT=2 ;;
    --name=*|--zone=*|--project=*)
      local key="${1%%=*}"; set_common "${key#--}" "${1#*=}"; SHIFT=1 ;;
    --dry_run|--dry-run) DRY_RUN=1; SHIFT=1 ;;
  esac
}

# split_flag "$@": the script-specific flag at the front, as FLAG and
# VALUE (`--flag VALUE` or `--flag=VALUE`), and USED, how many arguments
# it took.
split_flag() {
  FLAG="${1%%=*}"
  if [[ "$1" == *=* ]]; then VALUE="${1#*=}"; USED=1
  elif (( $# >= 2 )); then VALUE="$2"; USED=2
  else die "$1: not a flag of this script, or one without its value (--help)"
  fi
}

# --queued and --queued_id ID (create, status and delete take them):
# QUEUED=1 and the queued resource's name; SHIFT as parse_common_flag.
QUEUED=0
QUEUED_ID=""
parse_queued_flag() {
  SHIFT=0
  case "$1" in
    --queued) QUEUED=1; SHIFT=1 ;;
    --queued_id|--queued_id=*)
      split_flag "$@"; QUEUED_ID="$VALUE"; QUEUED=1; SHIFT="$USED" ;;
  esac
}

# parse_resource_flag "$@": a common or a queued-resource flag at the
# front (the flags of create, status and delete); SHIFT as above.
parse_resource_flag() {
  parse_common_flag "$@"
  (( SHIFT )) || parse_queued_flag "$@"
}

set_common() {
  case "$1" in
    name) TPU_NAME="$2" ;;
    zone) ZONE="$2" ;;
    project) PROJECT="$2" ;;
  esac
}

# The flags gcloud compute tpus tpu-vm subcommands take after the name.
gcloud_location_flags() {
  GCLOUD_FLAGS=(--zone="$ZONE")
  if [[ -n "$PROJECT" ]]; then GCLOUD_FLAGS+=(--project="$PROJECT"); fi
}

# Quotes one word for a shell (the display, and the workers' command
# lines): plain words bare, others in double quotes where nothing inside
# is special there, else in single quotes.
quote() {
  if [[ "$1" =~ ^[A-Za-z0-9_./:=@,+%-]+$ ]]; then
    printf '%s' "$1"
  elif [[ "$1" != *[\"\$\`\\!]* ]]; then
    printf '"%s"' "$1"
  else
    printf "'%s'" "${1//\'/\'\\\'\'}"
  fi
}

# run CMD ARGS...: prints the command (shell-quoted), then runs it unless
# this is a dry run. A --command=SCRIPT argument (gcloud ssh) is shown as
# $REMOTE, with SCRIPT, as each worker's shell gets it, printed below.
run() {
  local word line="+" remote=""
  for word in "$@"; do
    if [[ "$word" == --command=* ]]; then
      remote="${word#--command=}"; line+=' --command="$REMOTE"'
    else
      line+=" $(quote "$word")"
    fi
  done
  echo "$line"
  if [[ -n "$remote" ]]; then
    echo "  REMOTE (run on each worker):"
    sed 's/^/    /' <<< "$remote"
  fi
  if (( ! DRY_RUN )); then "$@"; fi
}

require_gcloud() {
  if (( ! DRY_RUN )) && ! command -v gcloud > /dev/null; then
    die "gcloud not found (install the Google Cloud SDK, or use --dry_run)"
  fi
}

# TPU generations by accelerator type (v3-32, v5litepod-16, ...): sets
# TPU_GENERATION (v2 v3 v4 v5e v5p v6e), TPU_CHIPS and TPU_RUNTIME, the
# software version gcloud needs for it; returns 1 for an unknown type.
# v2-v4 and v5p count TensorCores (two a chip), v5e and v6e count chips.
tpu_generation() {
  [[ "$1" =~ ^(v2|v3|v4|v5litepod|v5e|v5p|v6e)-([0-9]+)$ ]] || return 1
  local kind="${BASH_REMATCH[1]}" count="${BASH_REMATCH[2]}"
  case "$kind" in
    v2|v3|v4) TPU_GENERATION="$kind"; TPU_RUNTIME="tpu-ubuntu2204-base"
              TPU_CHIPS=$(( (count + 1) / 2 )) ;;
    v5litepod|v5e) TPU_GENERATION="v5e"; TPU_RUNTIME="v2-alpha-tpuv5-lite"
              TPU_CHIPS="$count" ;;
    v5p) TPU_GENERATION="v5p"; TPU_RUNTIME="v2-alpha-tpuv5"
         TPU_CHIPS=$(( (count + 1) / 2 )) ;;
    v6e) TPU_GENERATION="v6e"; TPU_RUNTIME="v2-alpha-tpuv6e"
         TPU_CHIPS="$count" ;;
  esac
}

# HBM per chip in GiB, by generation.
declare -A TPU_HBM_GIB=([v2]=16 [v3]=32 [v4]=32 [v5e]=16 [v5p]=95 [v6e]=32)

# suggest_microbatches TYPE: T5X's trainer.Trainer.num_microbatches for
# T5-Base at the papers' 2048 rows a batch on that slice (after
# tpu_generation). A starting point, not a measurement: the papers' v3-32
# holds the batch in 512 GiB of HBM, so a slice with less splits the batch
# into the power of two that brings each part's share back to 512 GiB.
# Prints 1 where no accumulation is needed.
suggest_microbatches() {
  local hbm=$(( TPU_CHIPS * TPU_HBM_GIB[$TPU_GENERATION] )) n=1
  while (( n * hbm < 512 )); do n=$(( n * 2 )); done
  echo "$n"
}
