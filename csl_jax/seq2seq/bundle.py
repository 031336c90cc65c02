"""Experiment cells trained and decoded on another machine: an accelerator
where JAX, Flax, optax and orbax are installed but not TensorFlow or SeqIO.

The experiment (with `experiment.bundle=DIR`) writes each cell it would
train as token arrays and a spec; `csl-jax run-bundle DIR` trains and
decodes them there (several cells at once in lanes, one process each);
rerun with the bundle back in place, the experiment scores the predicted
ids as it scores its own (`decode.score_predictions`) and records the
cells. Layout:

  DIR/arrays/<sha256>.npz           token arrays (`arrays.py`), by content
  DIR/cells/<cell>/cell.json        model, trainer, data, decoding
  DIR/cells/<cell>/train/           the trainer's directory (resumable)
  DIR/cells/<cell>/outputs.npz      predicted ids per part (ragged)
  DIR/cells/<cell>/outputs.json     metrics; written last: the cell is done

A cell's spec carries the experiment cell's stage key: outputs of a cell
whose data or settings changed since it was exported are never imported.
"""

import contextlib
import dataclasses
import fnmatch
import functools
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from typing import (Any, Callable, Dict, List, Mapping, Optional, Sequence,
                    Tuple)

import numpy as np

from csl_jax import errors
from csl_jax import provenance
from csl_jax.errors import InputError
from csl_jax.files import atomic_write_json, temporary_path
from csl_jax.seq2seq import arrays
from csl_jax.seq2seq import input_pipeline
from csl_jax.seq2seq import model_selection
from csl_jax.stop_request import EXIT_CODE
from csl_jax.stop_request import StopRequest

ARRAYS_DIR = "arrays"
CELLS_DIR = "cells"
CELL_FILE = "cell.json"
OUTPUTS_FILE = "outputs.json"
PREDICTIONS_FILE = "outputs.npz"
SUPERSEDED_DIR = "superseded"
_FETCH_BATCH = 8192  # examples per ragged batch of the export


Pending = errors.Pending  # a cell is exported and waits for run-bundle


def _read_json(path: str) -> Optional[Dict[str, Any]]:
  if not os.path.exists(path):
    return None
  with open(path, encoding="utf-8") as f:
    return json.load(f)


# -- The experiment's side (SeqIO) -------------------------------------------


def _save_arrays(bundle: str, data: Mapping[str, arrays.Ragged]) -> str:
  """`data` under DIR/arrays/<sha256>.npz; returns that relative path."""
  directory = os.path.join(bundle, ARRAYS_DIR)
  os.makedirs(directory, exist_ok=True)
  tmp = os.path.join(directory, f"new.{os.getpid()}.npz")
  digest = arrays.save(tmp, data)
  rel = os.path.join(ARRAYS_DIR, f"{digest}.npz")
  os.replace(tmp, os.path.join(bundle, rel))
  return rel


def _describe(obj: Any, depth: int = 0) -> Any:
  """A preprocessor by what it does: a function by its name and the values
  it closes over (`prefix_inputs`' prefix), an object by its class and
  attributes; never by address."""
  if isinstance(obj, (str, bytes, int, float, bool, type(None))):
    return repr(obj)
  if depth > 4:
    return type(obj).__qualname__
  if isinstance(obj, functools.partial):
    return ("partial", _describe(obj.func, depth + 1),
            [_describe(a, depth + 1) for a in obj.args],
            sorted((k, _describe(v, depth + 1))
                   for k, v in obj.keywords.items()))
  if hasattr(obj, "__code__"):
    return (obj.__module__, obj.__qualname__,
            [_describe(c.cell_contents, depth + 1)
             for c in obj.__closure__ or ()])
  return (type(obj).__module__, type(obj).__qualname__,
          sorted((k, _describe(v, depth + 1))
                 for k, v in getattr(obj, "__dict__", {}).items()))


def _content_key(task_name: str, split: str,
                 lengths: Mapping[str, int]) -> str:
  """What a split's token arrays depend on: the contents of its files, the
  task's preprocessors and vocabularies and the lengths. Cells whose runs
  hold the same data under other directories (every seed's `original`,
  AugZero's copies, the eval parts) share one tokenization."""
  import seqio  # pylint: disable=g-import-not-at-top
  from csl_jax.seq2seq import train as train_lib  # pylint: disable=g-import-not-at-top
  task = seqio.get_mixture_or_task(task_name)
  h = hashlib.sha256(repr((split, sorted(lengths.items()), [
      _describe(p) for p in task.preprocessors])).encode())
  for path in sorted(task.source.list_shards(split)):
    h.update(train_lib.file_sha256(path).encode())
  for name, feature in sorted(task.output_features.items()):
    vocab = feature.vocabulary
    model = getattr(vocab, "sp_model", None)
    h.update(name.encode() + repr(
        (hashlib.sha256(model).hexdigest(), vocab.extra_ids) if model
        else _describe(vocab)).encode())
  return h.hexdigest()


_SAVED: Dict[Tuple[str, str], str] = {}  # (bundle, content key) -> arrays


# (task, split) -> its (inputs, targets) texts as the task's preprocessors
# leave them before tokenizing, or None where only SeqIO can say
# (`tasks.registry.split_texts`).
Texts = Callable[[str, str], Optional[Tuple[List[str], List[str]]]]


def _saved_task_arrays(bundle: str, task_name: str, split: str,
                       lengths: Mapping[str, int],
                       texts: Optional[Texts] = None) -> str:
  """`_save_arrays` of `_task_arrays`, once per content in this process."""
  key = (os.path.abspath(bundle), _content_key(task_name, split, lengths))
  rel = _SAVED.get(key)
  if rel is None or not os.path.exists(os.path.join(bundle, rel)):
    rel = _SAVED[key] = _save_arrays(bundle, _task_arrays(
        task_name, split, lengths, texts))
  return rel


def _task_arrays(task_name: str, split: str, lengths: Mapping[str, int],
                 texts: Optional[Texts] = None) -> Dict[str, arrays.Ragged]:
  """The split's tokenized `arrays.FIELDS`, in data order (SeqIO's).

  With `texts` that know the task: its texts tokenized in one call per
  field, as SeqIO's `tokenize` and `append_eos_after_trim` would (the
  same ids, `tests/test_bundle.py`; BENCHMARKS "The export without
  tf.data"). Otherwise through SeqIO, fetched in ragged batches, not
  example by example (BENCHMARKS "Z5/Z6 on an H100": the export)."""
  pairs = texts(task_name, split) if texts else None
  if pairs is not None:
    return _tokenized(task_name, pairs, lengths)
  from csl_jax.seq2seq import decode  # pylint: disable=g-import-not-at-top
  ds = decode.split_dataset(task_name, split, lengths).map(
      lambda ex: {k: ex[k] for k in arrays.FIELDS}).ragged_batch(_FETCH_BATCH)
  flat = {k: [np.zeros(0, np.int64)] for k in arrays.FIELDS}
  row_lengths = {k: [np.zeros(0, np.int64)] for k in arrays.FIELDS}
  for batch in ds:
    for k in arrays.FIELDS:
      flat[k].append(batch[k].flat_values.numpy())
      row_lengths[k].append(batch[k].row_lengths().numpy())
  return {k: arrays.Ragged.from_flat(np.concatenate(flat[k]),
                                     np.concatenate(row_lengths[k]))
          for k in arrays.FIELDS}


def _tokenized(task_name: str, pairs: Tuple[List[str], List[str]],
               lengths: Mapping[str, int]) -> Dict[str, arrays.Ragged]:
  """`arrays.FIELDS` of texts (inputs, targets) under the task's output
  features: each text's ids cut to its length, less one for EOS where the
  feature adds one, then EOS (seqio.preprocessors.append_eos_after_trim)."""
  import seqio  # pylint: disable=g-import-not-at-top
  features = seqio.get_mixture_or_task(task_name).output_features
  out = {}
  for name, text in zip(arrays.FIELDS, pairs, strict=True):
    feature, length = features[name], lengths[name]
    vocab = feature.vocabulary
    if isinstance(vocab, seqio.SentencePieceVocabulary):
      ids = vocab.tokenizer.encode(list(text))  # one C++ call for all
    else:
      ids = [vocab.encode(t) for t in text]
    keep = length - 1 if feature.add_eos else length
    tail = [vocab.eos_id] if feature.add_eos else []
    out[name] = arrays.Ragged.from_rows([list(row[:keep]) + tail
                                         for row in ids])
  return out


def export_cell(bundle: str, cell: str, stage_key: str, task: str,
                eval_task: str, eval_parts: Sequence[str], model_config,
                train_config, beam_size: int, decode_batch_size: int,
                pretrain_task: Optional[str] = None,
                finetune_steps: Optional[int] = None,
                extra_parts: Optional[Mapping[str, Mapping[
                    str, arrays.Ragged]]] = None,
                dev: Optional[Mapping[str, Any]] = None,
                texts: Optional[Texts] = None) -> str:
  """Writes cell `cell` (a relative path) of training task or mixture
  `task`, scored on `eval_parts` of `eval_task`; returns its directory.
  With `pretrain_task`: trained on it first, then `finetune_steps` steps
  on `task` from those parameters. `extra_parts`: more parts to decode,
  given as token arrays (e.g. backtranslation's programs). `dev`: the
  experiment's model selection (`model_selection.dev_rows`), its rows
  exported as arrays: every checkpoint of the (final) training is scored
  on them and the best decodes the parts. An earlier
  export of another stage key is replaced; its outputs are moved to
  `superseded/<its key>/` (results an accelerator made are not deleted by
  a key that changed by mistake). `texts`: as `_task_arrays` takes it."""
  import seqio  # pylint: disable=g-import-not-at-top
  if train_config.curriculum != "none" or train_config.track_train_every:
    raise InputError("experiment.bundle, experiment.trainer 'arrays': "
                     "curricula and train tracking run with the SeqIO "
                     "trainer only")
  directory = os.path.join(bundle, CELLS_DIR, cell)
  spec = _read_json(os.path.join(directory, CELL_FILE))
  if spec and spec.get("stage_key") == stage_key:
    return directory
  old_spec = spec or {}
  from csl_jax.seq2seq import train as train_lib  # pylint: disable=g-import-not-at-top
  model_config = train_lib.sized_for(model_config, task)
  lengths = input_pipeline.lengths(model_config.max_input_len,
                                   model_config.max_target_len)

  def data_of(name):
    provider = seqio.get_mixture_or_task(name)
    members = ([(t.name, float(provider.get_rate(t)))
                for t in provider.tasks]
               if isinstance(provider, seqio.Mixture) else [(name, 1.0)])
    return [{"task": member, "rate": rate,
             "arrays": _saved_task_arrays(bundle, member, "train", lengths,
                                          texts)}
            for member, rate in sorted(members)]

  evals = {p: _saved_task_arrays(bundle, eval_task, p, lengths, texts)
           for p in eval_parts}
  evals.update({p: _save_arrays(bundle, data)
                for p, data in (extra_parts or {}).items()})
  spec = {"stage_key": stage_key, "task": task,
          "model": dataclasses.asdict(model_config),
          "train": dataclasses.asdict(train_config),
          "train_data": data_of(task), "eval": evals,
          "beam_size": beam_size, "decode_batch_size": decode_batch_size}
  if dev:
    part = arrays.load(os.path.join(bundle, _saved_task_arrays(
        bundle, eval_task, dev["part"], lengths, texts)))
    rows = model_selection.dev_rows(dev, len(part["inputs"]))
    spec["dev"] = _save_arrays(bundle, {k: arrays.Ragged.from_rows(
        [part[k].row(i) for i in rows]) for k in arrays.FIELDS})
  if pretrain_task:
    spec["pretrain"] = {"task": pretrain_task,
                        "train_data": data_of(pretrain_task)}
    spec["pretrain_steps"] = train_config.num_steps
    spec["train"]["num_steps"] = finetune_steps
  # Another training (or dev set: its checkpoints were not scored on it)
  # trains again, from nothing (the trainer refuses a run directory of
  # another configuration); a change of decoding alone keeps the trainings.
  retrain = any(old_spec.get(k) != spec.get(k) for k in _TRAINED_BY)
  _supersede(directory, old_spec.get("stage_key"),
             ("train", "pretrain") if retrain else ())
  atomic_write_json(os.path.join(directory, CELL_FILE), spec)
  return directory


# What a cell's trainings depend on, of its spec.
_TRAINED_BY = ("model", "train", "train_data", "dev", "pretrain",
               "pretrain_steps")


def _supersede(directory: str, old_key: Optional[str],
               trainings: Tuple[str, ...] = ()) -> None:
  """Moves a cell's outputs, and `trainings` (its run directories), to
  `superseded/<old_key>/` (not deleted: they may be an accelerator's
  results under a key that changed by mistake)."""
  aside = os.path.join(directory, SUPERSEDED_DIR, str(old_key))
  for name in (OUTPUTS_FILE, PREDICTIONS_FILE) + trainings:
    if os.path.exists(os.path.join(directory, name)):
      os.makedirs(aside, exist_ok=True)
      target = os.path.join(aside, name)
      if os.path.isdir(target):  # superseded under this key before
        shutil.rmtree(target)
      os.replace(os.path.join(directory, name), target)


def outputs(bundle: str, cell: str, stage_key: str
            ) -> Optional[Dict[str, Any]]:
  """The finished cell's metrics and predicted ids ({"parts": {part:
  {"ids": rows, "perplexity": p}}, ...}); None if it is not finished or
  was exported with another stage key."""
  directory = os.path.join(bundle, CELLS_DIR, cell)
  spec = _read_json(os.path.join(directory, CELL_FILE))
  done = _read_json(os.path.join(directory, OUTPUTS_FILE))
  # The outputs' own key too: a pack made before the cell was exported
  # again (another key) may be unpacked beside the new spec.
  if not spec or not done or spec.get("stage_key") != stage_key or \
      done.get("stage_key", stage_key) != stage_key:
    return None
  path = os.path.join(directory, PREDICTIONS_FILE)
  predicted = arrays.load(path)
  for part, record in done["parts"].items():
    ragged = predicted.get(part)
    # A file from another decoding (or cut short): never scored as these.
    if ragged is None or len(ragged) != record.get("num_examples",
                                                   len(ragged)):
      raise InputError(
          f"{'no' if ragged is None else len(ragged)} predictions of part "
          f"{part} for the {record.get('num_examples', '?')} examples "
          f"{OUTPUTS_FILE} names: the cell's outputs do not belong together "
          f"(remove both and run `csl-jax run-bundle` again)", path)
    record["ids"] = [ragged.row(i).tolist() for i in range(len(ragged))]
  return done


# -- The accelerator's side (NumPy and JAX only) -----------------------------


def _cells(bundle: str, finished: Optional[bool] = None) -> List[str]:
  """Cells (relative paths) with a spec: with outputs, without, or all."""
  root = os.path.join(bundle, CELLS_DIR)
  found = []
  for dirpath, dirs, files in os.walk(root):
    if CELL_FILE in files:
      dirs.clear()  # a cell holds no cells: not its checkpoints either
      if finished is None or (OUTPUTS_FILE in files) == finished:
        found.append(os.path.relpath(dirpath, root))
  return found


def pending_cells(bundle: str) -> List[str]:
  """Cells (relative paths) with a spec and no outputs, the first seed's
  cells first (`<split>/<data>/seed_<s>`): a run cut short leaves whole
  seeds done rather than whole rows."""
  return sorted(_cells(bundle, finished=False),
                key=lambda c: (os.path.basename(c), c))


def run_cell(bundle: str, cell: str, progress: bool = False
             ) -> Dict[str, Any]:
  """Trains (resuming) and decodes one cell; writes its outputs."""
  # pylint: disable=g-import-not-at-top
  import jax
  from csl_jax.seq2seq import decode
  from csl_jax.seq2seq import models
  from csl_jax.seq2seq import train as train_lib
  from csl_jax.seq2seq.config import TrainConfig
  from csl_jax.seq2seq.config import train_key
  # pylint: enable=g-import-not-at-top
  directory = os.path.join(bundle, CELLS_DIR, cell)
  spec = _read_json(os.path.join(directory, CELL_FILE))
  if spec is None:
    raise InputError("no cell.json", directory)
  model_config = models.Seq2SeqConfig(**spec["model"])
  lengths = input_pipeline.lengths(model_config.max_input_len,
                                   model_config.max_target_len)

  def train(out, name, train_data, config, init_from=None, dev=None):
    tasks = [arrays.load(os.path.join(bundle, t["arrays"]))
             for t in train_data]
    rates = [t["rate"] for t in train_data]
    key = {"model": dataclasses.asdict(model_config), "task": name,
           "train": train_key(config),
           "data": {t["task"]: {"rate": t["rate"], "train": [t["arrays"]]}
                    for t in train_data}}
    return train_lib.fit(
        os.path.join(directory, out), model_config, config, key,
        lambda first: arrays.batches(tasks, rates, lengths,
                                     config.batch_size, config.bucket_width,
                                     config.seed, first),
        progress=progress, init_from=init_from, desc=f"{cell} {out}",
        select=train_lib.selector(os.path.join(directory, out), model_config,
                                  dev, config))

  start = time.time()
  config = TrainConfig(**spec["train"])
  pre = spec.get("pretrain")
  pretrained = None
  if pre:  # the cell's config, its own step count: the fine-tuning's
    pretrained = train("pretrain", pre["task"], pre["train_data"],
                       TrainConfig(**{**spec["train"],
                                      "num_steps": spec["pretrain_steps"]}))
  dev = None
  if spec.get("dev"):
    data = arrays.load(os.path.join(bundle, spec["dev"]))
    dev = tuple([data[k].row(i) for i in range(len(data[k]))]
                for k in ("inputs", "targets"))
  metrics = train("train", spec["task"], spec["train_data"], config,
                  os.path.join(directory, "pretrain") if pre else None, dev)
  train_seconds = time.time() - start
  model, params = train_lib.load_params(os.path.join(directory, "train"),
                                        selected=dev is not None)
  start = time.time()
  batch_size = spec["decode_batch_size"]
  parts, predicted = {}, {}
  for part, rel in spec["eval"].items():
    data = arrays.load(os.path.join(bundle, rel))
    n = len(data["inputs"])
    inputs = [data["inputs"].row(i)[:lengths["inputs"]] for i in range(n)]
    predicted[part] = arrays.Ragged.from_rows(decode.predict_ids(
        model, params, inputs, lengths["inputs"], lengths["targets"],
        batch_size, spec["beam_size"], progress=progress,
        desc=f"{cell} decode {part}"))
    parts[part] = {"num_examples": n, "perplexity": train_lib.perplexity(
        model, params, data, lengths, batch_size)}
  arrays.save(os.path.join(directory, PREDICTIONS_FILE), predicted)
  device = jax.devices()[0]
  done = {"stage_key": spec["stage_key"], "train": metrics,
          "pretrain": pretrained, "train_seconds": train_seconds,
          "decode_seconds": time.time() - start, "parts": parts,
          "device": str(device.device_kind),
          # The machine's own: its jaxlib (CUDA, TPU) is not the exporter's,
          # nor its CUDA and cuDNN (the platform's version says them).
          "provenance": dict(provenance.record(), platform_version=str(
              device.client.platform_version))}
  atomic_write_json(os.path.join(directory, OUTPUTS_FILE), done)
  return done


def pack_outputs(bundle: str, path: str) -> List[str]:
  """Writes `path`, a .tar.gz of what the experiment reads back from the
  finished cells (outputs, their learning curves and dev scores), by paths
  relative to the bundle: `tar xzf FILE -C BUNDLE` where the experiment
  runs. Returns the packed paths."""
  import tarfile  # pylint: disable=g-import-not-at-top
  root = os.path.join(bundle, CELLS_DIR)
  if not os.path.isdir(root):
    raise InputError("not a bundle (no cells/)", bundle)
  packed = []
  for cell in _cells(bundle, finished=True):
    directory = os.path.join(root, cell)
    for dirpath, _, names in os.walk(directory):
      rel = os.path.relpath(dirpath, directory)
      for name in names:
        if (rel == "." and name in (OUTPUTS_FILE, PREDICTIONS_FILE)) or \
            "tensorboard" in rel.split(os.sep) or \
            name == model_selection.HISTORY_FILE:
          packed.append(os.path.relpath(os.path.join(dirpath, name), bundle))
  packed.sort()
  tmp = temporary_path(path)
  with tarfile.open(tmp, "w:gz") as tar:
    for rel in packed:
      tar.add(os.path.join(bundle, rel), arcname=rel)
  os.replace(tmp, path)
  return packed


def stage(bundle: str, into: str) -> str:
  """A copy of `bundle` under `into` that later calls reuse: the machine
  keeps `into` (e.g. /tmp) between calls while it stays up, but not the
  working tree the bundle came with, so a run stopped by its time limit
  resumes from the copy's checkpoints. The copy is named by the digest of
  the cells' specs: a bundle exported again with other cells gets a new
  one. Returns the copy's path."""
  root = os.path.join(bundle, CELLS_DIR)
  if not os.path.isdir(root):
    raise InputError("not a bundle (no cells/)", bundle)
  h = hashlib.sha256()
  for cell in sorted(_cells(bundle)):
    with open(os.path.join(root, cell, CELL_FILE), "rb") as f:
      h.update(f"{cell}\0".encode() + f.read() + b"\0")
  name = os.path.basename(os.path.normpath(os.path.abspath(bundle)))
  target = os.path.join(into, f"{name}-{h.hexdigest()[:16]}")
  if not os.path.isdir(target):
    tmp = temporary_path(target)
    try:
      os.makedirs(into, exist_ok=True)
      shutil.rmtree(tmp, ignore_errors=True)
      shutil.copytree(bundle, tmp, symlinks=True)
      os.replace(tmp, target)  # whole or absent: a copy cut short is redone
    except OSError as e:
      raise InputError(f"cannot copy the bundle there ({e.strerror or e})",
                       into) from None
  return target


def lane_environment(lanes: int, environ: Mapping[str, str]
                     ) -> Dict[str, str]:
  """The environment of each of `lanes` processes: 1/lanes of the
  accelerator's memory, a log line per 10% of a cell's steps (no
  interleaved bars), and XLA's GPU autotuning off unless XLA_FLAGS sets
  it: lanes compiling at once each time candidate kernels on the one GPU
  and stall (BENCHMARKS "Z5/Z6 on an H100")."""
  flags = environ.get("XLA_FLAGS", "")
  if "xla_gpu_autotune_level" not in flags:
    flags = f"{flags} --xla_gpu_autotune_level=0".strip()
  return dict(environ, XLA_PYTHON_CLIENT_MEM_FRACTION=str(
      round(0.9 / lanes, 3)), CSL_JAX_PROGRESS="0", XLA_FLAGS=flags)


# A lane that fails is started again this many times (after a pause):
# lanes opening one GPU at once under MPS can fail to find it (BENCHMARKS
# "Z5 on an H100, session 28"), and a second try costs seconds.
LANE_RETRIES = 2
RETRY_PAUSE_SECONDS = 5.0
PACK_CHECK_SECONDS = 5.0


class LanesFailed(RuntimeError):
  """Lanes of run_bundle failed for good (each printed its error)."""


def _open_device(lane: int) -> None:
  """Opens the device lane `lane` trains on, saying which in one line;
  a lane that cannot open it (JAX_PLATFORMS names a platform it does not
  find) says so in one line and exits 1, not a traceback per try."""
  import jax  # pylint: disable=g-import-not-at-top
  try:
    device = jax.devices()[0]
  except Exception as e:  # pylint: disable=broad-except
    message = (str(e).strip().splitlines() or [""])[0]
    print(f"[run-bundle] lane {lane} cannot open the device (JAX_PLATFORMS="
          f"{os.environ.get('JAX_PLATFORMS', '')}): "
          f"{type(e).__name__}{': ' + message if message else ''}",
          flush=True)
    raise SystemExit(1) from None
  print(f"[run-bundle] lane {lane} on {device.platform} "
        f"({device.device_kind})", flush=True)


@contextlib.contextmanager
def _stopping(running: Dict[int, subprocess.Popen]):
  """Should this process fail, its lanes are stopped (SIGTERM: they
  checkpoint) and waited for, not left training the cells orphaned."""
  try:
    yield
  except BaseException:
    for proc in running.values():
      if proc.poll() is None:
        proc.terminate()
    for proc in running.values():
      proc.wait()
    raise


def _run_lanes(bundle: str, lanes: int, only: Optional[str],
               assignment: List[List[str]], pack: Optional[str] = None
               ) -> List[int]:
  """Runs lane i on `assignment[i]`, each in its own process; starts a
  failed lane again while it has retries and pending cells; with `pack`,
  rewrites that pack whenever cells have finished. Returns the lanes that
  failed for good. A time limit's SIGTERM reaches the lanes too
  (one process group): they checkpoint and exit, and this process waits
  for them, so what runs next (e.g. --pack_only) sees their checkpoints
  complete."""
  env = lane_environment(lanes, os.environ)

  def start(i):
    return subprocess.Popen(
        [sys.executable, "-m", "csl_jax.cli.main", "run-bundle", bundle,
         "--lanes", str(lanes), "--lane", str(i)]
        + ([] if only is None else ["--only", only])
        + [a for c in assignment[i] for a in ("--cell", c)], env=env)

  left, checked = len(pending_cells(bundle)), time.time()
  running = {i: start(i) for i in range(len(assignment))}
  retries = {i: LANE_RETRIES for i in running}
  failed = []
  with StopRequest() as stop, _stopping(running):
    while running:
      if pack and time.time() - checked > PACK_CHECK_SECONDS:
        checked = time.time()
        now = len(pending_cells(bundle))
        if now < left:
          left = now
          pack_outputs(bundle, pack)
      for i, proc in list(running.items()):
        code = proc.poll()
        if code is None:
          continue
        del running[i]
        if code == 0:
          continue
        own = set(pending_cells(bundle)) & set(assignment[i])
        stopped = code in (EXIT_CODE, -signal.SIGTERM) or stop.requested
        if stopped or not retries[i] or not own:
          failed.append(i)
          continue
        retries[i] -= 1
        print(f"[run-bundle] lane {i} failed (exit {code}); starting it "
              f"again for its {len(own)} cell(s)", flush=True)
        time.sleep(RETRY_PAUSE_SECONDS)
        if stop.requested:
          failed.append(i)
        else:
          running[i] = start(i)
      time.sleep(0.2)
  if stop.requested:
    print(f"[run-bundle] stopped by SIGTERM: {len(pending_cells(bundle))}"
          " cell(s) left in all; the same command resumes", flush=True)
    raise SystemExit(EXIT_CODE)
  return failed


def run_bundle(bundle: str, lanes: int = 1, lane: Optional[int] = None,
               progress: bool = True, only: Optional[str] = None,
               assigned: Optional[Sequence[str]] = None,
               pack: Optional[str] = None) -> Dict[str, Any]:
  """Every pending cell of `bundle` (those matching the glob `only`, e.g.
  "*/primaug_20/*", if given). With `lanes` > 1, that many processes
  share the accelerator (small models leave most of it idle), lane i
  taking pending cells i, i + lanes, ... (named to it as `assigned`, so a
  lane started again takes the same ones); each gets 1/lanes of its
  memory. A lane that fails is started again, LANE_RETRIES times at most,
  for its cells still pending. With `pack`, the pack (`pack_outputs`) is
  rewritten as cells finish: a run killed from outside leaves the cells
  done by then packed."""
  if not os.path.isdir(os.path.join(bundle, CELLS_DIR)):
    raise InputError("not a bundle (no cells/)", bundle)
  if only is not None and not any(fnmatch.fnmatchcase(c, only)
                                  for c in _cells(bundle)):
    raise InputError(f"--only {only!r} matches no cell, pending or "
                     "finished", bundle)

  def chosen():
    return [c for c in pending_cells(bundle)
            if only is None or fnmatch.fnmatchcase(c, only)]

  cells = chosen()
  if lane is not None:
    cells = (cells[lane::lanes] if assigned is None
             else [c for c in assigned if c in cells])
    if cells:
      _open_device(lane)
  elif lanes > 1 and cells:
    # A single cell too: in a lane it opens the device, says so and is
    # started again if that fails.
    assignment = [cells[i::lanes] for i in range(min(lanes, len(cells)))]
    failed = _run_lanes(bundle, lanes, only, assignment, pack)
    if failed:
      raise LanesFailed(f"{len(failed)} lane(s) failed (their errors are "
                        "above); the same command resumes")
    return {"cells": cells, "left": chosen()}
  elif cells:
    # One lane in this process says which device it trains on before its
    # first compile: a hang opening the GPU then shows where it is.
    _open_device(0)
  for i, cell in enumerate(cells, start=1):
    tick = time.time()
    if lane is not None:
      print(f"[run-bundle] lane {lane}: {cell} ({i}/{len(cells)})",
            flush=True)
    done = run_cell(bundle, cell, progress=progress)
    if pack:
      pack_outputs(bundle, pack)
    print(f"[run-bundle] {cell} ({i}/{len(cells)}"
          f"{'' if lane is None else f', lane {lane}'}): "
          f"{time.time() - tick:.0f} s, train "
          f"{done['train'].get('examples_per_second') or 0:.0f} examples/s",
          flush=True)
  return {"cells": cells, "left": chosen()}
