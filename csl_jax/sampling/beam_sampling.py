"""CSL sampling as an Apache Beam pipeline: one element per shard (its
seed from the run seed, `shards`), each worker loads the model once and
draws its shards, `Distinct` for global deduplication, sharded text
output. The same pairs as `shards.sample_sharded` for the same seed and
shard count, on any runner and any number of workers.
"""

import os
from typing import Optional, Sequence

from csl_jax.beam import options as beam_options
from csl_jax.sampling import shards
from csl_jax.sampling.config import SampleConfig


def run(model_dir: str, num: int, num_shards: int, config: SampleConfig,
        out_prefix: str, runner: str = "DirectRunner",
        pipeline_args: Sequence[str] = (), use_output_cfg: bool = True,
        num_output_shards: Optional[int] = None) -> None:
  """Writes OUT_PREFIX-SSSSS-of-NNNNN.tsv (the pairs, TSV, in no order;
  `num_output_shards` None: the runner decides)."""
  opts = beam_options.pipeline_options(runner, pipeline_args)
  beam = beam_options.beam()
  shards.shard_sizes(num, num_shards)  # checks the counts up front

  class SampleShards(beam.DoFn):
    """Loads the model once per worker; a shard index in, its pairs out."""

    def setup(self):
      from csl_jax.model.csl_model import CSLModel  # pylint: disable=g-import-not-at-top
      self.model = CSLModel.load(model_dir)
      self.prepared = shards.prepare(self.model, config, use_output_cfg)

    def process(self, shard):
      pairs, stats = shards.sample_shard(self.model, num, num_shards, shard,
                                         config, use_output_cfg,
                                         self.prepared)
      beam.metrics.Metrics.counter("csl_sample", "attempts").inc(
          int(stats["num_attempts"]))
      for x, y in pairs:
        yield f"{x}\t{y}"

  with beam.Pipeline(options=opts) as p:
    lines = (p
             | "Shards" >> beam.Create(list(range(num_shards)))
             | "Spread" >> beam.Reshuffle()
             | "Sample" >> beam.ParDo(SampleShards()))
    if config.dedup:
      lines = lines | "Distinct" >> beam.Distinct()
    _ = lines | "Write" >> beam.io.WriteToText(
        os.fspath(out_prefix), file_name_suffix=".tsv",
        num_shards=num_output_shards or 0)
