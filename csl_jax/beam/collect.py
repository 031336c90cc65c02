"""A pipeline's small result back to the driver: its lines, written by one
writer to a temporary file and read back (every runner writes files; none
returns a PCollection to the caller)."""

import os
import tempfile
from typing import Callable, List

from csl_jax.beam import options as beam_options


def lines(opts, build: Callable) -> List[str]:
  """Runs `build(pipeline)` (a PCollection of str) under `opts`; returns
  its lines, in the file's order (sort them where order matters)."""
  beam = beam_options.beam()
  with tempfile.TemporaryDirectory() as tmp:
    prefix = os.path.join(tmp, "out")
    with beam.Pipeline(options=opts) as p:
      _ = build(p) | "Write" >> beam.io.WriteToText(
          prefix, num_shards=1, shard_name_template="")
    with open(prefix, encoding="utf-8") as f:
      return f.read().splitlines()
