#!/usr/bin/env bash
# Runs T5X (python -m t5x.train by default) with a csl_jax gin file on every
# worker of a TPU VM set up by setup_tpu.sh, detached, logging to
# ~/csl_<run>.log on each worker, e.g.
#   launch/train.sh --name csl-v3-32 --zone europe-west4-a \
#     --gin_file gin/t5x/scan.gin \
#     --mixture scan_addprim_jump_csl_mixture \
#     --data gs://BUCKET/data --model_dir gs://BUCKET/runs/scan_jump \
#     [--num_microbatches 4] [--dry_run]
# The data root holds one directory per dataset (train/dev/test.tsv and
# synthetic.tsv); the SeqIO names come from the directory names. Data and
# model dir must be on GCS: a pod's workers share no disk.
# Evaluation uses the same script:
#   launch/train.sh ... --module t5x.eval \
#     --gin_file gin/t5x/model_t5_base.gin --gin_file gin/t5x/eval.gin \
#     --mixture scan_addprim_jump \
#     --gin CHECKPOINT_PATH=\"gs://BUCKET/runs/scan_jump/checkpoint_1009900\" \
#     --gin EVAL_OUTPUT_DIR=\"gs://BUCKET/runs/scan_jump/eval\"

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

MODULE="t5x.train"
GIN_FILES=()
GIN_BINDINGS=()
MIXTURE=""
DATA=""
MODEL_DIR=""
VOCAB="sentencepiece"
SPM="gs://t5-data/vocabs/cc_all.32000.100extra/sentencepiece.model"
RUN=""
FOREGROUND=0
NUM_MICROBATCHES=""
INPUT_PREFIX=""

usage() {
  cat <<USAGE
Usage: $0 [flags]
  --gin_file FILE    gin file relative to the repository root (repeatable;
                     default gin/t5x/scan.gin)
  --mixture NAME     MIXTURE_OR_TASK_NAME (default: the gin file's)
  --data DIR         CSL_JAX_DATA: data root, gs:// (required)
  --model_dir DIR    MODEL_DIR, gs:// (required for t5x.train)
  --gin BINDING      extra gin binding NAME=VALUE (repeatable)
  --num_microbatches N
                     T5X's trainer.Trainer.num_microbatches: each batch in N
                     parts, gradients accumulated (same batch, less memory).
                     T5-Base at the papers' 2048 rows a batch, to start with
                     (scaled from the papers' v3-32 by HBM; create_tpu.sh
                     prints it for its slice; raise it on out-of-memory):
                       none: v3-32, v4-32, v5litepod-32, v5p-16, v6e-16 and up
                       2:    v2-32, v3-16, v4-16, v5litepod-16, v5p-8, v6e-8
                       4:    v2-16, v3-8, v4-8, v5litepod-8, v6e-4
  --input_prefix TEXT
                     CSL_JAX_INPUT_PREFIX: text put before every input, e.g.
                     "semanticparse: " (Shaw et al.)
  --vocab KIND       CSL_JAX_VOCAB (default $VOCAB)
  --spm PATH         CSL_JAX_SPM (default $SPM)
  --module MODULE    t5x.train, t5x.eval or t5x.infer (default $MODULE)
  --run NAME         log name: ~/csl_NAME.log (default: MODEL_DIR's basename)
  --foreground       wait for the run instead of detaching it
$COMMON_USAGE
USAGE
}

while (( $# )); do
  parse_common_flag "$@"
  if (( SHIFT )); then shift "$SHIFT"; continue; fi
  case "$1" in
    --foreground) FOREGROUND=1; shift; continue ;;
    -h|--help) usage; exit 0 ;;
  esac
  split_flag "$@"
  case "$FLAG" in
    --gin_file) GIN_FILES+=("$VALUE") ;;
    --gin) GIN_BINDINGS+=("$VALUE") ;;
    --mixture) MIXTURE="$VALUE" ;;
    --data) DATA="$VALUE" ;;
    --model_dir) MODEL_DIR="$VALUE" ;;
    --vocab) VOCAB="$VALUE" ;;
    --spm) SPM="$VALUE" ;;
    --module) MODULE="$VALUE" ;;
    --run) RUN="$VALUE" ;;
    --num_microbatches) NUM_MICROBATCHES="$VALUE" ;;
    --input_prefix) INPUT_PREFIX="$VALUE" ;;
    *) usage >&2; die "unknown flag: $1" ;;
  esac
  [[ -n "$VALUE" ]] || die "$FLAG needs a value"
  shift "$USED"
done

(( ${#GIN_FILES[@]} )) || GIN_FILES=(gin/t5x/scan.gin)
[[ -n "$DATA" ]] || die "--data is required (the CSL_JAX_DATA root)"
if [[ "$MODULE" == t5x.train && -z "$MODEL_DIR" ]]; then
  die "--model_dir is required for t5x.train"
fi
# Every worker reads the data and writes checkpoints: a local path would
# be a different (or missing) directory on each.
IFS=, read -r -a DATA_ROOTS <<< "$DATA"
for root in "${DATA_ROOTS[@]}"; do
  [[ -z "$root" || "$root" == gs://* ]] || die "--data $root: not a gs:// path (a pod's workers share no local disk)"
done
if [[ -n "$MODEL_DIR" && "$MODEL_DIR" != gs://* ]]; then
  die "--model_dir $MODEL_DIR: not a gs:// path (a pod's workers share no local disk)"
fi
# A SentencePiece model in this tree reaches the workers with it.
if [[ "$VOCAB" == sentencepiece && "$SPM" != gs://* && ! -f "$REPO_ROOT/$SPM" ]]; then
  die "--spm $SPM: neither a gs:// path nor a file in this repository"
fi
if [[ -n "$NUM_MICROBATCHES" && ! "$NUM_MICROBATCHES" =~ ^[1-9][0-9]*$ ]]; then
  die "--num_microbatches $NUM_MICROBATCHES: not a positive integer"
fi
# t5x.eval and t5x.infer have no trainer: gin would refuse the binding.
if [[ -n "$NUM_MICROBATCHES" && "$MODULE" != t5x.train ]]; then
  die "--num_microbatches: only for t5x.train, not $MODULE (it has no trainer)"
fi
for file in "${GIN_FILES[@]}"; do
  [[ -f "$REPO_ROOT/$file" || "$file" == t5x/* ]] || die "$file: no such gin file"
done
# Gin reads Python string literals: quote with the kind the path lacks.
gin_string() {
  if [[ "$1" != *[\'\\]* ]]; then printf "'%s'" "$1"; else printf '"%s"' "$1"; fi
}
for path in "$MODEL_DIR" "$MIXTURE"; do
  if [[ "$path" == *[\'\\]* && "$path" == *[\"\\]* ]]; then
    die "$path: both quote kinds or a backslash (gin cannot take it as a string)"
  fi
done
RUN="${RUN:-$(basename "${MODEL_DIR:-${MODULE#t5x.}}")}"
RUN="${RUN//[^A-Za-z0-9_.-]/_}"  # The log's name, in an unquoted ~/ path.

# The worker's command line, every word shell-quoted (paths may hold
# spaces); gin strings carry their own quotes inside the word.
T5X_ARGS=""
for file in "${GIN_FILES[@]}"; do T5X_ARGS+=" $(quote "--gin_file=$file")"; done
if [[ -n "$MODEL_DIR" ]]; then
  T5X_ARGS+=" $(quote "--gin.MODEL_DIR=$(gin_string "$MODEL_DIR")")"
fi
if [[ -n "$MIXTURE" ]]; then
  T5X_ARGS+=" $(quote "--gin.MIXTURE_OR_TASK_NAME=$(gin_string "$MIXTURE")")"
fi
if [[ -n "$NUM_MICROBATCHES" ]]; then
  T5X_ARGS+=" --gin.trainer.Trainer.num_microbatches=$NUM_MICROBATCHES"
fi
for binding in "${GIN_BINDINGS[@]+"${GIN_BINDINGS[@]}"}"; do
  T5X_ARGS+=" $(quote "--gin.$binding")"
done

ENVIRONMENT="$(quote "CSL_JAX_DATA=$DATA") $(quote "CSL_JAX_VOCAB=$VOCAB") $(quote "CSL_JAX_SPM=$SPM")"
if [[ -n "$INPUT_PREFIX" ]]; then
  ENVIRONMENT+=" $(quote "CSL_JAX_INPUT_PREFIX=$INPUT_PREFIX")"
fi
COMMAND="$REMOTE_VENV/bin/python -m $(quote "$MODULE")$T5X_ARGS --alsologtostderr"
LOG="~/csl_$RUN.log"
if (( FOREGROUND )); then
  # pipefail: the run's exit status, not tee's, so that a chain of
  # foreground runs (README, pcfg_bt on a pod) stops at a failed one.
  REMOTE="set -o pipefail && cd $REMOTE_DIR && env $ENVIRONMENT $COMMAND 2>&1 | tee $LOG"
else
  # Detached, so the run outlives the ssh session.
  REMOTE="cd $REMOTE_DIR && env $ENVIRONMENT setsid nohup $COMMAND > $LOG 2>&1 < /dev/null &"
fi

require_gcloud
gcloud_location_flags
run gcloud compute tpus tpu-vm ssh "$TPU_NAME" "${GCLOUD_FLAGS[@]}" \
  --worker=all --command="$REMOTE"
if (( ! FOREGROUND )); then
  echo "Follow worker 0's log with:"
  echo "  gcloud compute tpus tpu-vm ssh $TPU_NAME ${GCLOUD_FLAGS[*]} --worker=0 --command='tail -f $LOG'"
fi
