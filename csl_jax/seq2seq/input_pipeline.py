"""SeqIO task or mixture -> numpy batches for the encoder-decoder.

TensorFlow and SeqIO are imported where a dataset is built: the batch
helpers (`trim_batch`, `pad_batch`) serve the trainer on token arrays
(`arrays.py`) on machines without them.
"""

import os
import shutil
from typing import Callable, Dict, Iterable, Iterator, Mapping

from absl import logging
import numpy as np

from csl_jax import quiet
from csl_jax.errors import InputError

Batch = Dict[str, np.ndarray]
FEATURES = ("encoder_input_tokens", "decoder_input_tokens",
            "decoder_target_tokens", "decoder_loss_weights")


def lengths(max_input_len: int, max_target_len: int) -> Dict[str, int]:
  return {"inputs": max_input_len, "targets": max_target_len}


def _target_length(ex):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.reduce_sum(tf.cast(ex["decoder_target_tokens"] > 0, tf.int32))


def without_autograph():
  """Builds tf.data pipelines without AutoGraph (see BENCHMARKS.md "Issue 10
  → Test suite"): SeqIO's map functions are plain TF ops, and converting
  each one's source took time for every `map` whenever a pipeline is
  built, most of a short run's start. Code that needs Python control flow
  over tensors then fails loudly at tracing, never silently."""
  from tensorflow.python.autograph.core import ag_ctx  # pylint: disable=g-direct-tensorflow-import,g-import-not-at-top
  return ag_ctx.ControlStatusCtx(status=ag_ctx.Status.DISABLED)


def get_dataset(task: str, split: str, feature_lengths: Mapping[str, int],
                batch_size: int, shuffle: bool = False, seed: int = 0,
                num_epochs=1, bucket_width: int = 0) -> "tf.data.Dataset":
  """Batched EncDec features; training drops the last partial batch.

  With `bucket_width` > 0, batches hold examples whose target lengths fall
  in the same `bucket_width`-wide bucket (with `trim_batch`, short batches
  then cost little); otherwise batches are drawn in data order.
  """
  import seqio  # pylint: disable=g-import-not-at-top
  quiet.quiet_skipped_length_check()
  with without_autograph():
    # No length check: `seqio.get_dataset` trims every feature to its
    # length (`trim_output_features`) before the converter pads it, so its
    # asserts never fire, and building them was a good part of a small
    # pipeline's start (BENCHMARKS "Issue 10 → Test suite").
    ds = seqio.get_dataset(
        task, task_feature_lengths=dict(feature_lengths),
        feature_converter=seqio.EncDecFeatureConverter(
            pack=False, apply_length_check=False),
        dataset_split=split, shuffle=shuffle, num_epochs=num_epochs,
        seed=seed, use_cached=False, verbose=False)
    drop = num_epochs is None
    if bucket_width <= 0:
      return ds.batch(batch_size, drop_remainder=drop)
    bounds = list(range(bucket_width + 1, feature_lengths["targets"] + 1,
                        bucket_width))
    return ds.bucket_by_sequence_length(
        _target_length, bounds, [batch_size] * (len(bounds) + 1),
        drop_remainder=drop)


def materialize(task: str, split: str, feature_lengths: Mapping[str, int],
                batch_size: int = 1024):
  """Every example of `split` of a task, or of each task of a mixture in
  turn (their union; rates unused), in data order: (the model's features
  as numpy arrays [N, length], the (input, target) texts)."""
  import seqio  # pylint: disable=g-import-not-at-top
  provider = seqio.get_mixture_or_task(task)
  tasks = provider.tasks if isinstance(provider, seqio.Mixture) \
      else [provider]
  parts, texts = {k: [] for k in FEATURES}, []
  for t in tasks:
    for batch in numpy_batches(get_dataset(t.name, split, feature_lengths,
                                           batch_size)):
      for k in FEATURES:
        parts[k].append(batch[k])
    with without_autograph():
      raw = t.get_dataset(dict(feature_lengths), split=split, shuffle=False,
                          num_epochs=1, use_cached=False)
    for ex in raw.as_numpy_iterator():
      texts.append((ex["inputs_pretokenized"].decode("utf-8"),
                    ex["targets_pretokenized"].decode("utf-8")))
  features = {k: np.concatenate(v) for k, v in parts.items()}
  if len(texts) != len(features[FEATURES[0]]):
    raise RuntimeError(f"{task} {split}: {len(texts)} texts for "
                       f"{len(features[FEATURES[0]])} examples")
  return features, texts


def count_too_long(task: str, split: str, feature_lengths: Mapping[str, int],
                   limit: int = 10_000) -> Dict[str, int]:
  """Of the first `limit` examples of `split` in data order, how many are
  longer (in tokens, EOS included) than `feature_lengths`: SeqIO cuts them
  silently (`append_eos_after_trim`), so a byte vocabulary with word-level
  lengths trains on clipped data unless someone looks."""
  import seqio  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  provider = seqio.get_mixture_or_task(task)
  tasks = provider.tasks if isinstance(provider, seqio.Mixture) \
      else [provider]
  counts = {"checked": 0, "inputs": 0, "targets": 0}
  for t in tasks:
    left = limit - counts["checked"]
    if left <= 0:
      break
    with without_autograph():
      ds = t.get_dataset(None, split=split, shuffle=False, num_epochs=1,
                         use_cached=False).take(left).map(
                             lambda ex: {k: tf.size(ex[k]) for k in
                                         ("inputs", "targets")})
    for batch in ds.batch(1024).as_numpy_iterator():
      counts["checked"] += len(batch["inputs"])
      for k in ("inputs", "targets"):
        counts[k] += int((batch[k] > feature_lengths[k]).sum())
  return counts


def check_split(task: str, split: str, setting: str) -> None:
  """A split the task lacks is an InputError naming those it has (before
  any work: a training run would meet it at its first checkpoint)."""
  import seqio  # pylint: disable=g-import-not-at-top
  splits = seqio.get_mixture_or_task(task).splits
  if split not in splits:
    raise InputError(f"{setting} {split!r}: {task} has no such split (it "
                     f"has {', '.join(sorted(splits))})")


def warn_if_too_long(task: str, split: str,
                     feature_lengths: Mapping[str, int]) -> Dict[str, int]:
  """`count_too_long`, logged as a warning naming the setting to raise."""
  counts = count_too_long(task, split, feature_lengths)
  for k, setting in (("inputs", "max_input_len"),
                     ("targets", "max_target_len")):
    if counts[k]:
      logging.warning(
          "%s %s: %d of the first %d examples have %s longer than %d tokens "
          "and are cut to it: raise seq2seq.Seq2SeqConfig.%s (or use a "
          "vocabulary with fewer tokens per word, e.g. a word-level one)",
          task, split, counts[k], counts["checked"], k, feature_lengths[k],
          setting)
  return counts


class ResumableBatches:
  """`numpy_batches` of a repeated training dataset, from step `start`,
  whose position can be saved beside the model's checkpoints: a resumed
  run restores the iterator (tf.data's checkpoint: its shuffle buffer,
  seeds and file offsets) instead of producing and dropping every batch
  before `start` (the fallback where no saved position can be read; both
  give the same batches). BENCHMARKS "Resuming restores the
  data position".

  `make_dataset` builds the dataset: each build is iterated once, since a
  second iterator of a reshuffling dataset draws another order."""

  def __init__(self, make_dataset: Callable[[], "tf.data.Dataset"],
               state_dir: str, start: int, trim_multiple: int = 0):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    self._tf = tf
    self._dir = state_dir
    self._trim = trim_multiple
    self._saving = True
    self.restored = False
    self._iterator = None
    self._to_skip = 0
    saved = os.path.join(state_dir, str(start), "data")
    if start and tf.io.gfile.exists(saved + ".index"):
      iterator = iter(make_dataset())
      try:
        tf.train.Checkpoint(iterator=iterator).read(saved).assert_consumed()
        self._iterator, self.restored = iterator, True
      except (tf.errors.OpError, AssertionError, ValueError) as e:
        logging.warning("%s: data position not restored (%s); skipping "
                        "%d batches instead", saved, e, start)
    if self._iterator is None:
      # Advanced by hand, not `ds.skip`: the positions it saves later must
      # restore into the plain dataset a later resume builds. Lazily: a
      # finished run resumed reads no batch.
      self._iterator = iter(make_dataset())
      self._to_skip = start

  def __iter__(self) -> "ResumableBatches":
    return self

  def _skip(self) -> None:
    while self._to_skip:
      next(self._iterator)
      self._to_skip -= 1

  def __next__(self) -> Batch:
    self._skip()
    return model_batch(next(self._iterator), self._trim)

  def save(self, step: int, keep: Iterable[int] = ()) -> None:
    """Saves the position after `step` steps as `state_dir/<step>`
    (complete or absent: written aside, then renamed); removes the saved
    positions of steps not in `keep` (the model's checkpoints)."""
    if not self._saving:
      return
    self._skip()
    tf = self._tf
    final = os.path.join(self._dir, str(step))
    aside = os.path.join(self._dir, f".{step}.tmp")
    try:
      shutil.rmtree(aside, ignore_errors=True)
      tf.train.Checkpoint(iterator=self._iterator).write(
          os.path.join(aside, "data"))
    except (tf.errors.OpError, ValueError, TypeError) as e:
      # e.g. a custom preprocessor in Python: resuming then skips.
      logging.warning("data position not saved (%s); a resumed run "
                      "skips its batches instead", e)
      self._saving = False
      shutil.rmtree(aside, ignore_errors=True)
      return
    shutil.rmtree(final, ignore_errors=True)
    os.replace(aside, final)
    keep = {int(k) for k in keep} | {step}
    for name in os.listdir(self._dir):
      # and what a killed write left aside
      if (name.isdigit() and int(name) not in keep) or (
          name.startswith(".") and name.endswith(".tmp")):
        shutil.rmtree(os.path.join(self._dir, name), ignore_errors=True)


def trim_batch(batch: Batch, multiple: int) -> Batch:
  """Drops the all-padding tail columns, keeping widths multiples of
  `multiple` so that only a few shapes are ever compiled."""
  def width(tokens, limit):
    used = int(np.max(np.nonzero(tokens.any(axis=0))[0], initial=-1)) + 1
    return min(limit, max(multiple, -(-used // multiple) * multiple))

  enc = batch["encoder_input_tokens"]
  dec = batch["decoder_target_tokens"]
  n_enc, n_dec = width(enc, enc.shape[1]), width(dec, dec.shape[1])
  return {k: v[:, :n_enc] if k.startswith("encoder") else v[:, :n_dec]
          for k, v in batch.items()}


def pad_batch(batch: Batch, multiple: int) -> Batch:
  """Zero rows (weight 0) so the batch divides evenly across devices."""
  n = len(next(iter(batch.values())))
  extra = -n % multiple
  if not extra:
    return batch
  return {k: np.concatenate([v, np.zeros((extra,) + v.shape[1:], v.dtype)])
          for k, v in batch.items()}


def model_batch(element, trim_multiple: int = 0) -> Batch:
  """A dataset element's model features as numpy (the others are not
  converted); with `trim_multiple`, `trim_batch`ed."""
  batch = {k: element[k].numpy() for k in FEATURES}
  return trim_batch(batch, trim_multiple) if trim_multiple else batch


def numpy_batches(ds: "tf.data.Dataset", trim_multiple: int = 0
                  ) -> Iterator[Batch]:
  """`model_batch` of each element of `ds`."""
  for element in ds:
    yield model_batch(element, trim_multiple)
