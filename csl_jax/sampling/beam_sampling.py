"""CSL sampling as an Apache Beam pipeline: one element per shard (its
seed from the run seed, `shards`), each worker loads the model once and
draws its shards and writes each shard's file itself (no shuffle: memory
per worker is one shard). With dedup, each pair goes to the first shard
that drew it (the minimum shard per line, a combine), then each shard's
lines are grouped and written: a shuffle of every pair (on one machine
the DirectRunner holds it in memory). The same bytes as
`shards.sample_sharded` for the same seed and shard count, on any runner
and any number of workers. The model's files travel with the pipeline (no
worker needs the model directory) and the shard files go where
`shard_dir` says, a URL (`gs://...`) included.
"""

import os
import tempfile
from typing import Sequence

from csl_jax.beam import file_urls
from csl_jax.beam import options as beam_options
from csl_jax.errors import InputError
from csl_jax.sampling import shards
from csl_jax.sampling.config import SampleConfig


def run(model_dir: str, num: int, num_shards: int, config: SampleConfig,
        shard_dir: str, runner: str = "DirectRunner",
        pipeline_args: Sequence[str] = (), use_output_cfg: bool = True
        ) -> None:
  """Writes SHARD_DIR/samples-SSSSS-of-NNNNN.tsv (`shards.shard_path`);
  shard_dir: a directory every worker can write, or a URL."""
  opts = beam_options.pipeline_options(runner, pipeline_args)
  beam = beam_options.beam()
  shards.shard_sizes(num, num_shards)  # checks the counts up front
  from csl_jax.model import csl_model  # pylint: disable=g-import-not-at-top
  for name in csl_model.FILES:  # the driver says what is missing
    if not os.path.isfile(os.path.join(model_dir, name)):
      raise InputError(f"not a fitted model directory (no {name}); run "
                       "`csl-jax fit` first", model_dir)
  model_files = {}  # what CSLModel.load reads, not the fit's checkpoint
  for name in csl_model.FILES + ("output.cfg",):
    path = os.path.join(model_dir, name)
    if os.path.isfile(path):
      with open(path, "rb") as f:
        model_files[name] = f.read()

  class SampleShards(beam.DoFn):
    """Loads the model once per worker; a shard index in, (line, shard)
    out."""

    def setup(self):
      with tempfile.TemporaryDirectory() as local:
        for name, data in model_files.items():
          with open(os.path.join(local, name), "wb") as f:
            f.write(data)
        self.model = csl_model.CSLModel.load(local)
      self.prepared = shards.prepare(self.model, config, use_output_cfg)

    def process(self, shard):
      lines, stats = shards.sample_shard(self.model, num, num_shards, shard,
                                         config, use_output_cfg,
                                         self.prepared)
      beam.metrics.Metrics.counter("csl_sample", "attempts").inc(
          int(stats["num_attempts"]))
      if not config.dedup:  # the shard is final: written here, no shuffle
        shards.write_shard(shard_dir, shard, num_shards, lines)
        return
      for line in lines:
        yield line, shard

  def write(shard_lines):
    shard, lines = shard_lines
    shards.write_shard(shard_dir, shard, num_shards, lines)

  with beam.Pipeline(options=opts) as p:
    drawn = (p
             | "Shards" >> beam.Create(list(range(num_shards)))
             | "Spread" >> beam.Reshuffle()
             | "Sample" >> beam.ParDo(SampleShards()))
    if config.dedup:
      _ = (drawn
           | "FirstShard" >> beam.CombinePerKey(min)
           | "ByShard" >> beam.Map(lambda kv: (kv[1], kv[0]))
           | "Group" >> beam.GroupByKey()
           | "Write" >> beam.Map(write))
  for shard in range(num_shards):  # a shard dedup left empty: no group
    if not file_urls.exists(shards.shard_path(shard_dir, shard, num_shards)):
      shards.write_shard(shard_dir, shard, num_shards, [])
