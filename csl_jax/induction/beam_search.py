"""The induction's candidate search of one step as an Apache Beam pipeline
(issue 16): the step's rules in chunks, each worker proposing the best
candidates of its chunk's rules with their costs (`Inducer._proposals_of`,
pure given the step's state), the driver merging them in rule order as it
merges its forked workers': the same grammar on any runner and any number
of workers. The step's state travels with the transform (pickled by Beam,
a few MB on SCAN); proposals come back as text (rule, cost) lines.
"""

import json
from typing import List, Sequence, Tuple

from csl_jax.beam import collect
from csl_jax.beam import options as beam_options
from csl_jax.qcfg.rules import Rule, format_rule, parse_rules


def propose(state, chunks: Sequence[Sequence[int]], runner: str,
            pipeline_args: Sequence[str] = ()
            ) -> List[Tuple[int, List[Tuple[Rule, float]]]]:
  """(rule index, [(candidate, cost)]) of every rule of `chunks`; `state`
  is (inducer, unifier, partners, present) of the step."""
  opts = beam_options.pipeline_options(runner, pipeline_args)
  beam = beam_options.beam()
  chunks = [list(c) for c in chunks if len(c)]

  def work(chunk):
    inducer, unifier, partners, present = state
    for i in chunk:
      # pylint: disable-next=protected-access
      scored = inducer._proposals_of(unifier, i, partners[i], present)
      yield json.dumps([i, [[format_rule(r), c] for r, c in scored]])

  out = collect.lines(opts, lambda p: (
      p
      | "Chunks" >> beam.Create(chunks)
      | "Spread" >> beam.Reshuffle()
      | "Propose" >> beam.FlatMap(work)))
  found = []
  for line in out:
    i, scored = json.loads(line)
    rules = parse_rules("\n".join(r for r, _ in scored)) if scored else []
    found.append((i, [(r, c) for r, (_, c) in zip(rules, scored, strict=True)]))
  return found
