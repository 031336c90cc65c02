"""GECA's partitioned index as an Apache Beam pipeline: stage E maps the
sequence shards, every later stage of `partitioned.STAGES` is a
`CoGroupByKey` of its inputs by hash partition followed by the stage's
function, so a worker holds one partition of one stage at a time. The
elements are whole column tables (one per shard or partition and input),
not rows: Beam moves a few hundred numpy tables instead of millions of
tuples. Stages T and C write their tables and every stage its statistics
into `ctx.directory`, which every worker must reach (a shared directory or a
URL); the driver reads them back (`partitioned.Written`,
`partitioned.read_stats`). The same files as `partitioned.run_local`.
"""

from typing import Dict, Sequence

from csl_jax.beam import options as beam_options
from csl_jax.methods.geca import partitioned


def run(ctx: partitioned.Context, runner: str = "DirectRunner",
        pipeline_args: Sequence[str] = ()) -> None:
  opts = beam_options.pipeline_options(runner, pipeline_args)
  beam = beam_options.beam()
  shards = list(enumerate(partitioned.shards_of(len(ctx.offsets) - 1,
                                                ctx.num_partitions)))

  def enumerate_shard(shard):
    return list(partitioned.stage_e(ctx, *shard))

  def apply(fn):
    def stage(element):
      part, groups = element
      return list(fn(ctx, part, {n: list(v) for n, v in groups.items()}))
    return stage

  def named(name):
    return lambda rows: [(p, t) for n, p, t in [rows] if n == name]

  with beam.Pipeline(options=opts) as p:
    produced = [p
                | "Shards" >> beam.Create(shards)
                | "Spread" >> beam.Reshuffle()
                | "E" >> beam.FlatMap(enumerate_shard)]
    for stage, fn, names in partitioned.STAGES:
      inputs: Dict[str, object] = {}
      for name in names:
        parts = [rows | f"{stage}/{k}/{name}" >> beam.FlatMap(named(name))
                 for k, rows in enumerate(produced)]
        inputs[name] = parts | f"{stage}/{name}" >> beam.Flatten()
      produced.append(inputs
                      | f"{stage}/Join" >> beam.CoGroupByKey()
                      | stage >> beam.FlatMap(apply(fn)))
