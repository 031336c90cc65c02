"""Trains the encoder-decoder on a SeqIO task or mixture (`train`), or on
token arrays (`arrays.py`: `fit` alone, no TensorFlow nor SeqIO imported).

Data parallel over `jax.local_devices()`: a 1-D mesh, batch sharded on its
"data" axis, parameters replicated (one CPU device works unchanged). Orbax
checkpoints in OUT/checkpoints (resumed from), TensorBoard scalars in
OUT/tensorboard, the run's key in OUT/config.json.

The key is everything that determines the trained parameters: the model
config, the task name, the training config's `config.train_key`, and
the training data (`data_key`: sha256 of each training file of the task, or
of each task of a mixture, with its mixing rate). Training into a directory
whose key differs is refused (InputError): its checkpoints are another run's.
"""

import dataclasses
import functools
import hashlib
import json
import os
import time
from typing import Any, Callable, Dict, Iterator, Optional, Sequence, Tuple

from absl import logging
from flax.training import train_state
import jax
import jax.numpy as jnp
import numpy as np
import optax
import orbax.checkpoint as ocp

from csl_jax import progress as progress_lib
from csl_jax.errors import InputError
from csl_jax.files import (atomic_write_json, file_sha256, read_json,
                            temporary_path)
from csl_jax.seq2seq import arrays
from csl_jax.seq2seq import input_pipeline
from csl_jax.seq2seq import loss_record
from csl_jax.seq2seq import curriculum as curriculum_lib
from csl_jax.seq2seq import model_selection
from csl_jax.seq2seq import models
from csl_jax.seq2seq.config import TrainConfig  # pylint: disable=unused-import
from csl_jax.seq2seq.config import train_key
from csl_jax.stop_request import StopRequest
from csl_jax.summaries import TensorBoardWriter

CONFIG_FILE = "config.json"
DATA_STATE_DIR = "data_state"  # the data position at each checkpoint
LOSS_RECORD_DIR = "loss_record"  # the run's losses and rate at each one
CURRICULUM_FILE = "curriculum.json"  # how a curriculum's pool grew
# Steps dispatched ahead of the device at most. Enough to keep an
# accelerator busy; few enough that a stop request (SIGTERM), which must
# wait for every dispatched step before its checkpoint, is honoured within
# seconds on a CPU instead of a whole `log_every` of queued steps (BENCHMARKS
# "Issue 15 → SIGTERM within the grace").
MAX_STEPS_IN_FLIGHT = 8
# TensorBoard's group of the model selection's dev scores (`select`).
DEV_SCALARS = "dev"


def make_mesh():
  return jax.sharding.Mesh(np.array(jax.local_devices()), ("data",))


def shardings(mesh):
  P = jax.sharding.PartitionSpec  # pylint: disable=invalid-name
  return (jax.sharding.NamedSharding(mesh, P("data")),
          jax.sharding.NamedSharding(mesh, P()))


def make_optimizer(config: TrainConfig):
  return _optimizer(config.weight_decay, config.adam_b2, config.grad_clip)


# One object per setting: the jitted steps are keyed on the optimizer (a
# static field of the state), so a fresh one would recompile them for every
# run of a process (seeds, resumed runs, an experiment's grid).
@functools.lru_cache(maxsize=None)
def _optimizer(weight_decay, b2=0.999, grad_clip=0.0):
  # AdamW at rate 1: `train_step` scales the update by the step's rate (an
  # argument), so runs of other schedules (lengths, warm-ups, peak rates:
  # pretraining then fine-tuning, a reverse model) share one compiled step.
  # The state keeps the schedule's step count, as `adamw(schedule)` has it.
  # Weight decay 0 is Adam: it adds 0 * params, which changes no bit.
  adamw = optax.adamw(_unit_rate, b2=b2, weight_decay=weight_decay)
  if not grad_clip:
    return adamw
  return _clipped(adamw, grad_clip)


def _clipped(inner, max_norm: float) -> optax.GradientTransformation:
  """`optax.chain(optax.clip_by_global_norm(max_norm), inner)`'s updates,
  with `inner`'s state alone (clipping keeps none): the checkpoints of
  clipped and unclipped runs hold one structure, the one `load_params`
  restores them into (the default optimizer's)."""
  clip = optax.clip_by_global_norm(max_norm)

  def update(grads, state, params=None):
    grads, _ = clip.update(grads, optax.EmptyState())
    return inner.update(grads, state, params)

  return optax.GradientTransformation(inner.init, update)


def _unit_rate(count):
  del count
  return 1.0


def learning_rates(config: TrainConfig,
                   model_dim: Optional[int] = None) -> np.ndarray:
  """[num_steps] float32: the rate of each step. Schedule "cosine":
  warm-up then cosine decay to a tenth (optax's schedule, evaluated as
  `adamw(schedule)` would). "noam": `learning_rate` * model_dim^-0.5 *
  min(t^-0.5, t * warmup_steps^-1.5) at step t = index + 1 (Noam's steps
  count from 1: its first rate is not 0), computed in float64;
  `model_dim` is the model's d_model (`fit` passes it)."""
  if config.schedule == "noam":
    if not model_dim:
      raise ValueError("the noam schedule needs the model dimension")
    t = np.arange(1, config.num_steps + 1, dtype=np.float64)
    warm = t * float(config.warmup_steps) ** -1.5 if config.warmup_steps \
        else np.inf
    return (config.learning_rate * float(model_dim) ** -0.5 *
            np.minimum(t ** -0.5, warm)).astype(np.float32)
  schedule = optax.warmup_cosine_decay_schedule(
      0.0, config.learning_rate, max(config.warmup_steps, 1),
      max(config.num_steps, config.warmup_steps + 1),
      end_value=config.learning_rate * 0.1)
  return np.asarray(jax.jit(jax.vmap(schedule))(
      jnp.arange(config.num_steps, dtype=jnp.int32)), np.float32)


def create_state(model_config, train_config, rng):
  model, params = models.init_params(model_config, rng)
  return train_state.TrainState.create(
      apply_fn=model.apply, params=params, tx=make_optimizer(train_config))


def loss_fn(logits, targets, weights):
  """Token-weighted mean cross-entropy, and the weighted token accuracy."""
  losses = optax.softmax_cross_entropy_with_integer_labels(
      logits.astype(jnp.float32), targets)
  total = jnp.maximum(weights.sum(), 1.0)
  accuracy = ((jnp.argmax(logits, -1) == targets) * weights).sum() / total
  return (losses * weights).sum() / total, accuracy


@jax.jit
def train_step(state, batch, rng, learning_rate):
  """One AdamW step at `learning_rate` (a float32 scalar, `learning_rates`
  of the step): updates are exactly `adamw(schedule)`'s (after
  `clip_by_global_norm` where the config clips)."""
  def compute(params):
    logits = state.apply_fn(
        {"params": params}, batch["encoder_input_tokens"],
        batch["decoder_input_tokens"], deterministic=False,
        rngs={"dropout": jax.random.fold_in(rng, state.step)})
    return loss_fn(logits, batch["decoder_target_tokens"],
                   batch["decoder_loss_weights"])

  (loss, accuracy), grads = jax.value_and_grad(compute, has_aux=True)(
      state.params)
  return apply_gradients(state, grads, learning_rate), {
      "loss": loss, "accuracy": accuracy}


def apply_gradients(state, grads, learning_rate):
  """`state` after the optimizer's step on `grads` at `learning_rate`
  (`train_step`'s update; `train_reference.adam_update` is its twin)."""
  updates, opt_state = state.tx.update(grads, state.opt_state, state.params)
  # The optimizer negated the update at rate 1; the sign flip is exact, so
  # this is the product `adamw(schedule)` forms.
  updates = jax.tree_util.tree_map(
      lambda u: learning_rate.astype(u.dtype) * u, updates)
  return state.replace(step=state.step + 1,
                       params=optax.apply_updates(state.params, updates),
                       opt_state=opt_state)


@jax.jit
def eval_step(state, batch):
  logits = state.apply_fn({"params": state.params},
                          batch["encoder_input_tokens"],
                          batch["decoder_input_tokens"])
  weights = batch["decoder_loss_weights"]
  loss, accuracy = loss_fn(logits, batch["decoder_target_tokens"], weights)
  return {"loss": loss, "accuracy": accuracy, "weight": weights.sum()}


def evaluate_loss(state, task, split, feature_lengths, batch_size,
                  data_sharding, bucket_width: int = 0) -> Dict[str, float]:
  ds = input_pipeline.get_dataset(task, split, feature_lengths, batch_size,
                                  bucket_width=bucket_width)
  return mean_loss(state, input_pipeline.numpy_batches(ds, bucket_width),
                   data_sharding, 0 if bucket_width else batch_size)


def mean_loss(state, batches, data_sharding, pad_to: int = 0
              ) -> Dict[str, float]:
  """Token-weighted loss and accuracy over numpy batches; with `pad_to`,
  each batch padded to that many rows (one compiled eval_step)."""
  total = {"loss": 0.0, "accuracy": 0.0, "weight": 0.0}
  for batch in batches:
    if pad_to:
      batch = input_pipeline.pad_batch(batch, pad_to)
    batch = input_pipeline.pad_batch(batch, jax.local_device_count())
    out = jax.device_get(eval_step(state, jax.device_put(batch,
                                                         data_sharding)))
    for key in ("loss", "accuracy"):
      total[key] += float(out[key]) * float(out["weight"])
    total["weight"] += float(out["weight"])
  w = max(total["weight"], 1.0)
  return {"loss": total["loss"] / w, "accuracy": total["accuracy"] / w}


def perplexity(model, params, data, feature_lengths: Dict[str, int],
               batch_size: int) -> float:
  """exp(mean cross-entropy per target token, EOS included) of the gold
  outputs `data["targets"]` given `data["inputs"]` (`arrays.Ragged` rows of
  ids as a split's examples hold them, in data order), teacher forced: Yao
  & Koller's Table 6, in the task vocabulary's tokens (bytes by default,
  so not comparable with their T5 SentencePiece figures, only across
  rows). The batches are `evaluate_loss`'s of the same split, built
  without tf.data (the decoded examples are read once)."""
  data_sharding, replicated = shardings(make_mesh())
  state = jax.device_put(train_state.TrainState.create(
      apply_fn=model.apply, params=params, tx=optax.identity()), replicated)
  n = len(data["targets"])
  batches = (arrays.features(data, np.arange(a, min(n, a + batch_size)),
                             feature_lengths)
             for a in range(0, n, batch_size))
  return float(np.exp(mean_loss(state, batches, data_sharding,
                                batch_size)["loss"]))


def data_key(task: str) -> Dict[str, Any]:
  """{task: {"rate", "train", "features", "preprocessing"}} for the task or
  each task of the mixture: "train" lists the sha256 of each file of the
  train split, in path order (a shard that is not a readable file, e.g. a
  TFDS one, by its name), so moving the data keeps the key and editing it
  changes it; "features" the vocabularies (a SentencePiece model by its
  bytes' sha256) and "preprocessing" the preprocessors with their settings
  (e.g. an input prefix): the same files made into other token ids are
  another run's data."""
  import seqio  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  provider = seqio.get_mixture_or_task(task)
  if isinstance(provider, seqio.Mixture):
    tasks = [(t, float(provider.get_rate(t))) for t in provider.tasks]
  else:
    tasks = [(provider, 1.0)]
  key = {}
  for t, rate in sorted(tasks, key=lambda x: x[0].name):
    shards = sorted(t.source.list_shards("train"))
    key[t.name] = {"rate": rate, "train": [
        file_sha256(p) if tf.io.gfile.exists(p) and not tf.io.gfile.isdir(p)
        else p for p in shards],
                   "features": {name: _vocabulary_key(f.vocabulary)
                                for name, f in
                                sorted(t.output_features.items())},
                   "preprocessing": [_callable_key(p)
                                     for p in t.preprocessors]}
  return key


def check_vocabulary(record: Dict[str, Any], task: str) -> None:
  """A model decodes `task` only with a vocabulary it was trained with
  (else its ids mean other tokens: predictions of "⁇", or NaN logits past
  its embedding). Runs saved before the vocabularies were recorded pass.

  Raises:
    InputError: the task's vocabularies are none of the training data's.
  """
  import seqio  # pylint: disable=g-import-not-at-top
  recorded = [d["features"] for d in (record.get("data") or {}).values()
              if isinstance(d, dict) and d.get("features")]
  if not recorded:
    return
  now = {name: _vocabulary_key(f.vocabulary) for name, f in sorted(
      seqio.get_mixture_or_task(task).output_features.items())}
  if now not in recorded:
    raise InputError(f"{task}'s vocabulary is not the one the model was "
                     f"trained with ({now} vs {recorded[0]}): set "
                     f"$CSL_JAX_VOCAB / $CSL_JAX_SPM / $CSL_JAX_EXTRA_IDS "
                     f"as in training")


# Recorded from this version on: runs saved before it resume unchecked on
# them (`_check_resumable`).
_DATA_FIELDS_SINCE = ("features", "preprocessing")


def _vocabulary_key(vocabulary) -> Dict[str, Any]:
  key = {"type": type(vocabulary).__name__,
         "size": int(vocabulary.vocab_size),
         "extra_ids": int(getattr(vocabulary, "extra_ids", 0) or 0)}
  model = getattr(vocabulary, "sp_model", None)
  if model is not None:
    key["model_sha256"] = hashlib.sha256(model).hexdigest()
  return key


def _callable_key(fn, depth: int = 0) -> Any:
  """A preprocessor as its name and settings: a partial's arguments and a
  closure's values (strings, numbers; functions by the same rule), e.g.
  `prefix_inputs("semanticparse: ")`; other objects by their type."""
  def value(v):
    if v is None or isinstance(v, (str, int, float, bool)):
      return v
    if callable(v) and depth < 4:
      return _callable_key(v, depth + 1)
    return type(v).__name__
  if isinstance(fn, functools.partial):
    return {"partial": value(fn.func), "args": [value(a) for a in fn.args],
            "keywords": {k: value(v) for k, v in sorted(fn.keywords.items())}}
  name = getattr(fn, "__qualname__", None)
  if name is None:  # e.g. seqio.CacheDatasetPlaceholder()
    return type(fn).__name__
  key = {"name": f"{getattr(fn, '__module__', '')}.{name}"}
  closure = [c.cell_contents for c in getattr(fn, "__closure__", None) or ()
             if _filled(c)]
  if closure:
    key["closure"] = [value(v) for v in closure]
  return key


def _filled(cell) -> bool:
  try:
    cell.cell_contents  # pylint: disable=pointless-statement
    return True
  except ValueError:  # an empty cell
    return False


def run_key(model_config, config: "TrainConfig", task: str
            ) -> Dict[str, Any]:
  """What OUT/config.json records and a resumed run must match."""
  return {"model": dataclasses.asdict(model_config), "task": task,
          "train": train_key(config),
          "data": data_key(task)}


def _read_config(run_dir: str) -> Dict[str, Any]:
  """RUN/config.json as a dict; a torn or edited file is an InputError
  naming it, not a JSONDecodeError traceback."""
  path = os.path.join(run_dir, CONFIG_FILE)
  try:
    record = read_json(path)
  except ValueError as e:
    raise InputError(f"not valid JSON ({e}): a torn or edited file? (it is "
                     "written by `csl-jax train`)", path) from None
  if not isinstance(record, dict) or not isinstance(record.get("model"),
                                                    dict):
    raise InputError("not a `csl-jax train` config.json (no \"model\" "
                     "object)", path)
  return record


def _check_resumable(out_dir: str, key: Dict[str, Any]) -> None:
  """Raises InputError if OUT/config.json records another run's key."""
  saved = _read_config(out_dir)
  names = {"model": "model configuration", "task": "task",
           "train": "training configuration", "data": "training data",
           "init": "initial parameters"}
  # Through JSON, as saved (tuples become lists).
  key = json.loads(json.dumps(key))
  for task, was in (saved.get("data") or {}).items():
    now = (key.get("data") or {}).get(task)
    if isinstance(was, dict) and isinstance(now, dict):
      for field in _DATA_FIELDS_SINCE:
        if field not in was:
          now.pop(field, None)
  for part, name in names.items():
    was, now = saved.get(part), key.get(part)
    if was == now:
      continue
    detail = f"{was}, now {now}"
    if isinstance(was, dict) and isinstance(now, dict):
      # Only what differs: the whole records (`--steps 30` after 20) hid
      # the one field among a dozen, in another order.
      detail = ", ".join(
          f"{f}: {was.get(f, '(none)')}, now {now.get(f, '(none)')}"
          for f in sorted(set(was) | set(now)) if was.get(f) != now.get(f))
    if part == "data" and isinstance(was, dict):  # Hashes say little.
      detail = "changed: " + ", ".join(
          t + ("" if not isinstance(was.get(t), dict) or
               not isinstance(now.get(t), dict) else " " + "/".join(
                   f for f in sorted(set(was[t]) | set(now[t]))
                   if was[t].get(f) != now[t].get(f)))
          for t in sorted(set(was) | set(now)) if was.get(t) != now.get(t))
    raise InputError(f"{out_dir} holds a run with another {name} ({detail});"
                     " resume with the same one or use a new output "
                     "directory")


def save_config(out_dir: str, model_config, task: str,
                extra: Optional[Dict[str, Any]] = None,
                key: Optional[Dict[str, Any]] = None) -> None:
  """Writes OUT/config.json: `key` (see `run_key`; at least the model
  config and task) and `extra`."""
  record = dict(key or {"model": dataclasses.asdict(model_config),
                        "task": task})
  record.update(extra or {})
  atomic_write_json(os.path.join(out_dir, CONFIG_FILE), record)


def load_config(model_dir: str):
  record = _read_config(model_dir)
  try:
    return models.Seq2SeqConfig(**record["model"]), record
  except TypeError as e:  # a field of no Seq2SeqConfig
    raise InputError(f"its \"model\" is not a Seq2SeqConfig "
                     f"({str(e).splitlines()[0]})",
                     os.path.join(model_dir, CONFIG_FILE)) from None


def checkpoint_manager(out_dir: str, writer: bool = False
                       ) -> ocp.CheckpointManager:
  """The run's checkpoints. The `writer` (training, the one process on the
  run) removes the temporary directory of a save that a kill cut short;
  a reader must not, lest it remove a save in progress."""
  return ocp.CheckpointManager(
      os.path.abspath(os.path.join(out_dir, "checkpoints")),
      options=ocp.CheckpointManagerOptions(
          max_to_keep=2, create=True, cleanup_tmp_directories=writer))


def _pytree(state):
  return {"step": state.step, "params": state.params,
          "opt_state": state.opt_state}


def restore(manager: ocp.CheckpointManager, state, step=None):
  """`state` with the latest (or `step`) checkpoint's values; or `state`."""
  step = manager.latest_step() if step is None else step
  if step is None:
    return state
  try:
    restored = manager.restore(step, args=ocp.args.StandardRestore(
        _pytree(state)))
  except (ValueError, OSError) as e:  # tensorstore's DATA_LOSS, a cut file
    first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
    where = os.path.join(os.fspath(manager.directory), str(step))
    error = InputError(
        f"checkpoint {step} cannot be read ({first}); remove it to resume "
        "from the one before, or the run's directory to train afresh",
        where)
    # orbax's reads of the other arrays fail later, in threads, against a
    # closed event loop: a command ends at once after its one line.
    error.exit_at_once = True
    raise error from None
  return state.replace(**restored)


def load_params(model_dir: str, selected: bool = False):
  """(model, params) of a trained directory's latest checkpoint, or with
  `selected` its checkpoint chosen on a dev set (`model_selection.py`)."""
  config, _ = load_config(model_dir)
  model, params = models.init_params(config, jax.random.PRNGKey(0))
  if selected:
    return model, model_selection.load_selected(model_dir, params)
  manager = checkpoint_manager(model_dir)
  step = manager.latest_step()
  if step is None:
    raise InputError("no checkpoint (was `csl-jax train` stopped before "
                     "its first?)", model_dir)
  # Restores the whole saved tree; the optimizer state is dropped.
  state = train_state.TrainState.create(
      apply_fn=model.apply, params=params,
      tx=make_optimizer(TrainConfig()))
  return model, restore(manager, state, step).params


def init_key(model_dir: str, model_config) -> Dict[str, Any]:
  """What fixes the parameters a run starts from: `model_dir`'s run key
  (sha256 of its config.json's key parts) and its latest step; not its path.

  Raises:
    InputError: no trained run there, or one of another model config.
  """
  if not os.path.exists(os.path.join(model_dir, CONFIG_FILE)):
    raise InputError("not a `csl-jax train` directory (no config.json) to "
                     "initialize from", model_dir)
  source_config, record = load_config(model_dir)
  if dataclasses.asdict(source_config) != dataclasses.asdict(model_config):
    raise InputError("cannot initialize from a model of another "
                     f"configuration ({dataclasses.asdict(source_config)}, "
                     f"now {dataclasses.asdict(model_config)})", model_dir)
  step = checkpoint_manager(model_dir).latest_step()
  if step is None:
    raise InputError("no checkpoint to initialize from", model_dir)
  parts = {k: record.get(k) for k in ("model", "task", "train", "data",
                                      "init")}
  digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode())
  return {"run": digest.hexdigest(), "step": int(step)}


LEARNING_DIR = "learning"


def _track_train(out_dir, model, params, task, feature_lengths, step):
  """OUT/learning/step_<step>.npy: bool [num train examples], predicted
  right (greedy) at `step`, in the training split's order."""
  # pylint: disable=g-import-not-at-top
  import seqio
  from csl_jax.seq2seq import decode
  # pylint: enable=g-import-not-at-top
  if isinstance(seqio.get_mixture_or_task(task), seqio.Mixture):
    raise InputError(f"track_train_every: {task} is a mixture; track a "
                     "task's own training split")
  rows, _ = decode.evaluate(model, params, task, "train", feature_lengths)
  right = np.array([target == prediction for _, target, prediction in rows])
  directory = os.path.join(out_dir, LEARNING_DIR)
  os.makedirs(directory, exist_ok=True)
  path = os.path.join(directory, f"step_{step:08d}.npy")
  tmp = temporary_path(path)
  with open(tmp, "wb") as f:
    np.save(f, right)
  os.replace(tmp, path)


def _curriculum_batches(out_dir, task, feature_lengths, config: TrainConfig,
                        start: int):
  """Batches of a repetition curriculum (`curriculum.py`) from step
  `start`: each step's examples depend on (seed, step) alone. The pool's
  growth goes to OUT/curriculum.json."""
  features, texts = input_pipeline.materialize(task, "train",
                                               feature_lengths)
  rank = curriculum_lib.ranks(config.curriculum, texts, config.seed)
  curve = {"curriculum": config.curriculum, **curriculum_lib.pool_curve(
      rank, config.num_steps, config.curriculum_start,
      config.curriculum_end)}
  atomic_write_json(os.path.join(out_dir, CURRICULUM_FILE), curve)
  first = curve["share_at_step"]["0"]
  logging.info("curriculum %s: %.1f%% of the %d examples available at step 0 "
               "(schedule: %.0f%%), all from step %s", config.curriculum,
               100 * first, len(rank), 100 * config.curriculum_start,
               curve["all_available_from_step"])
  if config.curriculum != "uniform" and first > 2 * config.curriculum_start:
    logging.warning("curriculum %s starts with %.1f%% of the examples, not "
                    "%.0f%%: a few primitives cover most of them, so this "
                    "is hardly a curriculum", config.curriculum, 100 * first,
                    100 * config.curriculum_start)
  for step in range(start, config.num_steps):
    index = curriculum_lib.batch_indices(
        rank, step, config.num_steps, config.batch_size, config.seed,
        config.curriculum_start, config.curriculum_end)
    batch = {k: v[index] for k, v in features.items()}
    yield input_pipeline.trim_batch(batch, config.bucket_width) \
        if config.bucket_width else batch


def sized_for(model_config, task: str):
  """`model_config` with the task vocabulary's size where it sets none."""
  import seqio  # pylint: disable=g-import-not-at-top
  if model_config.vocab_size:
    return model_config
  vocab = seqio.get_mixture_or_task(task).output_features["targets"].vocabulary
  return dataclasses.replace(model_config, vocab_size=vocab.vocab_size)


def train(out_dir: str, task: str,
          model_config: Optional[models.Seq2SeqConfig] = None,
          config: Optional[TrainConfig] = None,
          extra_config: Optional[Dict[str, Any]] = None,
          progress: bool = True,
          init_from: Optional[str] = None,
          dev: Optional[Tuple[Sequence[Sequence[int]],
                              Sequence[Sequence[int]]]] = None,
          desc: str = "train") -> Dict[str, Any]:
  """Trains (resuming from OUT/checkpoints); returns the final metrics.
  `desc` names the run in its progress lines.

  With `dev` ((input ids, target ids) of a dev set), every checkpoint is
  scored on it and the best kept (`model_selection.py`; `load_params(...,
  selected=True)`).

  With `init_from` (a trained directory of the same model config), a fresh
  run starts from that run's latest parameters (a fresh optimizer, step 0):
  fine-tuning, e.g. on the original data after pretraining on synthetic
  data (Yao & Koller 2024, §3.1). The source's identity keys the run.

  Raises:
    InputError: OUT holds a run of another model or training config, task,
      training data or initialization (see `run_key`): it is never resumed
      nor overwritten.
  """
  model_config = sized_for(model_config or models.Seq2SeqConfig(), task)
  config = config or TrainConfig()
  if config.eval_split:  # else met at the first checkpoint, which it loses
    input_pipeline.check_split(task, config.eval_split,
                               "TrainConfig.eval_split")
  feature_lengths = input_pipeline.lengths(model_config.max_input_len,
                                           model_config.max_target_len)

  def batches(start):
    if config.curriculum != "none":
      return _curriculum_batches(out_dir, task, feature_lengths, config,
                                 start)
    # A resumed run continues the data order where its checkpoint was.
    return input_pipeline.ResumableBatches(
        lambda: input_pipeline.get_dataset(
            task, "train", feature_lengths, config.batch_size, shuffle=True,
            seed=config.seed, num_epochs=None,
            bucket_width=config.bucket_width),
        os.path.join(out_dir, DATA_STATE_DIR), start, config.bucket_width)

  def evaluate(state, data_sharding):
    return evaluate_loss(state, task, config.eval_split, feature_lengths,
                         config.batch_size, data_sharding,
                         config.bucket_width)

  def track(params, step):
    _track_train(out_dir, models.transformer(model_config), params, task,
                 feature_lengths, step)

  return fit(out_dir, model_config, config, run_key(model_config, config,
                                                    task), batches,
             extra_config=extra_config, progress=progress,
             init_from=init_from,
             evaluate=evaluate if config.eval_split else None,
             track=track if config.track_train_every else None,
             select=selector(out_dir, model_config, dev, config), desc=desc)


def selector(out_dir: str, model_config, dev, config: TrainConfig
             ) -> Optional[model_selection.Selector]:
  """`fit`'s `select` of a dev set ((input ids, target ids)) scoring the
  checkpoints of `config`, or None."""
  if dev is None:
    return None
  inputs, targets = dev
  return model_selection.Selector(out_dir, model_selection.scorer(
      models.transformer(model_config), inputs, targets,
      model_config.max_input_len, model_config.max_target_len,
      config.batch_size), model_selection.dev_digest(inputs, targets),
                                  config.checkpoint_every)


def _scheduled(step: int, config: TrainConfig) -> bool:
  return step % config.checkpoint_every == 0 or step == config.num_steps


def fit(out_dir: str, model_config, config: TrainConfig,
        key: Dict[str, Any], batches: Callable[[int], Iterator[Any]],
        extra_config: Optional[Dict[str, Any]] = None,
        progress: bool = True, init_from: Optional[str] = None,
        evaluate: Optional[Callable[[Any, Any], Dict[str, float]]] = None,
        track: Optional[Callable[[Any, int], None]] = None,
        select: Optional[model_selection.Selector] = None,
        desc: str = "train") -> Dict[str, Any]:
  """The training loop of `train`, on any data: `batches(start)` yields
  the batches of steps start, start + 1, ... (numpy features; the same
  ones for a given start whenever called, so a resumed run keeps its
  data order; an iterator with a `save(step, keep)` method is told of each
  checkpoint, `input_pipeline.ResumableBatches`); `key` (`run_key`'s parts) identifies the run. `evaluate`
  (state, sharding) -> losses on a held-out split at each checkpoint;
  `track(params, step)` every `config.track_train_every` steps; `select`
  scores each checkpoint once it is saved and keeps the best; `desc`
  names the run in its progress lines (with `progress`: a bar on a
  terminal, else a line per 10% of the steps with the loss and examples/s).

  SIGTERM checkpoints the step reached and exits (SystemExit(EXIT_CODE));
  so does a first Ctrl-C, raising KeyboardInterrupt instead: the same call
  resumes there, to the uninterrupted run's parameters."""
  os.makedirs(out_dir, exist_ok=True)
  key = dict(key)
  if init_from:
    key["init"] = init_key(init_from, model_config)
  if os.path.exists(os.path.join(out_dir, CONFIG_FILE)):
    _check_resumable(out_dir, key)
  save_config(out_dir, model_config, key.get("task"), extra_config, key)
  n_dev = jax.local_device_count()
  if config.batch_size % n_dev:
    raise InputError(f"batch size {config.batch_size} does not divide "
                     f"over {n_dev} devices")
  data_sharding, replicated = shardings(make_mesh())
  rng, init_rng = jax.random.split(jax.random.PRNGKey(config.seed))
  state = create_state(model_config, config, init_rng)
  manager = checkpoint_manager(out_dir, writer=True)
  if init_from and manager.latest_step() is None:
    # Only a fresh run: a resumed one has its own, fine-tuned, parameters.
    state = state.replace(params=load_params(init_from)[1])
  state = jax.device_put(restore(manager, state), replicated)
  start = int(state.step)
  if select:
    missed = select.missing(start, config.checkpoint_every)
    if missed:
      raise InputError(
          f"{out_dir}: its checkpoints of steps {missed[:3]} were never "
          "scored on this dev set (trained without one?); train into a new "
          "directory to select a checkpoint", os.path.join(
              out_dir, model_selection.HISTORY_FILE))
  summaries = TensorBoardWriter(os.path.join(out_dir, "tensorboard"), start)
  # Killed before scoring its last scheduled checkpoint (one written on
  # SIGTERM between them is no candidate).
  if select and select.resume(start) and _scheduled(start, config):
    summaries.scalars({"exact_match": select(state.params, start)}, start,
                      DEV_SCALARS)
  batches = batches(start)
  # Batches that can save their position beside each checkpoint.
  save_position = getattr(batches, "save", None)
  rates = learning_rates(config, model_config.d_model)
  metrics: Dict[str, Any] = {"start_step": start}
  if start:
    # Where the resumed data order came from (BENCHMARKS "Resuming
    # restores the data position"); none for batches drawn by step (a
    # curriculum's): nothing to restore or skip.
    restored = getattr(batches, "restored", None)
    if restored is not None:
      metrics["data_position"] = "restored" if restored else "skipped"
  history, waiting, shapes = [], [], set()
  compile_seconds, eval_seconds, timed_steps = 0.0, 0.0, 0
  wall_start = time.time()
  record = loss_record.LossRecord(os.path.join(out_dir, LOSS_RECORD_DIR),
                                  start)

  def totals():
    steady = time.time() - wall_start - compile_seconds - eval_seconds
    return record.totals(history, timed_steps, steady if history else 0.0)

  whole = totals()  # the last step's is saved with its checkpoint

  def fetch():
    # Step outputs stay on the device until a log point: the loop
    # dispatches ahead of the accelerator (up to MAX_STEPS_IN_FLIGHT steps)
    # instead of waiting every step.
    fetched = jax.device_get(waiting)
    waiting.clear()
    history.extend(float(o["loss"]) for o in fetched)
    return fetched

  # A bar on a terminal, a line per 10% of the steps in a log file; both
  # count the steps of the whole run, a resumed one's earlier ones too.
  bar = progress_lib.progress(total=config.num_steps, initial=start,
                              disable=not progress, desc=desc, unit="step")
  # On a terminal the bar's postfix follows every log point; a logged line's
  # examples/s is of the steps since the line before.
  bar_enabled = progress and progress_lib.bars_enabled()
  shown = [time.time(), 0, 0.0]  # at the last postfix: time, timed steps,
  # compile and eval seconds
  logged_at = list(shown)  # the same at the last TensorBoard log point

  def rate_since(mark):
    """Examples/s of the timed steps since `mark` (updated to now), compiles
    and evals left out as the run's summary leaves them out; None when
    every step since compiled."""
    now, paused = time.time(), compile_seconds + eval_seconds
    seconds = now - mark[0] - (paused - mark[2])
    rate = None
    if timed_steps > mark[1] and seconds > 0:
      rate = (timed_steps - mark[1]) * config.batch_size / seconds
    mark[:] = [now, timed_steps, paused]
    return rate

  def show(loss):
    postfix = {"loss": f"{loss:.4f}"}
    rate = rate_since(shown)  # of the steps since the last postfix
    if rate is not None:
      postfix["examples/s"] = f"{rate:.0f}"
    bar.set_postfix(postfix)

  with StopRequest(interrupt=True, what=desc) as stop:
    for step in range(start, config.num_steps):
      batch = next(batches)
      shape = tuple(v.shape for v in batch.values())
      batch = jax.device_put(batch, data_sharding)
      compiles = shape not in shapes  # a new shape's first step compiles
      if compiles:
        jax.block_until_ready(state)
        tick = time.time()
      rate = rates[step]  # read once: the TensorBoard line below says it
      state, out = train_step(state, batch, rng, rate)
      if compiles:
        jax.block_until_ready(out)
        compile_seconds += time.time() - tick
        shapes.add(shape)
      else:
        timed_steps += 1
      waiting.append(out)
      if len(waiting) > MAX_STEPS_IN_FLIGHT:
        jax.block_until_ready(waiting[-MAX_STEPS_IN_FLIGHT - 1])
      done = step + 1
      logged = done % config.log_every == 0 or done == config.num_steps
      # The bar's line of this step, if it writes one, says its loss.
      tenth = progress and progress_lib.logs_at(done, config.num_steps)
      if logged or tenth:
        scalars = {k: float(v) for k, v in fetch()[-1].items()}
        if tenth or bar_enabled:
          show(scalars["loss"])
      bar.update(1)  # after its postfix: a line it writes says this step's
      if logged:
        scalars["learning_rate"] = float(rate)
        # Of the steps since the last log point: fetch() above waited for
        # them, so the time is the device's, not the dispatch's.
        throughput = rate_since(logged_at)
        if throughput is not None:
          scalars["examples_per_second"] = throughput
        if config.curriculum == "uniform":
          scalars["curriculum_available"] = 1.0
        elif config.curriculum != "none":
          scalars["curriculum_available"] = (
              curriculum_lib.available_fraction(
                  step, config.num_steps, config.curriculum_start,
                  config.curriculum_end))
        summaries.scalars(scalars, done, "train")
      if track and done % config.track_train_every == 0:
        tick = time.time()
        track(state.params, done)
        eval_seconds += time.time() - tick
      scheduled = _scheduled(done, config)
      if scheduled or stop.requested:
        manager.save(done, args=ocp.args.StandardSave(_pytree(state)))
        if save_position:
          save_position(done, manager.all_steps())
        fetch()
        whole = totals()
        record.save(done, whole, manager.all_steps())
      if scheduled:
        if select:
          manager.wait_until_finished()  # scored only once it is on disk
          tick = time.time()
          summaries.scalars({"exact_match": select(state.params, done)},
                            done, DEV_SCALARS)
          eval_seconds += time.time() - tick
        if evaluate:
          tick = time.time()
          metrics["eval"] = evaluate(state, data_sharding)
          eval_seconds += time.time() - tick
          summaries.scalars(metrics["eval"], done, config.eval_split)
      # Ctrl-C at the last step stops too: the command is to end.
      if stop.requested and (done < config.num_steps or stop.interrupted):
        manager.wait_until_finished()
        summaries.close()
        show(history[-1])  # fetched for the checkpoint
        bar.close()  # its last line (or the bar's end) before the message
        stop.stop(done)
    bar.close()
    fetch()
    # A Ctrl-C now waits for the last save (StopRequest raises it after).
    manager.wait_until_finished()
    summaries.close()
  # Of the whole run, a resumed one's earlier processes included.
  metrics.update(loss_record.metrics(whole, config.batch_size))
  metrics["steps"] = int(state.step)
  if select:
    metrics.update(select.summary())
  metrics["num_devices"] = n_dev
  metrics["wall_seconds"] = time.time() - wall_start
  logging.info("seq2seq train: %s", metrics)
  return metrics
