"""SeqIO task or mixture -> numpy batches for the encoder-decoder."""

from typing import Dict, Iterator, Mapping

import numpy as np
import seqio
import tensorflow as tf

Batch = Dict[str, np.ndarray]
FEATURES = ("encoder_input_tokens", "decoder_input_tokens",
            "decoder_target_tokens", "decoder_loss_weights")


def lengths(max_input_len: int, max_target_len: int) -> Dict[str, int]:
  return {"inputs": max_input_len, "targets": max_target_len}


def get_dataset(task: str, split: str, feature_lengths: Mapping[str, int],
                batch_size: int, shuffle: bool = False, seed: int = 0,
                num_epochs=1) -> tf.data.Dataset:
  """Batched EncDec features; training drops the last partial batch."""
  ds = seqio.get_dataset(
      task, task_feature_lengths=dict(feature_lengths),
      feature_converter=seqio.EncDecFeatureConverter(pack=False),
      dataset_split=split, shuffle=shuffle, num_epochs=num_epochs,
      seed=seed, use_cached=False, verbose=False)
  return ds.batch(batch_size, drop_remainder=num_epochs is None)


def pad_batch(batch: Batch, multiple: int) -> Batch:
  """Zero rows (weight 0) so the batch divides evenly across devices."""
  n = len(next(iter(batch.values())))
  extra = -n % multiple
  if not extra:
    return batch
  return {k: np.concatenate([v, np.zeros((extra,) + v.shape[1:], v.dtype)])
          for k, v in batch.items()}


def numpy_batches(ds: tf.data.Dataset) -> Iterator[Batch]:
  for batch in ds.as_numpy_iterator():
    yield {k: batch[k] for k in FEATURES}
