#!/usr/bin/env bash
# Installs csl_jax (this working tree) and T5X on every worker of a TPU VM,
# into a Python 3.11 virtual environment ~/csl_venv, e.g.
#   launch/setup_tpu.sh --name csl-v3-32 --zone europe-west4-a [--dry_run]
# Run it again after changing the code: it re-copies the tree.

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# T5X and the two libraries it imports that are not on PyPI (or, for
# jestimator, whose PyPI release breaks with current JAX), at the commits
# csl_jax's configs were checked with. T5X's own dependency list names
# GitHub heads of flax, optax and seqio, which would replace csl_jax's
# pinned versions, so these three go in without dependencies, and
# T5X_DEPS are all they needed beyond csl_jax's own requirements (measured
# with T5X's train, eval and infer: clu and tensorstore come with seqio,
# flax and orbax; chex and jaxtyping, in T5X's list, were not needed).
T5X_REF="cc342d419ec3e3e9c4bf1df33c82330cafdc1e16"
AIRIO_REF="69897df7d9a427b947a9f7bb4164c7782b43e601"
JESTIMATOR_REF="326824a477feef6d92e6f44175000907a72899ca"
T5X_DEPS="cached-property==2.0.1 fiddle==0.3.1 grain==0.2.18"
JAX_VERSION="0.10.2"  # csl_jax's pin; the [tpu] extra brings libtpu.
PYTHON="python3.11"

usage() {
  cat <<USAGE
Usage: $0 [flags]
  --t5x_ref REF     T5X commit or branch (default $T5X_REF)
  --python PYTHON   interpreter to install and use (default $PYTHON)
$COMMON_USAGE
USAGE
}

while (( $# )); do
  parse_common_flag "$@"
  if (( SHIFT )); then shift "$SHIFT"; continue; fi
  if [[ "$1" == -h || "$1" == --help ]]; then usage; exit 0; fi
  split_flag "$@"
  case "$FLAG" in
    --t5x_ref) T5X_REF="$VALUE" ;;
    --python) PYTHON="$VALUE" ;;
    *) usage >&2; die "unknown flag: $1" ;;
  esac
  shift "$USED"
done

require_gcloud
gcloud_location_flags

# 1. The working tree (uncommitted changes included), without git
#    metadata, build outputs, local runs or local data (a pod reads gs://).
TARBALL="${TMPDIR:-/tmp}/csl_jax-$TPU_NAME.tar.gz"
run tar -czf "$TARBALL" -C "$REPO_ROOT" --exclude=.git --exclude=runs \
  --exclude=./data --exclude=./.gpu --exclude=./.whl \
  --exclude='*.egg-info' --exclude=__pycache__ --exclude=.pytest_cache .

# 2. Copied to every worker.
run gcloud compute tpus tpu-vm scp "$TARBALL" "$TPU_NAME:csl_jax.tar.gz" \
  "${GCLOUD_FLAGS[@]}" --worker=all

# 3. Unpacked and installed on every worker (the same commands on each).
PIP="$REMOTE_VENV/bin/pip"
GITHUB="git+https://github.com"
REMOTE_SCRIPT="set -euo pipefail
sudo apt-get update -q
sudo DEBIAN_FRONTEND=noninteractive apt-get install -yq $PYTHON $PYTHON-venv git
rm -rf $REMOTE_DIR && mkdir -p $REMOTE_DIR
tar -xzf ~/csl_jax.tar.gz -C $REMOTE_DIR
[ -x $REMOTE_VENV/bin/python ] || $PYTHON -m venv $REMOTE_VENV
$PIP install -q --upgrade pip
$PIP install -q -e $REMOTE_DIR 'jax[tpu]==$JAX_VERSION'
$PIP install -q --no-deps '$GITHUB/google-research/t5x@$T5X_REF' '$GITHUB/google/airio@$AIRIO_REF' '$GITHUB/google-research/jestimator@$JESTIMATOR_REF'
$PIP install -q $T5X_DEPS
cd $REMOTE_DIR && $REMOTE_VENV/bin/python -c 'import jax, t5x.train, tasks; print(jax.process_index(), jax.device_count(), jax.local_device_count())'"

run gcloud compute tpus tpu-vm ssh "$TPU_NAME" "${GCLOUD_FLAGS[@]}" \
  --worker=all --command="$REMOTE_SCRIPT"
