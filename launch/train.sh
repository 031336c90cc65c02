#!/usr/bin/env bash
# Runs T5X (python -m t5x.train by default) with a csl_jax gin file on every
# worker of a TPU VM set up by setup_tpu.sh, detached, logging to
# ~/csl_<run>.log on each worker, e.g.
#   launch/train.sh --name csl-v3-32 --zone europe-west4-a \
#     --gin_file gin/t5x/scan.gin \
#     --mixture scan_addprim_jump_csl_mixture \
#     --data gs://BUCKET/data --model_dir gs://BUCKET/runs/scan_jump \
#     [--gin trainer.Trainer.num_microbatches=4] [--dry_run]
# The data root holds one directory per dataset (train/dev/test.tsv and
# synthetic.tsv); the SeqIO names come from the directory names.
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

usage() {
  cat <<USAGE
Usage: $0 [flags]
  --gin_file FILE    gin file relative to the repository root (repeatable;
                     default gin/t5x/scan.gin)
  --mixture NAME     MIXTURE_OR_TASK_NAME (default: the gin file's)
  --data DIR         CSL_JAX_DATA: data root, gs:// (required)
  --model_dir DIR    MODEL_DIR, gs:// (required for t5x.train)
  --gin BINDING      extra gin binding NAME=VALUE (repeatable)
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
for file in "${GIN_FILES[@]}"; do
  [[ -f "$REPO_ROOT/$file" || "$file" == t5x/* ]] || die "$file: no such gin file"
done
RUN="${RUN:-$(basename "${MODEL_DIR:-${MODULE#t5x.}}")}"

# The T5X command line, one shell-quoted word per flag. Gin strings need
# quotes inside the flag: --gin.MODEL_DIR="'gs://...'".
T5X_ARGS=""
for file in "${GIN_FILES[@]}"; do T5X_ARGS+=" --gin_file=$file"; done
if [[ -n "$MODEL_DIR" ]]; then T5X_ARGS+=" --gin.MODEL_DIR=\"'$MODEL_DIR'\""; fi
if [[ -n "$MIXTURE" ]]; then
  T5X_ARGS+=" --gin.MIXTURE_OR_TASK_NAME=\"'$MIXTURE'\""
fi
for binding in "${GIN_BINDINGS[@]+"${GIN_BINDINGS[@]}"}"; do
  T5X_ARGS+=" $(quote "--gin.$binding")"
done

ENVIRONMENT="CSL_JAX_DATA=$DATA CSL_JAX_VOCAB=$VOCAB CSL_JAX_SPM=$SPM"
COMMAND="$REMOTE_VENV/bin/python -m $MODULE$T5X_ARGS --alsologtostderr"
LOG="~/csl_$RUN.log"
if (( FOREGROUND )); then
  REMOTE="cd $REMOTE_DIR && env $ENVIRONMENT $COMMAND 2>&1 | tee $LOG"
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
