"""Trains the encoder-decoder on a SeqIO task or mixture.

Data parallel over `jax.local_devices()`: a 1-D mesh, batch sharded on its
"data" axis, parameters replicated (one CPU device works unchanged). Orbax
checkpoints in OUT/checkpoints (resumed from), TensorBoard scalars in
OUT/tensorboard, the model config in OUT/config.json.
"""

import dataclasses
import json
import os
import time
from typing import Any, Dict, Optional

from absl import logging
from flax.training import train_state
import gin
import jax
import jax.numpy as jnp
import numpy as np
import optax
import orbax.checkpoint as ocp
import seqio
import tqdm

from csl_jax.files import atomic_write_json
from csl_jax.seq2seq import input_pipeline
from csl_jax.seq2seq import models

CONFIG_FILE = "config.json"


@gin.configurable(module="seq2seq")
@dataclasses.dataclass(frozen=True)
class TrainConfig:
  batch_size: int = 64
  num_steps: int = 2000
  learning_rate: float = 1e-3
  warmup_steps: int = 100
  weight_decay: float = 0.01
  seed: int = 0
  log_every: int = 50
  checkpoint_every: int = 500
  eval_split: Optional[str] = None  # Loss on it at each checkpoint.
  # Batches of similar target length, trimmed to multiples of this width
  # (0: every batch padded to the full lengths). SCAN's targets vary from
  # 1 to 48 tokens, so padding every batch to 48 wastes most of the compute.
  bucket_width: int = 16


def make_mesh():
  return jax.sharding.Mesh(np.array(jax.local_devices()), ("data",))


def shardings(mesh):
  P = jax.sharding.PartitionSpec  # pylint: disable=invalid-name
  return (jax.sharding.NamedSharding(mesh, P("data")),
          jax.sharding.NamedSharding(mesh, P()))


def make_optimizer(config: TrainConfig):
  schedule = optax.warmup_cosine_decay_schedule(
      0.0, config.learning_rate, max(config.warmup_steps, 1),
      max(config.num_steps, config.warmup_steps + 1),
      end_value=config.learning_rate * 0.1)
  return optax.adamw(schedule, weight_decay=config.weight_decay)


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
def train_step(state, batch, rng):
  def compute(params):
    logits = state.apply_fn(
        {"params": params}, batch["encoder_input_tokens"],
        batch["decoder_input_tokens"], deterministic=False,
        rngs={"dropout": jax.random.fold_in(rng, state.step)})
    return loss_fn(logits, batch["decoder_target_tokens"],
                   batch["decoder_loss_weights"])

  (loss, accuracy), grads = jax.value_and_grad(compute, has_aux=True)(
      state.params)
  return state.apply_gradients(grads=grads), {"loss": loss,
                                              "accuracy": accuracy}


@jax.jit
def eval_step(state, batch):
  logits = state.apply_fn({"params": state.params},
                          batch["encoder_input_tokens"],
                          batch["decoder_input_tokens"])
  weights = batch["decoder_loss_weights"]
  loss, accuracy = loss_fn(logits, batch["decoder_target_tokens"], weights)
  return {"loss": loss, "accuracy": accuracy, "weight": weights.sum()}


class Summaries:
  """TensorBoard scalars (TensorFlow is already loaded by SeqIO)."""

  def __init__(self, directory: str):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    self._tf = tf
    self._writer = tf.summary.create_file_writer(directory)

  def scalars(self, values: Dict[str, float], step: int, prefix: str):
    with self._writer.as_default():
      for name, value in values.items():
        self._tf.summary.scalar(f"{prefix}/{name}", value, step=step)
    self._writer.flush()


def evaluate_loss(state, task, split, feature_lengths, batch_size,
                  data_sharding, bucket_width: int = 0) -> Dict[str, float]:
  ds = input_pipeline.get_dataset(task, split, feature_lengths, batch_size,
                                  bucket_width=bucket_width)
  total = {"loss": 0.0, "accuracy": 0.0, "weight": 0.0}
  for batch in input_pipeline.numpy_batches(ds, bucket_width):
    batch = input_pipeline.pad_batch(batch, jax.local_device_count())
    out = jax.device_get(eval_step(state, jax.device_put(batch,
                                                         data_sharding)))
    for key in ("loss", "accuracy"):
      total[key] += float(out[key]) * float(out["weight"])
    total["weight"] += float(out["weight"])
  w = max(total["weight"], 1.0)
  return {"loss": total["loss"] / w, "accuracy": total["accuracy"] / w}


def save_config(out_dir: str, model_config, task: str,
                extra: Optional[Dict[str, Any]] = None) -> None:
  record = {"model": dataclasses.asdict(model_config), "task": task}
  record.update(extra or {})
  atomic_write_json(os.path.join(out_dir, CONFIG_FILE), record)


def load_config(model_dir: str):
  with open(os.path.join(model_dir, CONFIG_FILE), encoding="utf-8") as f:
    record = json.load(f)
  return models.Seq2SeqConfig(**record["model"]), record


def checkpoint_manager(out_dir: str) -> ocp.CheckpointManager:
  return ocp.CheckpointManager(
      os.path.abspath(os.path.join(out_dir, "checkpoints")),
      options=ocp.CheckpointManagerOptions(max_to_keep=2, create=True))


def _pytree(state):
  return {"step": state.step, "params": state.params,
          "opt_state": state.opt_state}


def restore(manager: ocp.CheckpointManager, state, step=None):
  """`state` with the latest (or `step`) checkpoint's values; or `state`."""
  step = manager.latest_step() if step is None else step
  if step is None:
    return state
  restored = manager.restore(step, args=ocp.args.StandardRestore(
      _pytree(state)))
  return state.replace(**restored)


def load_params(model_dir: str):
  """(model, params) of a trained directory's latest checkpoint."""
  config, _ = load_config(model_dir)
  model, params = models.init_params(config, jax.random.PRNGKey(0))
  manager = checkpoint_manager(model_dir)
  step = manager.latest_step()
  if step is None:
    raise ValueError(f"{model_dir}: no checkpoint")
  # Restores the whole saved tree; the optimizer state is dropped.
  state = train_state.TrainState.create(
      apply_fn=model.apply, params=params,
      tx=make_optimizer(TrainConfig()))
  return model, restore(manager, state, step).params


def train(out_dir: str, task: str,
          model_config: Optional[models.Seq2SeqConfig] = None,
          config: Optional[TrainConfig] = None,
          extra_config: Optional[Dict[str, Any]] = None,
          progress: bool = True) -> Dict[str, Any]:
  """Trains (resuming from OUT/checkpoints); returns the final metrics."""
  model_config = model_config or models.Seq2SeqConfig()
  config = config or TrainConfig()
  vocab = seqio.get_mixture_or_task(task).output_features["targets"].vocabulary
  if not model_config.vocab_size:
    model_config = dataclasses.replace(model_config,
                                       vocab_size=vocab.vocab_size)
  os.makedirs(out_dir, exist_ok=True)
  if os.path.exists(os.path.join(out_dir, CONFIG_FILE)):
    saved, _ = load_config(out_dir)
    if saved != model_config:
      raise ValueError(f"{out_dir} holds a model with another configuration "
                       f"({saved}); resume with the same one or use a new "
                       "output directory")
  save_config(out_dir, model_config, task, extra_config)
  n_dev = jax.local_device_count()
  if config.batch_size % n_dev:
    raise ValueError(f"batch size {config.batch_size} does not divide "
                     f"over {n_dev} devices")
  data_sharding, replicated = shardings(make_mesh())
  rng, init_rng = jax.random.split(jax.random.PRNGKey(config.seed))
  state = create_state(model_config, config, init_rng)
  manager = checkpoint_manager(out_dir)
  state = jax.device_put(restore(manager, state), replicated)
  start = int(state.step)
  feature_lengths = input_pipeline.lengths(model_config.max_input_len,
                                           model_config.max_target_len)
  # Skipping what earlier runs consumed keeps a resumed run's data order.
  ds = input_pipeline.get_dataset(task, "train", feature_lengths,
                                  config.batch_size, shuffle=True,
                                  seed=config.seed, num_epochs=None,
                                  bucket_width=config.bucket_width)
  batches = input_pipeline.numpy_batches(ds.skip(start), config.bucket_width)
  summaries = Summaries(os.path.join(out_dir, "tensorboard"))
  metrics: Dict[str, Any] = {"start_step": start}
  history, timed_steps, timed_seconds = [], 0, 0.0
  shapes = set()
  wall_start = time.time()
  for step in tqdm.trange(start, config.num_steps, disable=not progress,
                          desc="train"):
    batch = next(batches)
    shape = tuple(v.shape for v in batch.values())
    batch = jax.device_put(batch, data_sharding)
    tick = time.time()
    state, out = train_step(state, batch, rng)
    out = jax.device_get(out)  # Waits, so the timing is of the step.
    if shape in shapes:  # A new shape's first step compiles.
      timed_steps += 1
      timed_seconds += time.time() - tick
    shapes.add(shape)
    history.append(float(out["loss"]))
    done = step + 1
    if done % config.log_every == 0 or done == config.num_steps:
      summaries.scalars({k: float(v) for k, v in out.items()}, done, "train")
    if done % config.checkpoint_every == 0 or done == config.num_steps:
      manager.save(done, args=ocp.args.StandardSave(_pytree(state)))
      if config.eval_split:
        metrics["eval"] = evaluate_loss(state, task, config.eval_split,
                                        feature_lengths, config.batch_size,
                                        data_sharding, config.bucket_width)
        summaries.scalars(metrics["eval"], done, config.eval_split)
  manager.wait_until_finished()
  if history:
    metrics.update(first_loss=history[0], final_loss=history[-1],
                   mean_last_loss=float(np.mean(history[-10:])))
  if timed_steps:
    metrics["examples_per_second"] = (timed_steps * config.batch_size
                                      / timed_seconds)
  metrics["steps"] = int(state.step)
  metrics["num_devices"] = n_dev
  metrics["wall_seconds"] = time.time() - wall_start
  logging.info("seq2seq train: %s", metrics)
  return metrics
