"""A task's token ids as arrays, and training batches drawn from them with
NumPy alone: the trainer (`train.fit`) and decoder then run where JAX runs
but TensorFlow and SeqIO are not installed (an accelerator machine, see
`remote.py`).

Each example is stored as SeqIO tokenized it (`inputs`, `targets`: ids cut
to the feature lengths, EOS appended), ragged: one flat id array (uint16
where the vocabulary allows, else uint32) and row offsets per feature, in `.npz` files. `features` makes from them what
`seqio.EncDecFeatureConverter(pack=False)` makes.

`batches` draws a mixture as `tf.data`'s `sample_from_datasets` does (each
example from a task chosen with probability proportional to its rate, each
task an endless stream of reshuffled epochs) and groups examples into
batches of one target-length bucket as `bucket_by_sequence_length` does.
The draws depend on the seed alone, not on TensorFlow: the same seed gives
the same batches on every machine, but not the batches of the SeqIO path.
"""

import hashlib
import io
import itertools
from typing import Dict, Iterator, List, Mapping, Sequence, Tuple

import numpy as np

from csl_jax.errors import InputError
from csl_jax.files import atomic_write_bytes
from csl_jax.seq2seq import input_pipeline

FIELDS = ("inputs", "targets")


class Ragged:
  """Rows of ids: `ids` flat, row i is ids[offsets[i]:offsets[i + 1]]."""

  def __init__(self, ids: np.ndarray, offsets: np.ndarray):
    self.ids = np.asarray(ids)
    self.offsets = np.asarray(offsets, np.int64)

  @classmethod
  def from_rows(cls, rows: Sequence[Sequence[int]]) -> "Ragged":
    lengths = np.fromiter((len(r) for r in rows), np.int64, len(rows))
    flat = np.fromiter(itertools.chain.from_iterable(rows), np.int64,
                       int(lengths.sum()))
    return cls.from_flat(flat, lengths)

  @classmethod
  def from_flat(cls, flat: np.ndarray, lengths: np.ndarray) -> "Ragged":
    """Rows of `lengths[i]` ids each, one after another in `flat`."""
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] != len(flat):
      raise ValueError(f"{len(flat)} ids for rows of {offsets[-1]}")
    top = int(flat.max()) if len(flat) else 0
    return cls(np.asarray(flat).astype(
        np.uint16 if top < 1 << 16 else np.uint32), offsets)

  def __len__(self) -> int:
    return len(self.offsets) - 1

  def lengths(self) -> np.ndarray:
    return np.diff(self.offsets)

  def row(self, i: int) -> np.ndarray:
    return self.ids[self.offsets[i]:self.offsets[i + 1]]

  def padded(self, index: np.ndarray, width: int,
             shift: bool = False) -> np.ndarray:
    """[len(index), width] int32 rows, zero padded; with `shift`, one 0
    (BOS) first and the last id dropped (the decoder's inputs)."""
    out = np.zeros((len(index), width), np.int32)
    lead = 1 if shift else 0
    for j, i in enumerate(index):
      row = self.row(i)[:width - lead]
      out[j, lead:lead + len(row)] = row
    return out


def save(path: str, data: Mapping[str, Ragged]) -> str:
  """Writes `data` (field -> Ragged) to `path` atomically; returns the
  sha256 of the bytes written."""
  buffer = io.BytesIO()
  np.savez_compressed(buffer, **{
      f"{k}_{part}": getattr(v, part) for k, v in data.items()
      for part in ("ids", "offsets")})
  raw = buffer.getvalue()
  atomic_write_bytes(path, raw)
  return hashlib.sha256(raw).hexdigest()


def load(path: str) -> Dict[str, Ragged]:
  try:
    with np.load(path, allow_pickle=False) as z:
      names = sorted({k.rsplit("_", 1)[0] for k in z.files})
      return {k: Ragged(z[f"{k}_ids"], z[f"{k}_offsets"]) for k in names}
  except (OSError, ValueError, KeyError) as e:
    raise InputError(f"not a token array file ({e})", path) from None


def of_examples(examples: Sequence[Mapping[str, np.ndarray]]
                ) -> Dict[str, Ragged]:
  """`FIELDS` of a split's tokenized examples (`decode.split_examples`)."""
  return {k: Ragged.from_rows([ex[k] for ex in examples]) for k in FIELDS}


def features(data: Mapping[str, Ragged], index: np.ndarray,
             lengths: Mapping[str, int]) -> Dict[str, np.ndarray]:
  """The model's features of rows `index` (EncDecFeatureConverter's)."""
  targets = data["targets"].padded(index, lengths["targets"])
  return {
      "encoder_input_tokens": data["inputs"].padded(index,
                                                    lengths["inputs"]),
      "decoder_input_tokens": data["targets"].padded(
          index, lengths["targets"], shift=True),
      "decoder_target_tokens": targets,
      "decoder_loss_weights": (targets > 0).astype(np.int32),
  }


def _epochs(n: int, rng: np.random.Generator) -> Iterator[int]:
  while True:
    yield from rng.permutation(n).tolist()


def batch_indices(sizes: Sequence[int], rates: Sequence[float],
                  target_lengths: Sequence[np.ndarray], batch_size: int,
                  bucket_bounds: Sequence[int], seed: int
                  ) -> Iterator[List[Tuple[int, int]]]:
  """Endless batches of (task, row) pairs: tasks drawn by rate, rows of a
  task in reshuffled epochs, a batch emitted when a target-length bucket
  (bounds as `bucket_by_sequence_length`'s) holds `batch_size` of them."""
  if any(n <= 0 for n in sizes):
    raise InputError("a task of the mixture has no training examples")
  rng = np.random.default_rng([seed, 11])
  streams = [_epochs(n, np.random.default_rng([seed, 12, t]))
             for t, n in enumerate(sizes)]
  p = np.asarray(rates, np.float64)
  p = p / p.sum()
  buckets: List[List[Tuple[int, int]]] = [
      [] for _ in range(len(bucket_bounds) + 1)]
  while True:
    for t in rng.choice(len(sizes), 4096, p=p).tolist():
      row = next(streams[t])
      b = int(np.searchsorted(bucket_bounds, target_lengths[t][row],
                              side="right"))
      buckets[b].append((t, row))
      if len(buckets[b]) == batch_size:
        yield buckets[b]
        buckets[b] = []


def batches(tasks: Sequence[Mapping[str, Ragged]], rates: Sequence[float],
            lengths: Mapping[str, int], batch_size: int, bucket_width: int,
            seed: int, start: int = 0) -> Iterator[Dict[str, np.ndarray]]:
  """The training batches of steps start, start + 1, ...: the same for a
  seed whatever `start` (earlier ones are drawn and skipped)."""
  target_lengths = [np.minimum(t["targets"].lengths(), lengths["targets"])
                    for t in tasks]
  bounds = list(range(bucket_width + 1, lengths["targets"] + 1,
                      bucket_width)) if bucket_width > 0 else []
  for step, pairs in enumerate(batch_indices(
      [len(t["targets"]) for t in tasks], rates, target_lengths,
      batch_size, bounds, seed)):
    if step < start:
      continue
    parts = []
    for t, task in enumerate(tasks):
      rows = np.array([r for tt, r in pairs if tt == t], np.int64)
      if len(rows):
        parts.append(features(task, rows, lengths))
    batch = {k: np.concatenate([p[k] for p in parts])
             for k in input_pipeline.FEATURES}
    yield input_pipeline.trim_batch(batch, bucket_width) if bucket_width \
        else batch
