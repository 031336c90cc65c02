"""`csl-jax train` / `csl-jax decode`: the Flax seq2seq baseline.

train:  OUT/config.json, OUT/checkpoints/, OUT/tensorboard/, OUT/summary.json
decode: OUT/predictions.tsv (input, target, prediction) and OUT/summary.json
        with the task's metrics (exact_match).
Model and training sizes come from gin (`seq2seq.Seq2SeqConfig.*`,
`seq2seq.TrainConfig.*`); explicit flags win.
"""

import argparse
import dataclasses
import os

from csl_jax import provenance
from csl_jax.cli import stage
from csl_jax.errors import InputError


def _add_task_flags(p) -> None:
  p.add_argument("--task", required=True,
                 help="SeqIO task or mixture, e.g. NAME_csl_mixture")
  p.add_argument("--data_dir", help="register the task from here: a "
                 "`csl-jax augment` run directory, or <split>.tsv files")
  p.add_argument("--synthetic", help="synthetic pairs for NAME_csl_*")


def add_parser(subparsers) -> None:
  p = subparsers.add_parser("train", help="train the seq2seq baseline")
  _add_task_flags(p)
  p.add_argument("--out", required=True)
  p.add_argument("--steps", type=int)
  p.add_argument("--batch_size", type=int)
  p.add_argument("--seed", type=int)
  p.add_argument("--eval_split")
  p = subparsers.add_parser("decode", help="decode a split with a seq2seq "
                            "model and score exact match")
  p.add_argument("--model", required=True, help="a `csl-jax train` directory")
  _add_task_flags(p)
  p.add_argument("--split", default="test")
  p.add_argument("--beam_size", type=int, default=1)
  p.add_argument("--batch_size", type=int, default=64)
  p.add_argument("--out", required=True)


def _register(task, data_dir, synthetic) -> None:
  # TensorFlow through `tasks` (csl_jax.quiet.import_tensorflow): imported
  # by seqio first, its CUDA and oneDNN probe lines came before the error.
  import tasks  # pylint: disable=g-import-not-at-top
  tasks.registry.register_task(task, data_dir, synthetic)


def _train(args) -> int:
  # pylint: disable=g-import-not-at-top
  from csl_jax.seq2seq import input_pipeline, models, train
  # pylint: enable=g-import-not-at-top
  if args.synthetic and not args.task.endswith(("_synthetic", "_mixture")):
    # Registered, then never read: the run trained on the original data.
    raise InputError(f"--synthetic is read by the tasks NAME_csl_mixture "
                     f"and NAME_csl_synthetic; --task {args.task} would "
                     "train on the original data alone")
  _register(args.task, args.data_dir, args.synthetic)
  config = train.TrainConfig()
  overrides = {k: v for k, v in (
      ("num_steps", args.steps), ("batch_size", args.batch_size),
      ("seed", args.seed), ("eval_split", args.eval_split)) if v is not None}
  config = dataclasses.replace(config, **overrides)
  extra = {"data_dir": args.data_dir and os.path.abspath(args.data_dir),
           "synthetic": args.synthetic and os.path.abspath(args.synthetic)}
  with stage.stage(args.out, provenance.command_line()) as summary:
    model = models.Seq2SeqConfig()  # gin's lengths, as train() takes them
    summary["too_long"] = input_pipeline.warn_if_too_long(
        args.task, "train", input_pipeline.lengths(model.max_input_len,
                                                   model.max_target_len))
    # The trainer raises InputError for configurations it cannot take;
    # anything else is a bug and keeps its traceback.
    summary.update(train.train(args.out, args.task, config=config,
                               extra_config=extra))
  first, last = summary.get("first_loss"), summary.get("final_loss")
  loss = (f", loss {first:.4f} -> {last:.4f}" if isinstance(first, float)
          and isinstance(last, float) else "")
  print(f"csl-jax train: done; {summary.get('steps', 0)} steps{loss} in "
        f"{summary.get('wall_seconds', 0.0):.0f} s; checkpoints in "
        f"{os.path.join(args.out, 'checkpoints')}, TensorBoard in "
        f"{os.path.join(args.out, 'tensorboard')}, figures in "
        f"{os.path.join(args.out, 'summary.json')}")
  return 0


def _decode(args) -> int:
  # Lazy: `csl-jax --help` should not pay for JAX and orbax.
  # pylint: disable=g-import-not-at-top
  from csl_jax.seq2seq import decode
  from csl_jax.seq2seq import input_pipeline
  from csl_jax.seq2seq import train
  # pylint: enable=g-import-not-at-top
  if not os.path.exists(os.path.join(args.model, train.CONFIG_FILE)):
    raise InputError(f"{args.model}: not a `csl-jax train` directory")
  model_config, record = train.load_config(args.model)
  # Without --data_dir, fall back to where the model was trained from.
  data_dir = args.data_dir or record.get("data_dir")
  synthetic = args.synthetic or (None if args.data_dir
                                 else record.get("synthetic"))
  _register(args.task, data_dir, synthetic)
  import seqio  # pylint: disable=g-import-not-at-top
  provider = seqio.get_mixture_or_task(args.task)
  if isinstance(provider, seqio.Mixture):  # no metrics or postprocessing
    raise InputError(f"--task {args.task} is a mixture: decode one of its "
                     f"tasks ({', '.join(t.name for t in provider.tasks)})")
  input_pipeline.check_split(args.task, args.split, "--split")
  if args.batch_size < 1:
    raise InputError(f"--batch_size must be >= 1, got {args.batch_size}")
  if args.beam_size < 1:  # else greedy, recorded as the flag's value
    raise InputError(f"--beam_size must be >= 1, got {args.beam_size}")
  train.check_vocabulary(record, args.task)
  model, params = train.load_params(args.model)
  lengths = input_pipeline.lengths(model_config.max_input_len,
                                   model_config.max_target_len)
  stage.run(args.out, decode.decode_to_dir, model, params, args.task,
            args.split, lengths, args.batch_size, args.beam_size)
  return 0


def main(args: argparse.Namespace) -> int:
  return _train(args) if args.subcommand == "train" else _decode(args)


def register_configurables() -> None:
  """Imports the trainer's gin configurables (TensorFlow/SeqIO come with
  them, so only the train and decode subcommands pay for the import)."""
  from csl_jax.seq2seq import models, train  # pylint: disable=g-import-not-at-top,unused-import
