#!/usr/bin/env bash
# From-scratch seq2seq on a SCAN split: the original task alone versus the
# CSL mixture (1:1 original:synthetic), same model, steps and seed (issue 6).
#
# Usage: scripts/reproduce_scan_seq2seq.sh [SPLIT [STEPS [OUT [SEED]]]] \
#            [--gin.seq2seq.X=V ...]
#   SPLIT: addprim_jump (default), addprim_turn_left, length, simple
#   Further flags go to both `csl-jax train` runs.
#
# Writes OUT/augment (the CSL run: grammar, model, 100k samples),
# OUT/spm.model (word-level vocabulary of train + samples),
# OUT/{original,mixture}/ (trained models) and their test/summary.json with
# exact match, and OUT/results.json. Needs no download: SCAN is generated.
set -euo pipefail
SPLIT=${1:-addprim_jump}
STEPS=${2:-10000}
OUT=${3:-runs/seq2seq_scan_${SPLIT}}
SEED=${4:-0}
shift $(( $# < 4 ? $# : 4 ))
GIN=gin/seq2seq/scan.gin
TASK=scan_${SPLIT}

csl-jax augment --out "$OUT/augment" --gin_file=gin/csl/scan_augment.gin \
  --split "$SPLIT"
DATA=$OUT/augment/data
SAMPLES=$OUT/augment/csl/synthetic.tsv

csl-jax vocab --tsv "$DATA/train.tsv" --tsv "$SAMPLES" --out "$OUT/spm" \
  --model_type word --vocab_size 64
export CSL_JAX_VOCAB=sentencepiece CSL_JAX_SPM=$OUT/spm.model

csl-jax train --task "${TASK}_csl_mixture" --data_dir "$DATA" \
  --synthetic "$SAMPLES" --out "$OUT/mixture" --steps "$STEPS" \
  --seed "$SEED" --gin_file=$GIN "$@"
csl-jax decode --model "$OUT/mixture" --task "$TASK" --split test \
  --out "$OUT/mixture/test"
csl-jax train --task "$TASK" --data_dir "$DATA" --out "$OUT/original" \
  --steps "$STEPS" --seed "$SEED" --gin_file=$GIN "$@"
csl-jax decode --model "$OUT/original" --task "$TASK" --split test \
  --out "$OUT/original/test"

python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
results = {}
for run in ("original", "mixture"):
  train = json.load(open(os.path.join(out, run, "summary.json")))
  test = json.load(open(os.path.join(out, run, "test", "summary.json")))
  results[run] = {
      "exact_match": test["exact_match"], "num_examples": test["num_examples"],
      "train_seconds": train["seconds"], "decode_seconds": test["seconds"],
      "examples_per_second": train["examples_per_second"],
      "steps": train["steps"]}
  print(f"{run:9s} exact match {test['exact_match']:.2f} on "
        f"{test['num_examples']} test examples; train {train['seconds']:.0f} s "
        f"({train['examples_per_second']:.0f} examples/s), decode "
        f"{test['seconds']:.0f} s")
json.dump(results, open(os.path.join(out, "results.json"), "w"), indent=1)
PY
