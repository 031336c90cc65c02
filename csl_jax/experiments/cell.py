"""One cell of an experiment: (split, training data, seed) as a cached stage.

`stage` makes the cell a `csl_jax.pipeline.cache` stage keyed by its data
(vocabulary, train, synthetic, eval parts and categories, by content), the
model and trainer configs, the regime, the decoding settings and the seed.
Its run trains the Flax seq2seq (here, or exported to a bundle and scored
once it is back), decodes the eval parts and scores them; `record` is the
cell's line of results.jsonl. The grid around the cells is
`csl_jax.experiments.runner`.
"""

import dataclasses
import os
import shutil
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence

from csl_jax import configs
from csl_jax.data import tsv
from csl_jax.experiments import grid as grid_lib
from csl_jax.experiments import results as results_lib
from csl_jax.files import atomic_write_text
from csl_jax.methods import base as method_base
from csl_jax.pipeline import augment as augment_lib
from csl_jax.pipeline import cache
from csl_jax.seq2seq import arrays
from csl_jax.seq2seq import bundle as bundle_lib
from csl_jax.seq2seq import config as seq2seq_config
from csl_jax.seq2seq import model_selection
from csl_jax.summaries import TensorBoardWriter


def say(line: str) -> None:
  """A progress line (one per augmentation run and per cell)."""
  print(f"[experiment {time.strftime('%H:%M:%S')}] {line}", flush=True)


def task_name(dataset: str, split: str) -> str:
  name = f"{dataset}_{split}" if split else dataset
  return "".join(c if c.isalnum() or c in "_.:" else "_" for c in name)


@dataclasses.dataclass
class Context:
  """What every cell of one experiment shares (`runner.experiment`'s
  settings)."""
  out_dir: str
  dataset: str
  regime: str
  finetune_steps: int
  eval_parts: Sequence[str]
  beam_size: int
  decode_batch_size: int
  model_config: Any
  train_config: Any
  # {training data row: "equal" or "union"}; rows not listed: "equal".
  mixing: Mapping[str, str] = dataclasses.field(default_factory=dict)
  # Cells exported to this directory, trained elsewhere (seq2seq/bundle.py).
  bundle: Optional[str] = None
  # Model selection (`experiment.dev`): {"part", "fraction", "seed"}, the
  # fraction None for a whole part of its own; None: the last checkpoint.
  dev: Optional[Mapping[str, Any]] = None


def stage(cell: grid_lib.Cell, run_dir: str, synthetic: Optional[str],
                vocab: str, categories: Mapping[str, Optional[List[str]]],
                category_files: Sequence[str], ctx: Context
                ) -> method_base.Stage:
  """The cell as a cached stage: inputs by content, config by value."""
  parts = {p: os.path.join(run_dir, augment_lib.DATA_DIR, f"{p}.tsv")
           for p in ctx.eval_parts}
  train_tsv = os.path.join(run_dir, augment_lib.DATA_DIR, "train.tsv")
  dev_file = [os.path.join(run_dir, augment_lib.DATA_DIR,
                           f"{ctx.dev['part']}.tsv")] \
      if ctx.dev and ctx.dev["part"] not in ctx.eval_parts else []
  inputs = [vocab, train_tsv] + ([synthetic] if synthetic else []) + \
      [parts[p] for p in ctx.eval_parts] + list(category_files) + dev_file
  pretrain = cell.data != grid_lib.ORIGINAL and \
      ctx.regime == "pretrain_finetune"
  train_config = dataclasses.replace(ctx.train_config, seed=cell.seed)
  config = {
      "dataset": ctx.dataset, "split": cell.split, "data": cell.data,
      "seed": cell.seed,
      "regime": "pretrain_finetune" if pretrain else (
          "original" if cell.data == grid_lib.ORIGINAL else "mixture"),
      "model": configs.to_json(dataclasses.asdict(ctx.model_config)),
      "train": configs.to_json(seq2seq_config.train_key(train_config)),
      "finetune_steps": ctx.finetune_steps if pretrain else None,
      # Only when set: cells of grids before the option keep their keys.
      **({"mixing": ctx.mixing[cell.data]}
         if ctx.mixing.get(cell.data, "equal") != "equal" and
         not pretrain else {}),
      "decode": {**seq2seq_config.decode_key(ctx.beam_size),
                 "parts": list(ctx.eval_parts)},
      # Only when set: the arrays trainer draws other batches (arrays.py).
      **({"trainer": "bundle"} if ctx.bundle else {}),
      # Only when set; the checkpoints are what it chooses from.
      **({"dev": {**ctx.dev, "every": train_config.checkpoint_every}}
         if ctx.dev else {}),
  }
  name = task_name(ctx.dataset, cell.split)
  train_task = name if cell.data == grid_lib.ORIGINAL else \
      f"{name}_{cell.data}_mixture"

  def scored(directory: str, summary: Dict[str, Any],
             rows: Mapping[str, List[tuple]],
             perplexities: Mapping[str, float]) -> Dict[str, Any]:
    summary["parts"] = {}
    for part in ctx.eval_parts:
      expected = tsv.read_tsv(parts[part])
      if [r[0].split() for r in rows[part]] != [e.input.split()
                                                 for e in expected]:
        raise RuntimeError(f"decoded {part} rows are not in the order of "
                           f"{parts[part]}: categories would misalign")
      atomic_write_text(os.path.join(directory, part, "predictions.tsv"),
                        "".join("\t".join(r) + "\n" for r in rows[part]))
      # GOODDEV: the rows that are not dev rows.
      keep = model_selection.scored_rows(ctx.dev, part, len(rows[part]))
      kept = [rows[part][i] for i in keep]
      cats = categories.get(part)
      cats = [cats[i] for i in keep] if cats else cats
      summary["parts"][part] = results_lib.score(kept, cats)
      # Of the whole part, the dev rows too.
      summary["parts"][part]["perplexity"] = perplexities[part]
      too_long = too_long_targets(name, [t for _, t, _ in kept],
                           ctx.model_config.max_target_len)
      summary["parts"][part]["targets_too_long"] = too_long
      if too_long:
        say(f"{cell.describe()}: {too_long} of {len(kept)} {part} "
             "targets are longer than seq2seq.Seq2SeqConfig.max_target_len "
             f"({ctx.model_config.max_target_len} tokens, EOS included): "
             "they can never be predicted right")
    for field in ("selected_step", "dev_accuracy"):
      if field in summary["train"]:
        summary[field] = summary["train"][field]
    _board_scores(directory, summary)
    return summary

  def dev_ids(lengths):
    """(input ids, target ids) of the dev rows, or None."""
    if not ctx.dev:
      return None
    from csl_jax.seq2seq import decode  # pylint: disable=g-import-not-at-top
    examples = decode.split_examples(name, ctx.dev["part"], lengths)
    chosen = [examples[i] for i in
              model_selection.dev_rows(ctx.dev, len(examples))]
    return ([ex["inputs"] for ex in chosen], [ex["targets"] for ex in chosen])

  def run_bundled(directory: str) -> Dict[str, Any]:
    # pylint: disable=g-import-not-at-top
    import tasks
    from csl_jax.seq2seq import decode
    from csl_jax.seq2seq import input_pipeline
    # pylint: enable=g-import-not-at-top
    key = cache.stage_key("cell", inputs, config)["key"]
    done = bundle_lib.outputs(ctx.bundle, cell.path, key)
    if done is None:
      bundle_lib.export_cell(
          ctx.bundle, cell.path, key, name if pretrain else train_task, name,
          ctx.eval_parts, ctx.model_config, train_config, ctx.beam_size,
          ctx.decode_batch_size,
          pretrain_task=f"{name}_{cell.data}_synthetic" if pretrain else None,
          finetune_steps=ctx.finetune_steps if pretrain else None,
          dev=ctx.dev, texts=tasks.registry.split_texts)
      raise bundle_lib.Pending(cell.path)
    lengths = input_pipeline.lengths(ctx.model_config.max_input_len,
                                     ctx.model_config.max_target_len)
    rows = {p: decode.score_predictions(
        name, decode.split_examples(name, p, lengths),
        done["parts"][p]["ids"])[0] for p in ctx.eval_parts}
    for part in ("pretrain", "train"):  # the learning curves of the plots
      board = os.path.join(ctx.bundle, bundle_lib.CELLS_DIR, cell.path,
                           part, "tensorboard")
      if os.path.isdir(board):
        shutil.copytree(board, os.path.join(directory, part, "tensorboard"),
                        dirs_exist_ok=True)
    summary = {"split": cell.split, "data": cell.data, "seed": cell.seed,
               "regime": config["regime"], "train": done["train"],
               **({"pretrain": done["pretrain"]} if done.get("pretrain")
                  else {}),
               "train_seconds": done["train_seconds"],
               "examples_per_second": done["train"].get(
                   "examples_per_second"),
               "decode_seconds": done["decode_seconds"],
               "device": done.get("device"),
               "trained_by": done.get("provenance")}
    return scored(directory, summary, rows, {
        p: done["parts"][p]["perplexity"] for p in ctx.eval_parts})

  def run(directory: str) -> Dict[str, Any]:
    if ctx.bundle:
      return run_bundled(directory)
    # pylint: disable=g-import-not-at-top
    from csl_jax.seq2seq import decode
    from csl_jax.seq2seq import input_pipeline
    from csl_jax.seq2seq import train as train_lib
    # pylint: enable=g-import-not-at-top
    train_dir = os.path.join(directory, "train")
    summary: Dict[str, Any] = {"split": cell.split, "data": cell.data,
                               "seed": cell.seed, "regime": config["regime"]}
    dev = dev_ids(input_pipeline.lengths(ctx.model_config.max_input_len,
                                         ctx.model_config.max_target_len))
    start = time.time()
    # A bar on a terminal, a line per 10% of the steps in a log file: a
    # cell trains for minutes.
    shown = {"progress": True, "desc": f"{cell.path} train"}
    if cell.data == grid_lib.ORIGINAL:
      metrics = train_lib.train(train_dir, name, ctx.model_config,
                                train_config, dev=dev, **shown)
    elif not pretrain:
      metrics = train_lib.train(train_dir, train_task,
                                ctx.model_config, train_config, dev=dev,
                                **shown)
    else:
      pre_dir = os.path.join(directory, "pretrain")
      pre = train_lib.train(pre_dir, f"{name}_{cell.data}_synthetic",
                            ctx.model_config, train_config, progress=True,
                            desc=f"{cell.path} pretrain")
      metrics = train_lib.train(
          train_dir, name, ctx.model_config,
          dataclasses.replace(train_config, num_steps=ctx.finetune_steps),
          init_from=pre_dir, dev=dev, **shown)
      summary["pretrain"] = pre
    summary["train"] = metrics
    summary["train_seconds"] = time.time() - start
    summary["device"] = _device_kind()
    rates = [m.get("examples_per_second") for m in
             (metrics, summary.get("pretrain") or {}) if m]
    rates = [r for r in rates if r]
    summary["examples_per_second"] = sum(rates) / len(rates) if rates \
        else None
    model_config, _ = train_lib.load_config(train_dir)
    model, params = train_lib.load_params(train_dir, selected=bool(dev))
    lengths = input_pipeline.lengths(model_config.max_input_len,
                                     model_config.max_target_len)
    start = time.time()
    # Each part read once: decoded, and its gold outputs' perplexity.
    examples = {p: decode.split_examples(name, p, lengths)
                for p in ctx.eval_parts}
    # Minutes on COGS's gen part: a bar, or a line per tenth of the batches.
    rows = {p: decode.evaluate(model, params, name, p, lengths,
                               ctx.decode_batch_size, ctx.beam_size,
                               examples=examples[p], progress=True,
                               desc=f"{cell.path} decode {p}")[0]
            for p in ctx.eval_parts}
    perplexities = {p: train_lib.perplexity(
        model, params, arrays.of_examples(examples[p]), lengths,
        ctx.decode_batch_size) for p in ctx.eval_parts}
    summary["decode_seconds"] = time.time() - start
    return scored(directory, summary, rows, perplexities)

  return method_base.Stage("cell", inputs, config, run)


def _board_scores(directory: str, summary: Mapping[str, Any]) -> None:
  """Each eval part's exact match (GOODDEV: of its scored rows) as
  `eval_<part>/exact_match` in the cell's TensorBoard directory, at the
  step of the parameters decoded: the selected checkpoint's, else the last.
  The dev scores of the selection are the trainer's own (`dev/exact_match`;
  a part named `dev` is then `eval_dev`, another series)."""
  train = summary["train"]
  step = train.get("selected_step")
  step = train.get("steps") if step is None else step
  board = os.path.join(directory, "train", "tensorboard")
  if step is None or not os.path.isdir(board):
    return
  writer = TensorBoardWriter(board)
  try:
    for part, scores in summary["parts"].items():
      writer.scalars({"exact_match": scores["accuracy"]}, int(step),
                     f"eval_{part}")
  finally:
    writer.close()


def seen_by_part(cell_dir: str, eval_parts: Sequence[str],
                  training_files: Sequence[str],
                  dev: Optional[Dict[str, Any]]
                  ) -> Optional[Dict[str, Any]]:
  """`results.seen_scores` of each eval part's scored rows (GOODDEV's dev
  rows left out, as in the part's exact match) against the outputs of the
  files the cell trained on; None for a cell without its predictions."""
  rows = {}
  for part in eval_parts:
    path = os.path.join(cell_dir, part, "predictions.tsv")
    if not os.path.isfile(path):
      return None
    with open(path, encoding="utf-8") as f:
      every = [tuple(line.rstrip("\n").split("\t")) for line in f]
    rows[part] = [every[i] for i in
                  model_selection.scored_rows(dev, part, len(every))]
  seen = results_lib.seen_outputs(
      [r[1] for part_rows in rows.values() for r in part_rows],
      training_files)
  return {p: results_lib.seen_scores(r, seen) for p, r in rows.items()}


def too_long_targets(task: str, targets: Sequence[str], max_len: int) -> int:
  """How many `targets` take more than `max_len` tokens with EOS (trimmed by
  the pipeline: a model decoding `max_len` tokens never gets them right)."""
  import seqio  # pylint: disable=g-import-not-at-top
  vocab = seqio.get_mixture_or_task(task).output_features[
      "targets"].vocabulary
  return sum(len(vocab.encode(t)) + 1 > max_len for t in targets)


def _device_kind() -> str:
  import jax  # pylint: disable=g-import-not-at-top
  return str(jax.devices()[0].device_kind)


def record(cell: grid_lib.Cell, summary: Mapping[str, Any],
            num_original: int, num_synthetic: int, cell_dir: str,
            eval_parts: Sequence[str],
            seen: Optional[Mapping[str, Mapping[str, List[int]]]] = None
            ) -> Dict[str, Any]:
  """One line of results.jsonl; its parts in `eval_parts` order, the first
  the table's (a cached summary.json holds them sorted)."""
  parts = {p: summary["parts"][p] for p in eval_parts}
  first = eval_parts[0]
  record = {
      "split": cell.split, "data": cell.data, "seed": cell.seed,
      "regime": summary.get("regime"),
      "accuracy": parts[first]["accuracy"], "eval_part": first,
      "accuracy_by_part": {p: s["accuracy"] for p, s in parts.items()},
      "num_eval_examples": {p: s["num_examples"] for p, s in parts.items()},
      "train_seconds": summary["train_seconds"],
      "decode_seconds": summary["decode_seconds"],
      "cell_seconds": summary.get("seconds"),
      "examples_per_second": summary.get("examples_per_second"),
      "steps": summary["train"].get("steps"),
      "final_loss": summary["train"].get("mean_last_loss"),
      "num_original": num_original, "num_synthetic": num_synthetic,
      "by_length": {p: s["by_length"] for p, s in parts.items()},
      # Teacher-forced, per target token (train.perplexity).
      "perplexity_by_part": {p: s.get("perplexity") for p, s in parts.items()},
      "cached": summary.get("cached"), "dir": cell_dir,
      "device": summary.get("device")}
  if summary.get("trained_by"):  # a bundle's cell: the machine's libraries
    record["trained_by"] = summary["trained_by"]
  if summary.get("selected_step") is not None:
    record["selected_step"] = summary["selected_step"]
    record["dev_accuracy"] = summary["dev_accuracy"]
  cats = {p: s["by_category"] for p, s in parts.items()
          if "by_category" in s}
  if cats:
    record["by_category"] = cats
  if seen:
    record["by_seen"] = {p: dict(c) for p, c in seen.items()}
    for kind in ("seen", "unseen"):
      record[f"accuracy_{kind}_by_part"] = {
          p: 100.0 * c[kind][1] / c[kind][0] if c[kind][0] else None
          for p, c in seen.items()}
    record["seen_share_by_part"] = {
        p: 100.0 * c["seen"][0] / max(c["seen"][0] + c["unseen"][0], 1)
        for p, c in seen.items()}
  return record
