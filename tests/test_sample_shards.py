"""Sharded CSL sampling (`sampling/shards.py`) and its Beam pipeline
(`sampling/beam_sampling.py`, run where apache-beam is installed)."""

import random

import pytest

from csl_jax.errors import InputError
from csl_jax.methods.csl import sample as sample_lib
from csl_jax.sampling import shards
from csl_jax.sampling.config import SampleConfig
from csl_jax.testing import models


def test_shard_sizes_split_evenly():
  assert shards.shard_sizes(10, 3) == [4, 3, 3]
  assert shards.shard_sizes(3, 3) == [1, 1, 1]
  with pytest.raises(InputError, match="--shards"):
    shards.shard_sizes(3, 4)
  with pytest.raises(InputError, match="--shards"):
    shards.shard_sizes(3, 0)


def test_shard_seeds_depend_on_run_seed_and_shard_only():
  seeds = [shards.shard_seed(7, k) for k in range(100)]
  assert len(set(seeds)) == 100
  assert seeds == [shards.shard_seed(7, k) for k in range(100)]
  assert shards.shard_seed(8, 0) != seeds[0]


def test_local_run_is_the_union_of_its_shards_in_any_order():
  # What a runner's workers do: each shard alone, in whatever order.
  model = models.random_model(models.TOY_RULES, 0, 2)
  config = SampleConfig(max_depth=4, seed=3)
  got = list(shards.sample_sharded(model, 300, 5, config))
  order = list(range(5))
  random.Random(0).shuffle(order)
  lines = []
  for shard in order:
    pairs, _ = shards.sample_shard(model, 300, 5, shard, config)
    lines.extend(f"{x}\t{y}" for x, y in pairs)
  assert got == sorted(lines)
  assert len(got) == 300
  # Another shard count is another (seeded) draw of the same size.
  assert list(shards.sample_sharded(model, 300, 4, config)) != got


def test_dedup_is_global(tmp_path):
  model = models.random_model(models.TOY_RULES, 0, 2)
  config = SampleConfig(max_depth=3, seed=1, dedup=True)
  got = list(shards.sample_sharded(model, 40, 4, config))
  assert len(got) == len(set(got))
  # The toy grammar at depth 3 has few distinct pairs: shards overlap.
  per_shard = sum(len(shards.sample_shard(model, 40, 4, k, config)[0])
                  for k in range(4))
  assert len(got) < per_shard


def test_stage_errors(tmp_path):
  model_dir = str(tmp_path / "model")
  models.random_model(models.TOY_RULES, 0, 2).save(model_dir)
  with pytest.raises(InputError, match="need --runner"):
    sample_lib.sample(str(tmp_path / "a"), model_dir, num=10,
                      pipeline_args=["--direct_num_workers=2"])
  with pytest.raises(InputError, match="--runner must be one of"):
    sample_lib.sample(str(tmp_path / "b"), model_dir, num=10,
                      runner="Nope", shards=2)


def test_stage_local_sharded_writes_sorted_samples(tmp_path):
  model_dir = str(tmp_path / "model")
  model = models.random_model(models.TOY_RULES, 0, 2)
  model.save(model_dir)
  config = SampleConfig(max_depth=4, seed=5)
  summary = sample_lib.sample(str(tmp_path / "out"), model_dir, num=50,
                              config=config, shards=3)
  with open(summary["candidates"], encoding="utf-8") as f:
    lines = f.read().splitlines()
  assert lines == list(shards.sample_sharded(model, 50, 3, config))
  assert summary["num_examples"] == 50


def test_beam_direct_runner_equals_local(tmp_path):
  pytest.importorskip("apache_beam")
  model_dir = str(tmp_path / "model")
  model = models.random_model(models.TOY_RULES, 0, 2)
  model.save(model_dir)
  for dedup in (False, True):
    config = SampleConfig(max_depth=4, seed=9, dedup=dedup)
    out = str(tmp_path / f"beam{dedup}")
    summary = sample_lib.sample(
        out, model_dir, num=200, config=config, shards=4,
        runner="DirectRunner", pipeline_args=["--direct_num_workers=2"])
    lines = []
    for path in summary["candidates"]:
      with open(path, encoding="utf-8") as f:
        lines.extend(f.read().splitlines())
    assert sorted(lines) == list(shards.sample_sharded(model, 200, 4, config))
    assert summary["num_examples"] == len(lines)


def test_runner_without_beam_is_one_clear_error(tmp_path):
  try:
    import apache_beam  # pylint: disable=g-import-not-at-top,unused-import
    pytest.skip("apache-beam is installed here")
  except ImportError:
    pass
  model_dir = str(tmp_path / "model")
  models.random_model(models.TOY_RULES, 0, 2).save(model_dir)
  with pytest.raises(InputError, match="apache-beam, which is not installed"):
    sample_lib.sample(str(tmp_path / "out"), model_dir, num=10, shards=2,
                      runner="DirectRunner")
