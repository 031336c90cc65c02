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
  else die "$1 needs a value"
  fi
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

# Quotes one word for display, leaving plain words bare.
quote() {
  if [[ "$1" =~ ^[A-Za-z0-9_./:=@,+%-]+$ ]]; then
    printf '%s' "$1"
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
