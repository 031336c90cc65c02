#!/usr/bin/env bash
# Keeps in the repository what a device call finished, so that later
# sessions (whose checkouts hold only what landed) score every cell of a
# grid that takes several sessions' device time (scripts/prepare_gpu_bundles.sh
# copies them back over its fresh export):
#
#   tar xzf back.tgz -C .gpu/B16 && bash scripts/keep_gpu_results.sh B16
#
# Only what the runner reads of a finished cell is kept: outputs.json,
# outputs.npz and train/selection.json (the TensorBoard files stay out;
# BENCHMARKS.md records the curves). Then commit benchmarks/gpu_results/.
set -euo pipefail
cd "$(dirname "$0")/.."
if (( $# != 1 )); then
  echo "usage: $0 BUNDLE_NAME   (a directory of .gpu/)" >&2
  exit 2
fi
# (the two roots can be moved, for the tests)
src="${CSL_JAX_GPU_DIR:-.gpu}/$1"
dst="${CSL_JAX_GPU_RESULTS:-benchmarks/gpu_results}/$1"
if [[ ! -d "$src/cells" ]]; then
  echo "keep_gpu_results.sh: $src/cells: no such directory (export and unpack first)" >&2
  exit 2
fi
n=0
while IFS= read -r -d '' out; do
  cell="$(dirname "$out")"
  rel="${cell#"$src"/}"
  mkdir -p "$dst/$rel/train"
  cp "$cell/outputs.json" "$dst/$rel/"
  [[ -f "$cell/outputs.npz" ]] && cp "$cell/outputs.npz" "$dst/$rel/"
  [[ -f "$cell/train/selection.json" ]] && cp "$cell/train/selection.json" "$dst/$rel/train/"
  n=$((n + 1))
done < <(find "$src/cells" -name outputs.json -not -path '*/superseded/*' -print0 | sort -z)
echo "[keep] $n finished cell(s) of $src in $dst"
