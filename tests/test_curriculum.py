"""Repetition curricula (csl_jax/seq2seq/curriculum.py): the schedule at the
points of Zhou et al.'s `curriculum_setter.py`, example and primitive pools
counted by hand, batches that depend on (seed, step) alone."""

import numpy as np
import pytest

from csl_jax.errors import InputError
from csl_jax.seq2seq import curriculum
from csl_jax.seq2seq.config import TrainConfig
from csl_jax.seq2seq.config import train_key


@pytest.mark.parametrize("step,fraction", [(0, 0.2), (160, 0.2),
                                           (500, 0.625), (800, 1.0),
                                           (1000, 1.0)])
def test_available_fraction_at_the_schedule_points(step, fraction):
  assert curriculum.available_fraction(step, 1000) == pytest.approx(fraction)


def test_example_pool_grows_from_a_fifth_to_all():
  ranks = curriculum.example_ranks(100, seed=0)
  assert sorted(ranks) == [i / 100 for i in range(100)]
  first = set()
  for step in range(0, 160, 7):  # the first 16%: the same 20 examples
    batch = curriculum.batch_indices(ranks, step, 1000, 8, seed=0)
    assert len(set(batch)) == 8
    first.update(batch)
  assert first <= set(np.flatnonzero(ranks < 0.2))
  assert len(first) > 15
  pool = lambda step: set(np.flatnonzero(
      ranks < curriculum.available_fraction(step, 1000)))
  assert len(pool(0)) == 20 and len(pool(500)) == 63 and len(pool(800)) == 100
  assert pool(0) < pool(500) < pool(800)  # examples added, never removed
  # Another seed: another order.
  assert not np.array_equal(ranks, curriculum.example_ranks(100, seed=1))


# Five primitives, two examples each; one example has none.
PAIRS = [(f"{v} {m}", " ".join([v.upper()] * n))
         for v in ("walk", "jump", "run", "look", "swim")
         for m, n in (("once", 1), ("twice", 2))] + [("once", "NOTHING")]


def test_primitive_pool_adds_whole_clusters():
  ranks = curriculum.primitive_ranks(PAIRS, seed=0)
  # Eq. 1 finds the five verbs (once/twice occur with no single action).
  assert sorted(set(ranks)) == [-1.0, 0.0, 0.2, 0.4, 0.6, 0.8]
  assert ranks[-1] == -1.0  # no primitive: always available
  for step in (0, 100, 400, 600, 800):
    pool = np.flatnonzero(ranks < curriculum.available_fraction(step, 1000))
    verbs = {PAIRS[i][0].split()[0] for i in pool} - {"once"}
    # A verb's examples arrive together, with the primitive-free one.
    assert sorted(pool) == sorted(
        [i for i, (x, _) in enumerate(PAIRS) if x.split()[0] in verbs]
        + [len(PAIRS) - 1])
    assert len(verbs) == {0: 1, 100: 1, 400: 3, 600: 4, 800: 5}[step]


def test_batches_depend_on_seed_and_step_only():
  ranks = curriculum.example_ranks(50, seed=3)
  a = [curriculum.batch_indices(ranks, s, 100, 4, seed=3) for s in range(100)]
  b = [curriculum.batch_indices(ranks, s, 100, 4, seed=3)
       for s in range(40, 100)]
  assert all(np.array_equal(x, y) for x, y in zip(a[40:], b))
  c = curriculum.batch_indices(ranks, 40, 100, 4, seed=4)
  assert not np.array_equal(a[40], c)
  # A pool smaller than the batch repeats examples.
  small = curriculum.batch_indices(ranks, 0, 100, 16, seed=3)
  assert len(small) == 16 and set(small) <= set(np.flatnonzero(ranks < 0.2))


def test_config_and_keys():
  with pytest.raises(InputError, match="curriculum"):
    TrainConfig(curriculum="zipf")
  with pytest.raises(InputError, match="curriculum_start"):
    TrainConfig(curriculum="example", curriculum_start=0.0)
  # Zero would divide by zero after the first step; negative makes no run.
  for field, value, message in (("checkpoint_every", 0, "at least 1"),
                                ("log_every", 0, "at least 1"),
                                ("num_steps", 0, "at least 1"),
                                ("warmup_steps", -1, "not be negative")):
    with pytest.raises(InputError, match=f"TrainConfig.{field}: .*{message}"):
      TrainConfig(**{field: value})
  # Off: the key has none of its fields (older runs keep their keys).
  assert "curriculum" not in train_key(TrainConfig())
  assert "log_every" not in train_key(TrainConfig())
  key = train_key(TrainConfig(curriculum="example"))
  assert (key["curriculum"], key["curriculum_start"],
          key["curriculum_end"]) == ("example", 0.2, 0.8)
