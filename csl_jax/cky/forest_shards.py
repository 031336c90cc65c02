"""Pair forests built in shards and kept as array files (issue 16).

The fit's forests of a dataset past one process: the distinct training
pairs are cut into `num_shards` contiguous ranges, each range's forests
are built by an independent worker (here one after the other, or on Beam:
`beam_forests.py`) and written as `forests-SSSSS-of-NNNNN.npz`, and the fit
reads the shards back in order: node ids are local to each example, so the
concatenation is exactly the arrays of one `build_forests` call. The
directory may be a URL (`gs://...`: `beam.file_urls`), for Beam workers
that share no disk.
"""

import hashlib
import io
import json
from typing import List, Optional, Sequence, Tuple

import numpy as np

from csl_jax.beam import file_urls
from csl_jax.cky import forest as forest_lib
from csl_jax.cky.grammar_arrays import QCFGArrays
from csl_jax.errors import InputError
from csl_jax.progress import progress

FIELDS = ("node_offsets", "edge_offsets", "nodes", "edge_rule",
          "edge_parent", "edge_children")


def shard_ranges(n: int, num_shards: int) -> List[Tuple[int, int]]:
  """[lo, hi) of each shard, sizes differing by at most one."""
  if num_shards < 1:
    raise InputError(f"forest shards must be >= 1, not {num_shards}")
  bounds = [n * s // num_shards for s in range(num_shards + 1)]
  return list(zip(bounds[:-1], bounds[1:]))


def shard_path(directory: str, shard: int, num_shards: int) -> str:
  return file_urls.join(directory,
                        f"forests-{shard:05d}-of-{num_shards:05d}.npz")


def save(path: str, batch: forest_lib.ForestBatch) -> None:
  """Writes the shard atomically (a worker killed midway leaves none)."""
  buffer = io.BytesIO()
  np.savez(buffer, **{k: getattr(batch, k) for k in FIELDS})
  file_urls.write_bytes(path, buffer.getvalue())


def load(path: str) -> forest_lib.ForestBatch:
  try:
    with np.load(io.BytesIO(file_urls.read_bytes(path)),
                 allow_pickle=False) as z:
      return forest_lib.ForestBatch(*(z[k] for k in FIELDS))
  except (OSError, ValueError, KeyError) as e:
    raise InputError(f"not a forest shard ({e})", path) from None


def concatenate(batches: Sequence[forest_lib.ForestBatch]
                ) -> forest_lib.ForestBatch:
  """The forests of all batches, in order, as one batch."""
  def offsets(name, sizes):
    parts, base = [np.zeros(1, np.int64)], 0
    for b, size in zip(batches, sizes, strict=True):
      parts.append(np.asarray(getattr(b, name)[1:], np.int64) + base)
      base += size
    return np.concatenate(parts).astype(batches[0].node_offsets.dtype)

  node_sizes = [len(b.nodes) for b in batches]
  edge_sizes = [len(b.edge_rule) for b in batches]
  return forest_lib.ForestBatch(
      offsets("node_offsets", node_sizes), offsets("edge_offsets",
                                                   edge_sizes),
      *(np.concatenate([getattr(b, k) for b in batches])
        for k in FIELDS[2:]))


# Seconds a forest build is quiet: COGS's is quick (BENCHMARKS "Issue 10 →
# A pass over progress, TensorBoard and resuming"), and ten lines for it
# would be noise.
PROGRESS_DELAY = 5.0


def build_in_pieces(grammar: QCFGArrays, pairs, desc: str,
                    pieces: int = 100) -> forest_lib.ForestBatch:
  """The arrays of one `build_forests` call on `pairs` (no length bounds),
  built `pieces` contiguous ranges at a time so that a long build says how
  far it is (`desc`: past PROGRESS_DELAY seconds, a line per 10% of the
  pairs in a log file)."""
  if len(pairs) <= 1:
    return forest_lib.build_forests(grammar, pairs, max_source_len=10**9,
                                    max_target_len=10**9)[0]
  bar = progress(total=len(pairs), desc=desc, unit="pair", mininterval=1.0,
                 delay=PROGRESS_DELAY)
  batches = []
  for lo, hi in shard_ranges(len(pairs), min(pieces, len(pairs))):
    batches.append(forest_lib.build_forests(
        grammar, pairs[lo:hi], max_source_len=10**9,
        max_target_len=10**9)[0])
    bar.update(hi - lo)
  bar.close()
  return concatenate(batches)


def build_shard(grammar: QCFGArrays, pairs, shard: int, num_shards: int,
                directory: str) -> str:
  """Builds and writes one shard of `pairs` (all of them, indexed by the
  shard's range); returns its path."""
  lo, hi = shard_ranges(len(pairs), num_shards)[shard]
  batch, _ = forest_lib.build_forests(grammar, pairs[lo:hi],
                                      max_source_len=10**9,
                                      max_target_len=10**9)
  path = shard_path(directory, shard, num_shards)
  save(path, batch)
  return path


def data_key(rules_text: str, max_nts: int, pairs) -> str:
  """What the forests depend on: the grammar and the pairs."""
  h = hashlib.sha256(f"{max_nts}\n{rules_text}\n".encode())
  for x, y in pairs:
    h.update((" ".join(x) + "\t" + " ".join(y) + "\n").encode())
  return h.hexdigest()


def build_sharded(grammar: QCFGArrays, pairs, num_shards: int,
                  directory: str, key: str, runner: Optional[str] = None,
                  pipeline_args: Sequence[str] = ()
                  ) -> forest_lib.ForestBatch:
  """Forests of `pairs` through `num_shards` shard files in `directory`,
  built here or, with `runner`, as an Apache Beam pipeline. Shards of the
  same `key` (`data_key`) and count already there are reused (a killed
  build resumes); others are removed first."""
  file_urls.make_dirs(directory)
  key_path = file_urls.join(directory, "key.json")
  record = {"key": key, "num_shards": num_shards}
  old = (json.loads(file_urls.read_bytes(key_path))
         if file_urls.exists(key_path) else None)
  if old != record:
    file_urls.delete(file_urls.matching(directory, "forests-*"))
    file_urls.write_bytes(key_path, (json.dumps(
        record, indent=2, sort_keys=True) + "\n").encode())
  missing = [s for s in range(num_shards)
             if not file_urls.exists(shard_path(directory, s, num_shards))]
  if missing and runner:
    from csl_jax.cky import beam_forests  # pylint: disable=g-import-not-at-top
    beam_forests.run(grammar, pairs, missing, num_shards, directory, runner,
                     pipeline_args)
  else:
    for s in progress(missing, desc="forest shards", unit="shard"):
      build_shard(grammar, pairs, s, num_shards, directory)
  return concatenate([load(shard_path(directory, s, num_shards))
                      for s in range(num_shards)])
