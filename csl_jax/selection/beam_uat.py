"""UAT's templating as an Apache Beam pipeline: the pool in contiguous
shards, each worker abstracting its examples' outputs into templates
(`diversity.featurize`, structure off), the driver numbering the templates
by their first example and drawing (`uat.uat_indices`, sequential and
cheap). Templates are numbered in pool order both ways, so the picks equal
the local `UAT.select`'s on any runner and shard count. The pool travels
in the elements, a shard each (the workers parallelize the parsing; a
pool past the driver's memory is not handled here).
"""

import json
from typing import List, Sequence, Tuple

import numpy as np

from csl_jax.beam import collect
from csl_jax.beam import options as beam_options
from csl_jax.data.tsv import Example
from csl_jax.errors import InputError
from csl_jax.selection import diversity
from csl_jax.selection import templates


Shard = Tuple[List[int], List[int], List[str]]


def shard_templates(pool: Sequence[Example], lo: int, hi: int,
                    abstraction: str) -> Shard:
  """The shard's usable examples (pool indices ascending), their template
  ids local to the shard (numbered by first example) and the templates'
  names; examples the abstraction cannot read are left out."""
  if lo >= hi:
    return [], [], []
  try:
    feats = diversity.featurize(pool[lo:hi], abstraction, structure=False)
  except InputError:  # no example of this shard parses: none usable
    return [], [], []
  usable = np.flatnonzero(feats.valid[feats.query_of])
  local, first = np.unique(feats.template_of[feats.query_of[usable]],
                           return_inverse=True)
  return ((usable + lo).tolist(), first.tolist(),
          [feats.templates[int(t)] for t in local])


def number_templates(shards: Sequence[Shard]
                     ) -> Tuple[np.ndarray, np.ndarray]:
  """(usable pool indices ascending, dense template ids numbered by each
  template's first usable example) of the shards' results in any order."""
  ids = {}
  usable, dense = [], []
  for index, local, names in sorted((s for s in shards if s[0]),
                                    key=lambda s: s[0][0]):
    glob = np.fromiter((ids.setdefault(n, len(ids)) for n in names),
                       np.int64, len(names))
    usable.append(np.asarray(index, np.int64))
    dense.append(glob[np.asarray(local, np.int64)])
  if not usable:
    return np.zeros(0, np.int64), np.zeros(0, np.int64)
  return np.concatenate(usable), np.concatenate(dense)


def template_ids(pool: Sequence[Example], abstraction: str,
                 num_shards: int, runner: str,
                 pipeline_args: Sequence[str] = ()
                 ) -> Tuple[np.ndarray, np.ndarray]:
  """`number_templates` of the whole pool, its shards abstracted on
  `runner`."""
  opts = beam_options.pipeline_options(runner, pipeline_args)
  beam = beam_options.beam()
  bounds = [len(pool) * s // num_shards for s in range(num_shards + 1)]
  # Each element carries its shard's abstracted side as one string (Beam's
  # coders move a string at once, a list of pairs object by object), and
  # comes back as one JSON string: no worker holds the pool.
  field = templates.get(abstraction).field
  elements = [(bounds[s], "\n".join(getattr(ex, field)
                                    for ex in pool[bounds[s]:bounds[s + 1]]))
              for s in range(num_shards)]

  def shard(element):
    lo, text = element
    rows = [Example(t, t) for t in text.split("\n")] if text else []
    index, local, names = shard_templates(rows, 0, len(rows), abstraction)
    return json.dumps([[i + lo for i in index], local, names])

  return number_templates([json.loads(line) for line in collect.lines(
      opts, lambda p: (p
                       | "Shards" >> beam.Create(elements)
                       | "Spread" >> beam.Reshuffle()
                       # One element per shard.
                       | "Abstract" >> beam.Map(shard)))])
