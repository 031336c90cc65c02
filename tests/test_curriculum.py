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


def test_uniform_control_draws_from_every_example_at_every_step():
  """The control of a comparison of curricula: the curricula's sampler,
  the whole pool from step 0 (and no schedule in its key)."""
  ranks = curriculum.ranks("uniform", PAIRS, seed=0)
  for step in (0, 1, 500, 999):
    pool = np.flatnonzero(ranks < curriculum.available_fraction(step, 1000))
    assert list(pool) == list(range(len(PAIRS)))
  # A batch larger than half the pool at step 0: only possible with all.
  batch = curriculum.batch_indices(ranks, 0, 1000, 11, seed=0)
  assert sorted(batch) == list(range(11))
  assert curriculum.pool_curve(ranks, 1000) == {
      "num_examples": 11, "share_at_step": {"0": 1.0, "250": 1.0,
                                            "500": 1.0, "750": 1.0},
      "all_available_from_step": 0}
  key = train_key(TrainConfig(curriculum="uniform", curriculum_start=0.5))
  assert key["curriculum"] == "uniform" and "curriculum_start" not in key


def test_pool_curve_by_hand():
  # Ranks 0, .2, .4, .6, .8 with one primitive-free example (-1), S = 1000:
  # fraction max(.2, s / 800): 20% of the ranks plus the free one at step 0;
  # at 250 (.3125) two verbs; at 500 (.625) four; the last (.8) enters once
  # s / 800 > .8, i.e. at step 641.
  ranks = curriculum.primitive_ranks(PAIRS, seed=0)
  curve = curriculum.pool_curve(ranks, 1000)
  assert curve["share_at_step"] == {"0": round(3 / 11, 4),
                                    "250": round(5 / 11, 4),
                                    "500": round(9 / 11, 4), "750": 1.0}
  assert curve["all_available_from_step"] == 641
  # One primitive in most examples: when it comes first (seed 1) the pool
  # is nearly whole at step 0; when it comes last (seed 0), a ninth.
  skewed = [(f"walk {w}", "WALK") for w in "abcdefgh"] + [("jump", "JUMP")]
  first = [curriculum.pool_curve(curriculum.primitive_ranks(
      skewed, seed=seed), 100)["share_at_step"]["0"] for seed in (0, 1)]
  assert first == [round(1 / 9, 4), round(8 / 9, 4)]


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
