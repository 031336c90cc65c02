"""`csl-jax experiment`: a grid of seq2seq runs on the augmentation pipeline.

For every (split, training data, seed) cell: the split's augmentation run
(`csl_jax.pipeline.augment`, its stage cache; one run per seed when the
seed sets synthetic sampling), the split's word-level vocabulary, then the
Flax seq2seq trained from scratch (or pretrained on the synthetic data and
fine-tuned on the original, Yao & Koller 2024 §3.1), decoded on the eval
parts and scored by exact match. Layout of OUT:

  OUT/augment/<split>/seed_<s>/        pipeline run directories
  OUT/vocab/<split>/spm.model          SentencePiece (word) vocabulary
  OUT/cells/<split>/<data>/seed_<s>/   stage_key.json, summary.json,
                                       train/ [pretrain/], <part>/predictions.tsv
  OUT/results.jsonl                    one line per finished cell
  OUT/results.{md,html}, OUT/results_files/*.png
  OUT/experiment.json                  the effective configuration
  OUT/provenance.json, OUT/config.gin  the code, libraries and gin bindings

A cell is a `csl_jax.pipeline.cache` stage (`csl_jax.experiments.cell`):
a rerun redoes only missing or changed cells; a cell killed midway resumes
from its trainer's checkpoints.
"""

import dataclasses
import os
import re
import shutil
import time
from typing import (Any, Dict, List, Mapping, Optional, Sequence, Tuple,
                    Union)

from absl import logging
import gin

from csl_jax import configs
from csl_jax import provenance
from csl_jax import selection
from csl_jax.data import registry as data_registry
from csl_jax.data import tsv
from csl_jax.errors import InputError
from csl_jax.experiments import cell as cell_lib
from csl_jax.experiments import grid as grid_lib
from csl_jax.experiments import plots as plots_lib
from csl_jax.experiments import results as results_lib
from csl_jax.files import (atomic_write_json, atomic_write_text,
                            file_sha256, read_json, read_text,
                            temporary_path)
from csl_jax.methods import base as method_base
from csl_jax.pipeline import augment as augment_lib
from csl_jax.pipeline import cache
from csl_jax.pipeline import lock
from csl_jax.seq2seq import bundle as bundle_lib
from csl_jax.seq2seq import model_selection

# The CSL sampler's seed: each cell's seed draws its own synthetic data.
SYNTHETIC_SEED_PARAMS = ("SampleConfig.seed",)
MIXINGS = ("method", "equal", "union")
# "seqio": cells train on SeqIO tasks (tf.data) in this process. "arrays":
# as a bundle's cells, from token arrays (no tf.data per step), exported
# under OUT/bundle and trained here by `run-bundle` in `lanes` processes;
# their key says so, as an exported cell's does.
TRAINERS = ("seqio", "arrays")
BUNDLE_DIR = "bundle"
# A progress line (one per augmentation run and per cell).
_say = cell_lib.say


def _minutes(seconds: float) -> str:
  return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def load_categories(part_file: str, data_dir: Optional[str],
                    spec: Optional[str]) -> Optional[List[str]]:
  """One category per line of the evaluated part, or None.

  `spec` is a file of one category per line (relative to `data_dir` unless
  absolute), or `column3`: the third column of `data_dir/<part>.tsv` (the
  original COGS gen.tsv). The count must equal the part's.
  """
  if not spec:
    return None
  part = os.path.splitext(os.path.basename(part_file))[0]
  if spec == "column3":
    src = os.path.join(data_dir or "", f"{part}.tsv")
    lines = read_text(src).splitlines()
    cats = []
    for i, line in enumerate(lines, start=1):
      cols = line.split("\t")
      if len(cols) < 3:
        raise InputError("no third (category) column", src, i)
      cats.append(cols[2].strip())
  else:
    src = spec if os.path.isabs(spec) else os.path.join(data_dir or "", spec)
    cats = [c.strip() for c in read_text(src).splitlines()]
  while cats and not cats[-1]:
    cats.pop()
  num = len(tsv.read_tsv(part_file))
  if len(cats) != num:
    raise InputError(f"{len(cats)} categories but {num} examples in "
                     f"{part_file}: they must align line by line", src)
  return cats


def _finished(cell_dir: str) -> bool:
  """Whether a cell's stage completed (its key may still have changed)."""
  try:
    return bool(read_json(os.path.join(cell_dir, cache.KEY_FILE)).get(
        "complete"))
  except (InputError, ValueError, OSError):
    return False


def _count_lines(path: Optional[str]) -> int:
  if not path or not os.path.exists(path):
    return 0
  with open(path, "rb") as f:
    return sum(1 for line in f if line.strip())


def _train_vocab(directory: str, files: Sequence[str], model_type: str
                 ) -> Dict[str, Any]:
  import tasks  # pylint: disable=g-import-not-at-top
  path, num_tokens = tasks.vocab.train_word_vocabulary(
      files, os.path.join(directory, "spm"), model_type)
  return {"model": path, "num_tokens": num_tokens,
          "vocab_size": tasks.vocab.get_vocabulary(
              "sentencepiece", path).vocab_size}


def _new_tokens(known_files: Sequence[str],
                files: Sequence[Optional[str]],
                keep: Optional[str] = None) -> List[str]:
  """Tokens of `files` (TSVs, read a line at a time) that none of
  `known_files` has, sorted. With `keep` (a JSON file), the answer is kept
  there with the files' hashes and reused while they are unchanged: a
  rerun need not read millions of synthetic lines again."""
  files = sorted({f for f in files if f})
  key = None
  if keep:
    key = cache.stage_key("new tokens", list(known_files) + files, {})["key"]
    try:
      kept = read_json(keep)
      if kept.get("key") == key:
        return list(kept["tokens"])
    except (InputError, ValueError, OSError):
      pass
  known, new = set(), set()
  for path in known_files:
    for ex in tsv.read_tsv(path):
      known.update(ex.input.split())
      known.update(ex.output.split())
  for path in files:
    with open(path, encoding="utf-8") as f:
      for line in f:
        new.update(line.split())
  tokens = sorted(new - known)
  if keep:
    atomic_write_json(keep, {"key": key, "tokens": tokens})
  return tokens


def _dev_spec(dev: Optional[str], fraction: float, seed: int,
              eval_parts: Sequence[str]
              ) -> Tuple[Optional[Dict[str, Any]], str]:
  """`experiment.dev` checked: the cells' dev spec and its description."""
  if dev is None:
    return None, "the last"
  if not isinstance(dev, str) or not dev:
    raise InputError(f"experiment.dev: {dev!r}; a part name or "
                     f"{model_selection.GOODDEV!r}")
  if dev == model_selection.GOODDEV:
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) \
        or not 0 < fraction < 1:
      raise InputError(f"experiment.dev_fraction: {fraction!r}; must be in "
                       "(0, 1)")
    if isinstance(seed, bool) or not isinstance(seed, int):
      raise InputError(f"experiment.dev_seed: {seed!r}; an integer")
    part = eval_parts[0]
    return ({"part": part, "fraction": float(fraction), "seed": seed},
            f"the best dev exact match at a checkpoint, GOODDEV (a random "
            f"{fraction:.0%} of {part}, seed {seed}; {part} scored on the "
            "other rows)")
  if dev in eval_parts:
    raise InputError(f"experiment.dev: {dev!r} is an eval part; select on "
                     f"another part, or on a share of it with "
                     f"{model_selection.GOODDEV!r}")
  return ({"part": dev, "fraction": None, "seed": None},
          f"the best exact match on {dev} at a checkpoint")


@gin.configurable(module="experiment")
def experiment(out_dir: str,
               dataset: str = gin.REQUIRED,
               splits: Sequence[str] = gin.REQUIRED,
               name: Optional[str] = None,
               data_dir: Optional[str] = None,
               dataset_options: Optional[Mapping[str, Any]] = None,
               methods: Sequence[str] = ("csl",),
               data: Optional[Sequence[str]] = None,
               select: Union[None, str, Sequence[str]] = None,
               select_num: Optional[int] = None,
               seeds: Sequence[int] = (0, 1, 2),
               regime: str = "mixture",
               finetune_steps: int = 1000,
               eval_parts: Sequence[str] = ("test",),
               beam_size: int = 5,
               decode_batch_size: int = 64,
               categories: Optional[Mapping[str, str]] = None,
               synthetic_seed_params: Sequence[str] = SYNTHETIC_SEED_PARAMS,
               synthetic_per_seed: bool = True,
               vocab_model_type: str = "word",
               mixing: str = "method",
               bundle: Optional[str] = None,
               dev: Optional[str] = None,
               dev_fraction: float = 0.1,
               dev_seed: int = 0,
               trainer: str = "seqio",
               lanes: int = 1,
               compare_to: Optional[str] = None,
               wait: bool = False) -> Dict[str, Any]:
  """Runs (or resumes) the grid into `out_dir`; returns its summary.

  Args:
    out_dir: the experiment directory (locked while this runs).
    dataset: a `csl_jax.data.registry` name (scan, cogs, geoquery, tsv).
    splits: the dataset's splits, the table's columns.
    name: a title for the tables (default: the directory's name).
    data_dir: the dataset's files (not for generated SCAN).
    dataset_options: extra loader options, as for `augment`.
    methods: augmentation methods run on every split.
    data: the table's rows: `original`, methods, `m_<select>_<k>`
      subsets (default: all of them).
    select, select_num: selectors (a list, one name or "a,b") and the
      size of each one's subset of each method's candidates.
    seeds: each seed sets the model's initialization, data order and (with
      `synthetic_per_seed`) synthetic sampling and selection.
    regime: `mixture` (1:1 original:synthetic, the default) or
      `pretrain_finetune` (train on the synthetic data alone, then
      `finetune_steps` steps on the original from those parameters).
    finetune_steps: fine-tuning steps of `pretrain_finetune`.
    eval_parts: the parts decoded and scored (the first is the table's).
    beam_size: 1: greedy decoding.
    decode_batch_size: examples decoded at once.
    categories: {part: file of one category per line (relative to
      data_dir), or "column3"}: exact match per category (COGS gen).
    synthetic_seed_params: gin parameters bound to the cell's seed while
      its augmentation runs.
    synthetic_per_seed: one augmentation run per seed (else one per split).
    vocab_model_type: SentencePiece model type of the vocabulary.
    mixing: regime `mixture`'s rates: "equal" (original and synthetic
      drawn 1:1), "union" (in proportion to their sizes: one shuffled
      union, as primitive augmentation and AugZero train), or "method"
      (each method's own `mixing`: union for primaug, augzero and
      pcfg_bt, equal for the others). Selected subsets always mix as
      equal.
    bundle: a directory: the cells are not trained here but exported
      there (token arrays and specs) for `csl-jax run-bundle` on a machine
      with an accelerator and JAX alone; rerun once the bundle is back to
      score and record them (`csl_jax/seq2seq/bundle.py`).
    dev: model selection. None: the last checkpoint is scored. A part of
      the data (e.g. `dev`): every checkpoint is decoded on it (greedy)
      and the one of the best exact match is scored
      (`csl_jax/seq2seq/model_selection.py`). "gooddev": Zhou et al.
      2023's GOODDEV, the dev set is a random `dev_fraction` of the first
      eval part (drawn by `dev_seed`: the same rows in every cell) and
      that part is scored on its other rows.
    dev_fraction, dev_seed: GOODDEV's share and draw.
    trainer: "seqio" (tf.data batches of the SeqIO tasks) or "arrays":
      the cells are exported as a bundle (`bundle`, default OUT/bundle)
      and trained here from its token arrays, `lanes` at once, then
      scored, in one call: on a CPU, without tf.data's work in every
      step, small models train markedly faster (BENCHMARKS.md, "The
      arrays trainer on a CPU"). Other batches than "seqio"'s, so other
      cells.
    lanes: the arrays trainer's processes.
    compare_to: the row every other row's difference is taken to in the
      tables (mean, 95% interval, Welch's p over seeds); None: `original`
      where it is a row. E.g. a full mixture that selected subsets should
      match.
    wait: wait for another process holding `out_dir` instead of stopping.
  """
  arguments = dict(locals())  # all of them, for the arrays trainer's rounds
  if trainer not in TRAINERS:
    raise InputError(f"experiment.trainer: {trainer!r}; valid: "
                     f"{', '.join(TRAINERS)}")
  if isinstance(lanes, bool) or not isinstance(lanes, int) or lanes < 1:
    raise InputError(f"experiment.lanes must be an integer >= 1, not "
                     f"{lanes!r}")
  if bundle and os.path.exists(bundle) and not os.path.isdir(bundle):
    # Else a NotADirectoryError traceback after the augmentation.
    raise InputError("experiment.bundle is a file, not a directory", bundle)
  if trainer == "arrays":
    arguments.update(trainer="seqio",
                     bundle=bundle or os.path.join(out_dir, BUNDLE_DIR))
    return _train_arrays_here(arguments)
  # pylint: disable=g-import-not-at-top
  import tasks
  from csl_jax.seq2seq import models
  from csl_jax.seq2seq import train as train_lib
  # pylint: enable=g-import-not-at-top
  spec = data_registry.get(dataset)
  splits = grid_lib.check_names("splits", splits)
  if spec.splits:
    for s in splits:
      spec.check_split(s)
  elif len(splits) != 1:
    raise InputError(f"{dataset} has one split: experiment.splits must be "
                     "one label for it (the table's column)")
  methods = grid_lib.check_names("methods", methods) if methods else []
  for m in methods:
    method_base.get(m)
  selectors = selection.parse(select)
  rows = grid_lib.data_rows(methods, data, selectors, select_num)
  seeds = grid_lib.check_seeds(seeds)
  if compare_to is not None and compare_to not in rows:
    raise InputError(f"experiment.compare_to: {compare_to!r} is not a row; "
                     f"the rows: {', '.join(rows)}")
  if mixing not in MIXINGS:
    raise InputError(f"experiment.mixing: {mixing!r}; valid: "
                     f"{', '.join(MIXINGS)}")
  row_mixing = {}  # method rows that do not mix 1:1
  for r in rows:
    if r in methods:
      how = getattr(method_base.get(r), "mixing", "equal") \
          if mixing == "method" else mixing
      if how != "equal":
        row_mixing[r] = how
  if regime not in grid_lib.REGIMES:
    raise InputError(f"experiment.regime: {regime!r}; valid: "
                     f"{', '.join(grid_lib.REGIMES)}")
  for label, value in (("beam_size", beam_size),
                       ("decode_batch_size", decode_batch_size),
                       ("finetune_steps", finetune_steps)):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
      raise InputError(f"experiment.{label} must be an integer >= 1, not "
                       f"{value!r}")
  eval_parts = grid_lib.check_names("eval_parts", eval_parts)
  dev_spec, checkpoint = _dev_spec(dev, dev_fraction, dev_seed, eval_parts)
  categories = categories or {}
  if not isinstance(categories, dict) or not all(
      isinstance(k, str) and isinstance(v, str)
      for k, v in categories.items()):
    raise InputError(f"experiment.categories must map a part to a file or "
                     f"'column3', e.g. {{'gen': 'column3'}}, not "
                     f"{categories!r}")
  if vocab_model_type not in tasks.vocab.MODEL_TYPES:
    raise InputError(f"experiment.vocab_model_type: {vocab_model_type!r}; "
                     f"valid: {', '.join(tasks.vocab.MODEL_TYPES)}")
  model_config = models.Seq2SeqConfig()
  train_config = train_lib.TrainConfig()
  cells = grid_lib.expand(splits, rows, seeds)
  name = name or os.path.basename(os.path.abspath(out_dir))
  meta = {"name": name, "dataset": dataset, "splits": splits,
          "dataset_options": dict(dataset_options or {}),
          "data": rows, "seeds": seeds, "regime": regime,
          "finetune_steps": finetune_steps if regime != "mixture" else None,
          "mixing": row_mixing if regime == "mixture" else None,
          "eval_parts": eval_parts, "beam_size": beam_size,
          "num_steps": train_config.num_steps,
          "batch_size": train_config.batch_size,
          "model": configs.to_json(dataclasses.asdict(model_config)),
          "train": configs.to_json(dataclasses.asdict(train_config)),
          "methods": methods, "select": selectors or None,
          "select_num": select_num, "checkpoint": checkpoint,
          # Only when set: experiment.json of earlier runs stays the same.
          **({"exclude_templates": augment_lib.exclude_templates()}
             if selectors and augment_lib.exclude_templates() else {}),
          # Bundle cells train from token arrays, here or elsewhere.
          "trainer": "arrays" if bundle else "seqio",
          "num_cells": len(cells), "compare_to": compare_to or "original"}
  needed = [m for m in methods if any(
      r == m or any(r.startswith(f"{m}_{s}_") for s in selectors)
      for r in rows)]
  with lock.run_lock(out_dir, wait):
    provenance.write(out_dir)
    atomic_write_json(os.path.join(out_dir, "experiment.json"), meta)
    _say(f"{len(cells)} cells: {len(splits)} split(s) × {len(rows)} "
         f"training data × {len(seeds)} seed(s) into {out_dir}")
    # 1. Augmentation runs (cached stage by stage).
    need_parts = {p: "experiment.eval_parts" for p in eval_parts}
    if dev_spec:
      need_parts.setdefault(dev_spec["part"], "experiment.dev")
    run_dirs, waiting, hows = _augmentation_runs(
        out_dir, dataset, spec, splits, seeds, needed, selectors, select_num,
        synthetic_per_seed, synthetic_seed_params, bundle, data_dir,
        dataset_options, wait, need_parts)
    if waiting:  # the cells need the synthetic data: a second round
      if hows:
        _say(f"{len(waiting)} augmentation job(s) wait: do what each says "
             "above, then rerun this command")
      else:
        _say(f"{len(waiting)} augmentation job(s) wait in the bundle "
             f"(pcfg_bt's reverse model): run `csl-jax run-bundle {bundle}` "
             "where the accelerator is, bring the directory back and rerun "
             "this command (it then exports the cells)")
      return {"results": os.path.join(out_dir, results_lib.RESULTS_JSONL),
              "num_cells": len(cells), "records": [], "pending": waiting}
    shared = _shared_samples(run_dirs, splits, seeds, needed,
                             synthetic_per_seed)
    if shared:
      meta["shared_synthetic"] = shared
    # 2. A word vocabulary per split, of every original part.
    vocabs = {split: _split_vocabulary(
        out_dir, dataset, split, [run_dirs[(split, s)] for s in seeds],
        eval_parts, dev_spec, needed, vocab_model_type) for split in splits}
    # 3. The cells.
    ctx = cell_lib.Context(
        out_dir, dataset, regime, finetune_steps, eval_parts, beam_size,
        decode_batch_size, model_config, train_config, row_mixing,
        os.path.abspath(bundle) if bundle else None, dev_spec)
    records, cell_dirs, pending = _run_cells(
        ctx, cells, run_dirs, vocabs, categories, data_dir, rows, meta)
    if pending:
      _say(f"{len(pending)} cell(s) wait in the bundle {bundle}: `csl-jax "
           f"run-bundle {bundle}` trains them where the accelerator is "
           "(JAX, Flax, optax, orbax; no TensorFlow needed); with the "
           "directory back here, rerun this command")
      return {"results": os.path.join(out_dir, results_lib.RESULTS_JSONL),
              "num_cells": len(cells), "records": records,
              "pending": pending}
    plots = plots_lib.write_plots(out_dir, records, splits, cell_dirs)
    written = results_lib.write_tables(out_dir, records, rows, meta, plots)
  _say(f"done: {written['markdown']}, {written['html']}")
  return {"results": os.path.join(out_dir, results_lib.RESULTS_JSONL),
          "num_cells": len(cells), "records": records, **written,
          "plots": plots}


def _augmentation_runs(out_dir, dataset, spec, splits, seeds, needed, selectors,
                       select_num, synthetic_per_seed, synthetic_seed_params,
                       bundle, data_dir, dataset_options, wait, need_parts):
  """Runs the pipeline once per split and seed (once per split without
  `synthetic_per_seed`). Returns ({(split, seed): run directory}, the
  bundle cells that wait, what the waiting jobs that are not a bundle's
  say to run)."""
  run_dirs: Dict[tuple, str] = {}
  waiting = []  # augmentation jobs exported to the bundle (or elsewhere)
  hows = []  # what the jobs that are not a bundle's say to run
  bundled = {}
  if bundle and any(m.startswith("pcfg_bt") for m in needed):
    from csl_jax.methods.pcfg_bt import method as pcfg_bt_method  # pylint: disable=g-import-not-at-top,unused-import
    bundled["pcfg_bt.PCFGBT.bundle"] = os.path.abspath(bundle)
  for split in splits:
    per_seed = synthetic_per_seed and needed
    template = None
    for seed in (seeds if per_seed else seeds[:1]):
      run_dir = os.path.join(out_dir, "augment", split,
                             f"seed_{seed}" if per_seed else "shared")
      if template and not os.path.exists(run_dir):
        # Induction and fitting do not depend on the seed: a copy keeps
        # them cached (keys are by content), only sampling reruns.
        tmp = temporary_path(run_dir)
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(template, tmp,
                        ignore=shutil.ignore_patterns(lock.LOCK_FILE))
        os.replace(tmp, run_dir)
      tick = time.time()
      try:
        with configs.bound({**dict.fromkeys(
            synthetic_seed_params if per_seed else (), seed), **bundled},
                           "experiment.synthetic_seed_params"):
          summary = augment_lib.augment(
              run_dir, dataset=dataset,
              split=split if spec.splits else None,
              data_dir=data_dir, dataset_options=dataset_options,
              methods=needed, select=selectors,
              select_num=select_num if selectors else None,
              select_seed=seed if per_seed else 0, wait=wait,
              need_parts=need_parts)
      except bundle_lib.Pending as e:
        waiting.extend(e.cells)
        if e.how:  # not a bundle's: what to run is the method's to say
          hows.append(e.how)
          _say(f"augment {split} seed {seed}: waits ({e.how})")
        else:
          _say(f"augment {split} seed {seed}: a job exported to {bundle}")
        template = template or run_dir
        run_dirs[(split, seed)] = run_dir
        continue
      cached = all(s.get("cached") for s in summary["stages"].values())
      _say(f"augment {split} seed {seed}: {run_dir} "
           f"({'cached' if cached else _minutes(time.time() - tick)})")
      template = template or run_dir
      run_dirs[(split, seed)] = run_dir
    if not per_seed:
      for s in seeds:
        run_dirs[(split, s)] = run_dirs[(split, seeds[0])]
  return run_dirs, waiting, hows


def _shared_samples(run_dirs, splits, seeds, needed, per_seed) -> List[str]:
  """The methods (`method (split)`) whose synthetic data came out the same
  for every seed although each seed was to draw its own: their seed is not
  among `experiment.synthetic_seed_params`, so the rows' spread leaves the
  data's variance out. A method that draws nothing at random says so with
  `seed_params = ()` and is not listed. Each is a warning."""
  if not per_seed or len(seeds) < 2:
    return []
  shared = []
  for split in splits:
    for m in needed:
      method = method_base.get(m)
      declared = getattr(method, "seed_params", None)
      if declared == ():
        continue
      digests = set()
      for seed in seeds:
        path = os.path.join(run_dirs[(split, seed)], m, "candidates.tsv")
        if not os.path.exists(path):
          break
        digests.add(file_sha256(path))
      else:
        if len(digests) == 1:
          shared.append(f"{m} ({split})")
          hint = (" or ".join(repr(p) for p in declared) if declared else
                  "its seed parameter (and declare it as the method's "
                  "`seed_params`)")
          logging.warning(
              "experiment: %s's synthetic data on %s is the same for every "
              "seed (%s): add %s to experiment.synthetic_seed_params for "
              "one sample per seed", m, split,
              ", ".join(map(str, seeds)), hint)
  return shared


def _split_vocabulary(out_dir, dataset, split, split_run_dirs, eval_parts,
                      dev_spec, needed, vocab_model_type) -> str:
  """The split's SentencePiece model (a cached stage) of every original
  part and the new tokens of the methods that make them; its path."""
  import tasks  # pylint: disable=g-import-not-at-top
  data_out = os.path.join(split_run_dirs[0], augment_lib.DATA_DIR)
  part_files = sorted(os.path.join(data_out, f)
                      for f in os.listdir(data_out) if f.endswith(".tsv"))
  for part in eval_parts:
    if not os.path.exists(os.path.join(data_out, f"{part}.tsv")):
      raise InputError(f"experiment.eval_parts: {dataset} {split} has "
                       f"no {part} part", data_out)
  if dev_spec and not os.path.exists(
      os.path.join(data_out, f"{dev_spec['part']}.tsv")):
    raise InputError(f"experiment.dev: {dataset} {split} has no "
                     f"{dev_spec['part']} part", data_out)
  # Methods that make new tokens (primaug, augzero): the vocabulary
  # has them too, listed in a file of its inputs (only then: the
  # vocabulary of other grids keeps its key).
  adding = [m for m in needed
            if getattr(method_base.get(m), "adds_tokens", False)]
  extra = []
  if adding:
    extra = _new_tokens(part_files, [
        path for run_dir in split_run_dirs for m, path in
        tasks.registry.find_methods(run_dir)[0].items()
        if m in adding], keep=os.path.join(
            out_dir, "vocab", f"{split}_new_tokens.json"))
  if extra:
    path = os.path.join(out_dir, "vocab", f"{split}_new_tokens.tsv")
    atomic_write_text(path, "".join(f"{t}\t{t}\n" for t in extra))
    part_files.append(path)
  stage = method_base.Stage(
      "vocab", part_files, {"model_type": vocab_model_type},
      lambda d, files=part_files: _train_vocab(d, files, vocab_model_type))
  vocab_dir = os.path.join(out_dir, "vocab", split)
  cache.run_stage(stage, vocab_dir)
  # Not the summary's path: the experiment may move or run elsewhere.
  return os.path.join(vocab_dir, "spm.model")


def _run_cells(ctx: cell_lib.Context, cells, run_dirs, vocabs, categories,
               data_dir, rows, meta):
  """Trains and scores each cell (a cached stage; exported instead with a
  bundle), writing the results after each. Returns (records, {(split,
  data, seed): the cell's model directories}, the exported cells)."""
  import tasks  # pylint: disable=g-import-not-at-top
  out_dir, dataset, eval_parts = ctx.out_dir, ctx.dataset, ctx.eval_parts
  records, cell_dirs, seconds, pending = [], {}, [], []
  run_methods = {}  # run_dir -> (methods found, their rates): per run once
  for index, cell in enumerate(cells, start=1):
    run_dir = run_dirs[(cell.split, cell.seed)]
    vocabulary = tasks.vocab.get_vocabulary("sentencepiece",
                                            vocabs[cell.split])
    task = cell_lib.task_name(dataset, cell.split)
    if run_dir not in run_methods:
      found, _ = tasks.registry.find_methods(run_dir)
      # The rows' mixing, given here: register_run would otherwise take
      # each method's own, which `experiment.mixing` may override.
      run_methods[run_dir] = found, tasks.registry.union_rates(
          found, [m for m in found if ctx.mixing.get(m) == "union"],
          os.path.join(run_dir, augment_lib.DATA_DIR, "train.tsv")) or {
              "original_rate": 1.0, "synthetic_rate": 1.0}
    found, rates = run_methods[run_dir]
    try:
      # No $CSL_JAX_INPUT_PREFIX (a T5 task prompt): cells train from
      # scratch and score against the TSVs' own inputs.
      tasks.register_run(run_dir, name=task, vocabulary=vocabulary,
                         input_prefix="", **rates)
    except ValueError as e:
      raise InputError(str(e)) from None
    synthetic = None
    if cell.data != grid_lib.ORIGINAL:
      synthetic = found.get(cell.data)
      if not synthetic:
        raise InputError(f"{run_dir} has no synthetic data of "
                         f"{cell.data!r}")
    data_part = os.path.join(run_dir, augment_lib.DATA_DIR)
    cats, cat_files = {}, []
    for part in eval_parts:
      spec_file = categories.get(part)
      cats[part] = load_categories(os.path.join(data_part, f"{part}.tsv"),
                                   data_dir, spec_file)
      if spec_file:
        cat_files.append(os.path.join(data_dir or "", f"{part}.tsv")
                         if spec_file == "column3" else
                         (spec_file if os.path.isabs(spec_file)
                          else os.path.join(data_dir or "", spec_file)))
    cell_dir = os.path.join(out_dir, "cells", cell.path)
    stage = cell_lib.stage(cell, run_dir, synthetic, vocabs[cell.split], cats,
                        cat_files, ctx)
    # Cells finished earlier cost nothing: count only those to do (this
    # one by its key: a changed setting redoes a finished cell).
    record = cache.stage_key(stage.name, stage.inputs, stage.config)
    current = cache.is_current(stage, cell_dir, record)
    left = (not current) + sum(1 for c in cells[index:] if not _finished(
        os.path.join(out_dir, "cells", c.path)))
    if current:
      eta = "cached"
    elif seconds:
      eta = (f"ETA {_minutes(left * sum(seconds) / len(seconds))} for "
             f"{left} cell(s)")
    else:
      eta = "ETA after the first cell"
    _say(f"cell {index}/{len(cells)} {dataset} {cell.describe()} -> "
         f"{cell_dir}; {eta}")
    try:
      summary = cache.run_stage(stage, cell_dir, record)
    except bundle_lib.Pending:
      pending.append(cell.path)
      _say(f"cell {index}/{len(cells)} {cell.describe()}: exported to "
           f"{ctx.bundle}")
      continue
    if summary.get("seconds") is not None:  # a cached cell's own time
      seconds.append(summary["seconds"])
    train_files = [os.path.join(data_part, "train.tsv")] + (
        [synthetic] if synthetic else [])
    record = cell_lib.record(cell, summary, _count_lines(train_files[0]),
                     _count_lines(synthetic), cell_dir, eval_parts,
                     cell_lib.seen_by_part(cell_dir, eval_parts, train_files,
                                   ctx.dev))
    _say(f"cell {index}/{len(cells)} {cell.describe()}: "
         f"{record['eval_part']} exact match {record['accuracy']:.2f}% "
         + ("(cached)" if summary.get("cached") else
            f"in {_minutes(summary['seconds'])} (train "
            f"{record['examples_per_second'] or 0:.0f} examples/s)"))
    records.append(record)
    cell_dirs[(cell.split, cell.data, cell.seed)] = [
        os.path.join(cell_dir, d) for d in ("pretrain", "train")
        if os.path.isdir(os.path.join(cell_dir, d))]
    results_lib.write_jsonl(out_dir, records)
    results_lib.write_tables(out_dir, records, rows, meta, {})
  return records, cell_dirs, pending


def _bound_to_required() -> List[str]:
  """experiment.* parameters bound to `%gin.REQUIRED` (as
  gin/experiments/base.gin binds dataset and splits): gin passes its
  marker object, which was read as the dataset "<object object at ...>"."""
  names = []
  for name in ("dataset", "splits", "data_dir"):
    try:
      value = gin.query_parameter(f"experiment.{name}")
    except ValueError:
      continue
    if isinstance(value, gin.config.ConfigurableReference):
      try:
        value = value.scoped_configurable_fn()
      except Exception:  # pylint: disable=broad-except
        continue
    if value is gin.config.REQUIRED:
      names.append(name)
  return names


def _unset_message(error: str, gin_files: Sequence[str]) -> str:
  """Gin's two-line "Required bindings for `X` not provided" as one line:
  which experiment.* bindings are unset, how to set them, and which gin
  files were read (none: name an experiment's file)."""
  found = re.search(r"not provided in config: \[([^\]]*)\]", error)
  names = re.findall(r"'(\w+)'", found.group(1)) if found else []
  # Gin names the configurable called on its second line.
  called = re.search(r"In call to configurable '([\w.]+)'", error)
  owner = called.group(1) if called else "experiment"
  unset = ", ".join(f"{owner}.{n}" for n in names) or "a binding"
  if names == ["data_dir"]:
    how = f"--gin.{owner}.data_dir=\"'DIR'\""
  else:
    how = "an experiment's gin file sets them, e.g. " \
          "--gin_file=gin/experiments/scan_addprim_jump.gin"
  files = ", ".join(gin_files) if gin_files else "none"
  return (f"gin configuration: {unset} not set ({how}; gin files read: "
          f"{files})")


def _train_arrays_here(arguments: Dict[str, Any]) -> Dict[str, Any]:
  """`experiment(**arguments)` (exporting to `arguments["bundle"]`) with the
  bundle's rounds run here: export, `run-bundle`, rerun, until nothing
  waits (pcfg_bt's reverse models make two rounds)."""
  box, lanes = arguments["bundle"], arguments["lanes"]
  for _ in range(3):
    summary = experiment(**arguments)
    if not summary.get("pending"):
      return summary
    _say(f"training {len(summary['pending'])} bundle job(s) here "
         f"({lanes} lane(s))")
    bundle_lib.run_bundle(box, lanes=lanes)
  raise RuntimeError(f"{box}: jobs still wait after 3 rounds")


def run(out_dir: str, gin_files: Sequence[str] = (),
        **overrides: Any) -> Dict[str, Any]:
  """`experiment(out_dir, **overrides)` with its gin bindings; a binding
  the config must set but does not is an InputError naming it and the gin
  files given."""
  unset = _bound_to_required()
  if unset:  # gin hands `%gin.REQUIRED` bindings over as its marker object
    raise InputError(_unset_message(
        "not provided in config: [" + ", ".join(f"'{n}'" for n in unset) +
        "]", gin_files))
  try:
    return experiment(out_dir, **overrides)
  except RuntimeError as e:
    if "Required bindings" in str(e):
      raise InputError(_unset_message(str(e), gin_files)) from None
    raise
  except TypeError as e:
    if "experiment" in str(e) and "argument" in str(e):
      raise InputError(f"gin configuration: {e}") from None
    raise
