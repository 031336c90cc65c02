"""Repetition curricula (Zhou et al. 2023 §4.3, Table 4): the examples a
step may draw grow with the step, so early examples are repeated more.

At step s of S the available fraction of the pool is
  max(start, min(1, s / (end * S)))
(their `curriculum_setter.py`, `init_training_portion` 0.2 and
`curriculum_ending_time` 0.8: growth starts at 0.16 S). Every example has a
rank in [0, 1); it is available while its rank is below the fraction.

* example: ranks are a seeded random order of the examples.
* primitive: the training set's primitives (the Eq. 1 lexicon units,
  `csl_jax.data.lexicon`, a task-agnostic stand-in for the paper's entity
  names) in a seeded random order; an example's rank is that of its first
  primitive, so whole clusters of examples arrive together. Examples with
  no primitive are always available.
* uniform: every example is available at every step: the control of a
  comparison of curricula. It draws its batches as the curricula do, so
  only the schedule differs between the rows ("none" reads the shuffled
  SeqIO stream, batched by target length: another sampler).

A step's batch is drawn from the available examples by a generator seeded
with (seed, step): the same at any resume, without replaying the steps
before.
"""

from typing import Sequence, Tuple

import numpy as np

KINDS = ("none", "uniform", "example", "primitive")


def available_fraction(step: int, num_steps: int, start: float = 0.2,
                       end: float = 0.8) -> float:
  return max(start, min(1.0, step / (end * num_steps)))


def example_ranks(num: int, seed: int) -> np.ndarray:
  ranks = np.empty(num, np.float64)
  ranks[np.random.default_rng([seed, 1]).permutation(num)] = (
      np.arange(num) / num)
  return ranks


def primitive_ranks(pairs: Sequence[Tuple[str, str]],
                    seed: int) -> np.ndarray:
  from csl_jax.data import lexicon  # pylint: disable=g-import-not-at-top
  found = sorted({v for v, _ in lexicon.lexicon(pairs)})
  order = np.random.default_rng([seed, 2]).permutation(len(found))
  rank_of = {v: order[i] / max(1, len(found)) for i, v in enumerate(found)}
  return np.array([min((rank_of[t] for t in x.split() if t in rank_of),
                       default=-1.0) for x, _ in pairs])


def ranks(kind: str, pairs: Sequence[Tuple[str, str]],
          seed: int) -> np.ndarray:
  if kind == "example":
    return example_ranks(len(pairs), seed)
  if kind == "primitive":
    return primitive_ranks(pairs, seed)
  if kind == "uniform":  # below any available fraction (> 0)
    return np.full(len(pairs), -1.0)
  raise ValueError(f"curriculum {kind!r}: one of {', '.join(KINDS[1:])}")


def pool_curve(rank: np.ndarray, num_steps: int, start: float = 0.2,
               end: float = 0.8) -> dict:
  """How the available pool grows: its share of the examples at step 0 and
  at each quarter of the steps, and the first step from which every
  example is available. A few primitives that cover most examples make a
  curriculum that is hardly one; this says so per run."""
  fractions = np.array([available_fraction(s, num_steps, start, end)
                        for s in range(num_steps)])
  below = np.searchsorted(np.sort(rank), fractions, side="left")
  share = below / len(rank) if len(rank) else np.ones(num_steps)
  full = np.flatnonzero(share >= 1.0)
  return {"num_examples": int(len(rank)),
          "share_at_step": {str(s): round(float(share[s]), 4) for s in
                            sorted({0, num_steps // 4, num_steps // 2,
                                    3 * num_steps // 4})},
          "all_available_from_step": int(full[0]) if len(full) else None}


def batch_indices(rank: np.ndarray, step: int, num_steps: int,
                  batch_size: int, seed: int, start: float = 0.2,
                  end: float = 0.8) -> np.ndarray:
  """The examples of step `step`'s batch: distinct while the available
  pool has enough of them."""
  pool = np.flatnonzero(rank < available_fraction(step, num_steps, start,
                                                  end))
  rng = np.random.default_rng([seed, 3, step])
  return np.sort(rng.choice(pool, batch_size,
                            replace=len(pool) < batch_size))
