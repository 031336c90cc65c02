"""A pipeline's small result back to the driver: its lines, written by one
writer to a temporary file and read back (every runner writes files; none
returns a PCollection to the caller). The file goes under the pipeline's
`--temp_location` where that is a URL (Dataflow's workers share no disk
with the driver), else into a local temporary directory."""

import os
import tempfile
import uuid
from typing import Callable, List

from csl_jax.beam import file_urls
from csl_jax.beam import options as beam_options


def _remote_temp(opts) -> str:
  from apache_beam.options.pipeline_options import GoogleCloudOptions  # pylint: disable=g-import-not-at-top
  temp = opts.view_as(GoogleCloudOptions).temp_location
  return temp if temp and file_urls.is_url(temp) else ""


def lines(opts, build: Callable) -> List[str]:
  """Runs `build(pipeline)` (a PCollection of str) under `opts`; returns
  its lines, in the file's order (sort them where order matters)."""
  beam = beam_options.beam()
  remote = _remote_temp(opts)
  with tempfile.TemporaryDirectory() as tmp:
    prefix = (file_urls.join(remote, f"csl_jax-collect-{uuid.uuid4().hex}")
              if remote else os.path.join(tmp, "out"))
    with beam.Pipeline(options=opts) as p:
      _ = build(p) | "Write" >> beam.io.WriteToText(
          prefix, num_shards=1, shard_name_template="")
    try:
      return "".join(file_urls.read_lines(prefix)).splitlines()
    finally:
      if remote:
        file_urls.delete([prefix])
