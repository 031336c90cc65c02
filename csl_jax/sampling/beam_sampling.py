"""CSL sampling as an Apache Beam pipeline: one element per shard (its
seed from the run seed, `shards`), each worker loads the model once and
draws its shards and writes each shard's file itself (no shuffle: memory
per worker is one shard). With dedup, each pair goes to the first shard
that drew it (the minimum shard per line, a combine), then each shard's
lines are grouped and written: a shuffle of every pair (on one machine
the DirectRunner holds it in memory). The same bytes as
`shards.sample_sharded` for the same seed and shard count, on any runner
and any number of workers.
"""

import os
from typing import Sequence

from csl_jax.beam import options as beam_options
from csl_jax.sampling import shards
from csl_jax.sampling.config import SampleConfig


def run(model_dir: str, num: int, num_shards: int, config: SampleConfig,
        out_dir: str, runner: str = "DirectRunner",
        pipeline_args: Sequence[str] = (), use_output_cfg: bool = True
        ) -> None:
  """Writes OUT_DIR/samples-SSSSS-of-NNNNN.tsv (`shards.shard_path`);
  out_dir must be writable by every worker."""
  opts = beam_options.pipeline_options(runner, pipeline_args)
  beam = beam_options.beam()
  shards.shard_sizes(num, num_shards)  # checks the counts up front

  class SampleShards(beam.DoFn):
    """Loads the model once per worker; a shard index in, (line, shard)
    out."""

    def setup(self):
      from csl_jax.model.csl_model import CSLModel  # pylint: disable=g-import-not-at-top
      self.model = CSLModel.load(model_dir)
      self.prepared = shards.prepare(self.model, config, use_output_cfg)

    def process(self, shard):
      lines, stats = shards.sample_shard(self.model, num, num_shards, shard,
                                         config, use_output_cfg,
                                         self.prepared)
      beam.metrics.Metrics.counter("csl_sample", "attempts").inc(
          int(stats["num_attempts"]))
      if not config.dedup:  # the shard is final: written here, no shuffle
        shards.write_shard(out_dir, shard, num_shards, lines)
        return
      for line in lines:
        yield line, shard

  def write(shard_lines):
    shard, lines = shard_lines
    shards.write_shard(out_dir, shard, num_shards, lines)

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
    if not os.path.exists(shards.shard_path(out_dir, shard, num_shards)):
      shards.write_shard(out_dir, shard, num_shards, [])
