"""Distributed CMaxEnt as an Apache Beam pipeline: one element per shard
of the queries, the exact greedy within each shard on the workers, the
exact greedy over the shards' winners at the end — the same picks as
`cmaxent.sharded_greedy_queries` on any runner. The pool's features are
computed once and shipped with the transform (the workers parallelize the
greedy's CPU; featurizing past one machine's memory is not done here).
"""

import json
from typing import Sequence

import numpy as np

from csl_jax.beam import collect
from csl_jax.beam import options as beam_options
from csl_jax.selection import cmaxent
from csl_jax.selection import diversity


def sharded_greedy_queries(features: diversity.PoolFeatures, k: int,
                           num_shards: int, tol: float, runner: str,
                           pipeline_args: Sequence[str] = ()) -> np.ndarray:
  """`cmaxent.sharded_greedy_queries` on `runner`."""
  opts = beam_options.pipeline_options(runner, pipeline_args)
  beam = beam_options.beam()
  # pylint: disable-next=protected-access
  matrix = cmaxent._matrix(features)
  avail = features.available()
  shards = cmaxent.shard_of_queries(len(avail), num_shards)

  def shard_winners(s):
    return cmaxent.shard_greedy(matrix, avail, shards[s], k, tol).tolist()

  def final(winners):
    picks = cmaxent.final_greedy(matrix, np.asarray(winners, np.int64), k,
                                 tol)
    return json.dumps(picks.tolist())

  out = collect.lines(opts, lambda p: (
      p
      | "Shards" >> beam.Create(list(range(num_shards)))
      | "Spread" >> beam.Reshuffle()
      | "ShardGreedy" >> beam.FlatMap(shard_winners)
      # Winners in shard order would not matter: the final greedy sees each
      # query's multiplicity only.
      | "Gather" >> beam.combiners.ToList()
      | "FinalGreedy" >> beam.Map(final)))
  return np.asarray(json.loads(out[0]), np.int64)
