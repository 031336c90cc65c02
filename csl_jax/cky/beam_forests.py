"""The fit's pair forests as an Apache Beam pipeline: one element per
shard, each worker builds its range's forests and writes the shard's array
file itself (`forest_shards.build_shard`; no shuffle of forests). The
grammar's arrays and the pairs travel with the transform; `directory` must
be writable by every worker: shared, or a URL (`gs://...`). The same files
as the local build.
"""

from typing import Sequence

from csl_jax.beam import options as beam_options
from csl_jax.cky import forest_shards
from csl_jax.cky.grammar_arrays import QCFGArrays


def run(grammar: QCFGArrays, pairs, shards: Sequence[int], num_shards: int,
        directory: str, runner: str = "DirectRunner",
        pipeline_args: Sequence[str] = ()) -> None:
  opts = beam_options.pipeline_options(runner, pipeline_args)
  beam = beam_options.beam()
  pairs = [(tuple(x), tuple(y)) for x, y in pairs]

  def build(shard):
    forest_shards.build_shard(grammar, pairs, shard, num_shards, directory)

  with beam.Pipeline(options=opts) as p:
    _ = (p
         | "Shards" >> beam.Create(list(shards))
         | "Spread" >> beam.Reshuffle()
         | "Build" >> beam.Map(build))
