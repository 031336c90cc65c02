"""Sharded CSL sampling (`sampling/shards.py`) and its Beam pipeline
(`sampling/beam_sampling.py`, run where apache-beam is installed)."""

import os
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
  # The kernel keeps 32 bits of each round's seed: no round of one shard
  # may get another shard's (independent shard seeds collided for some run
  # seeds, e.g. 7375: shard 416's rounds 0-1 were shard 418's 1-2).
  from csl_jax.sampling import sampler  # pylint: disable=g-import-not-at-top
  for run_seed in (0, 7375, 2**31 + 5):
    kernel = {(shards.shard_seed(run_seed, k) * sampler.ROUND_SEED_MULTIPLIER
               + r) % 2**32 for k in range(1000) for r in range(50)}
    assert len(kernel) == 1000 * 50, run_seed


def _read(path):
  with open(path, encoding="utf-8") as f:
    return f.read()


def test_local_run_is_its_shards_drawn_alone(tmp_path):
  # What a runner's workers do: each shard alone, in whatever order.
  model = models.random_model(models.TOY_RULES, 0, 2)
  config = SampleConfig(max_depth=4, seed=3)
  assert shards.sample_sharded(model, 300, 5, config, str(tmp_path)) == 300
  order = list(range(5))
  random.Random(0).shuffle(order)
  for shard in order:
    lines, _ = shards.sample_shard(model, 300, 5, shard, config)
    assert _read(shards.shard_path(str(tmp_path), shard, 5)) == "".join(
        line + "\n" for line in sorted(lines))
  # Another shard count is another (seeded) draw of the same size.
  other = tmp_path / "other"
  shards.sample_sharded(model, 300, 4, config, str(other))
  assert (_read(shards.concatenate(str(other), 4)[0])
          != _read(shards.concatenate(str(tmp_path), 5)[0]))


def test_dedup_keeps_a_pair_in_the_first_shard_that_drew_it(tmp_path):
  model = models.random_model(models.TOY_RULES, 0, 2)
  config = SampleConfig(max_depth=3, seed=1, dedup=True)
  total = shards.sample_sharded(model, 40, 4, config, str(tmp_path))
  lines = _read(shards.concatenate(str(tmp_path), 4)[0]).splitlines()
  assert len(lines) == total == len(set(lines))
  drawn = [set(shards.sample_shard(model, 40, 4, k, config)[0])
           for k in range(4)]
  # The toy grammar at depth 3 has few distinct pairs: shards overlap.
  assert sum(map(len, drawn)) > total
  for k in range(4):
    kept = set(_read(shards.shard_path(str(tmp_path), k, 4)).splitlines())
    assert kept == drawn[k] - set().union(*drawn[:k])


def test_stage_errors(tmp_path):
  model_dir = str(tmp_path / "model")
  models.random_model(models.TOY_RULES, 0, 2).save(model_dir)
  with pytest.raises(InputError, match="need --runner"):
    sample_lib.sample(str(tmp_path / "a"), model_dir, num=10,
                      pipeline_args=["--direct_num_workers=2"])
  with pytest.raises(InputError, match="--runner must be one of"):
    sample_lib.sample(str(tmp_path / "b"), model_dir, num=10,
                      runner="Nope", shards=2)
  with pytest.raises(InputError, match="--shards"):  # not one shard, silently
    sample_lib.sample(str(tmp_path / "c"), model_dir, num=10, shards=0)
  (tmp_path / "afile").write_text("")
  with pytest.raises(InputError, match="afile: is a file, not a directory"):
    sample_lib.sample(str(tmp_path / "d"), model_dir, num=10, shards=2,
                      shard_dir=str(tmp_path / "afile"))


def test_stage_local_sharded(tmp_path):
  model_dir = str(tmp_path / "model")
  model = models.random_model(models.TOY_RULES, 0, 2)
  model.save(model_dir)
  config = SampleConfig(max_depth=4, seed=5)
  summary = sample_lib.sample(str(tmp_path / "out"), model_dir, num=50,
                              config=config, shards=3)
  shards.sample_sharded(model, 50, 3, config, str(tmp_path / "direct"))
  assert _read(summary["candidates"]) == _read(
      shards.concatenate(str(tmp_path / "direct"), 3)[0])
  assert summary["num_examples"] == 50
  # A rerun with fewer shards leaves no stale shard files behind.
  summary = sample_lib.sample(str(tmp_path / "out"), model_dir, num=50,
                              config=config, shards=2)
  assert sorted(os.listdir(tmp_path / "out")) == [
      "samples-00000-of-00002.tsv", "samples-00001-of-00002.tsv",
      "samples.tsv"]


def test_beam_direct_runner_writes_the_same_bytes(tmp_path):
  pytest.importorskip("apache_beam")
  model_dir = str(tmp_path / "model")
  model = models.random_model(models.TOY_RULES, 0, 2)
  model.save(model_dir)
  for dedup in (False, True):
    config = SampleConfig(max_depth=3, seed=9, dedup=dedup)
    beam_dir, local_dir = tmp_path / f"beam{dedup}", tmp_path / f"loc{dedup}"
    summary = sample_lib.sample(
        str(beam_dir), model_dir, num=200, config=config, shards=4,
        runner="DirectRunner", pipeline_args=["--direct_num_workers=2"])
    shards.sample_sharded(model, 200, 4, config, str(local_dir))
    for k in range(4):
      assert (_read(shards.shard_path(str(beam_dir), k, 4))
              == _read(shards.shard_path(str(local_dir), k, 4)))
    assert summary["num_examples"] == len(
        _read(summary["candidates"]).splitlines())


@pytest.mark.parametrize("flags, message", [
    ({"runner": "DirectRunner"}, "apache-beam, which is not installed"),
    ({"shard_dir": "gs://bucket/run"}, "a URL path needs apache-beam")])
def test_beam_flags_without_beam_are_one_clear_error(tmp_path, flags,
                                                     message):
  try:
    import apache_beam  # pylint: disable=g-import-not-at-top,unused-import
    pytest.skip("apache-beam is installed here")
  except ImportError:
    pass
  model_dir = str(tmp_path / "model")
  models.random_model(models.TOY_RULES, 0, 2).save(model_dir)
  with pytest.raises(InputError, match=message):
    sample_lib.sample(str(tmp_path / "out"), model_dir, num=10, shards=2,
                      **flags)


def test_shard_dir_elsewhere_same_samples(tmp_path):
  model_dir = str(tmp_path / "model")
  models.random_model(models.TOY_RULES, 0, 2).save(model_dir)
  config = SampleConfig(max_depth=4, seed=5)
  a = sample_lib.sample(str(tmp_path / "a"), model_dir, num=50,
                        config=config, shards=3)
  b = sample_lib.sample(str(tmp_path / "b"), model_dir, num=50,
                        config=config, shards=3,
                        shard_dir=str(tmp_path / "shards"))
  assert _read(a["candidates"]) == _read(b["candidates"])
  assert sorted(os.listdir(tmp_path / "b")) == ["samples.tsv"]
  assert len(os.listdir(tmp_path / "shards")) == 3
  with pytest.raises(InputError, match="--shard_dir needs --shards"):
    sample_lib.sample(str(tmp_path / "c"), model_dir, num=5,
                      shard_dir=str(tmp_path / "s"))


def test_shards_in_an_object_store_locally_and_on_beam(tmp_path):
  pytest.importorskip("apache_beam")
  import fake_object_store  # pylint: disable=g-import-not-at-top
  fake_object_store.FakeObjectStore.root = str(tmp_path / "store")
  model_dir = str(tmp_path / "model")
  models.random_model(models.TOY_RULES, 0, 2).save(model_dir)
  config = SampleConfig(max_depth=3, seed=9, dedup=True)
  want = sample_lib.sample(str(tmp_path / "plain"), model_dir, num=200,
                           config=config, shards=4)
  for runner in (None, "DirectRunner"):
    url = f"fakeobj://bucket/{runner}"
    got = sample_lib.sample(str(tmp_path / f"out{runner}"), model_dir,
                            num=200, config=config, shards=4, runner=runner,
                            shard_dir=url)
    assert _read(got["candidates"]) == _read(want["candidates"])
    assert got["shard_files"][0] == url + "/samples-00000-of-00004.tsv"
    stored = tmp_path / "store" / "bucket" / str(runner)
    assert sorted(os.listdir(stored)) == [
        f"samples-{k:05d}-of-00004.tsv" for k in range(4)]
    # A rerun with fewer shards deletes the old objects first.
    sample_lib.sample(str(tmp_path / f"out{runner}"), model_dir, num=200,
                      config=config, shards=2, runner=runner, shard_dir=url)
    assert len(os.listdir(stored)) == 2


def test_a_failed_url_write_leaves_nothing(tmp_path):
  pytest.importorskip("apache_beam")
  import fake_object_store  # pylint: disable=g-import-not-at-top
  from csl_jax.beam import file_urls  # pylint: disable=g-import-not-at-top
  fake_object_store.FakeObjectStore.root = str(tmp_path / "store")
  url = "fakeobj://bucket/x.tsv"

  def lines():
    yield "a\n"
    raise RuntimeError("worker lost")

  with pytest.raises(RuntimeError):
    file_urls.write_text(url, lines())
  assert not file_urls.exists(url)
  assert file_urls.matching("fakeobj://bucket", "*") == []
  file_urls.write_text(url, ["a\n", "b\n"])
  file_urls.write_text(url, ["c\n"])  # replaced whole
  assert list(file_urls.read_lines(url)) == ["c\n"]


def test_sampling_says_how_far_its_intersection_and_draws_are(
    tmp_path, monkeypatch, caplog):
  """`sample` was quiet for its whole run (COGS: 6 s of intersection, then
  the draws): now a line per tenth of each, and of the shards."""
  # pylint: disable=g-import-not-at-top
  from csl_jax import progress
  from csl_jax.model.csl_model import CSLModel
  # pylint: enable=g-import-not-at-top
  cfg = tmp_path / "toy.cfg"
  cfg.write_text(models.TOY_OUTPUT_CFG, encoding="utf-8")
  plain = models.random_model(models.TOY_RULES, 0, 2)
  model_dir = str(tmp_path / "model")
  CSLModel.from_params(models.TOY_RULES, plain.params(), 2, 2,
                       str(cfg)).save(model_dir)
  monkeypatch.setenv(progress.ENV, "0")  # as in a log file
  config = SampleConfig(max_depth=4, seed=5, chunk=10)  # 5+ rounds

  def said(prefix):
    return [r.getMessage().split(",")[0] for r in caplog.records
            if r.getMessage().startswith(prefix)]

  with caplog.at_level("INFO"):
    sample_lib.sample(str(tmp_path / "a"), model_dir, num=50, config=config)
  rules = len(models.TOY_RULES)
  assert said("output-CFG intersection:")[-1] == (
      f"output-CFG intersection: {rules}/{rules} rule")
  drawn = said("sample:")
  assert len(drawn) >= 5 and drawn[-1] == "sample: 50/50 pair"
  caplog.clear()
  with caplog.at_level("INFO"):
    sample_lib.sample(str(tmp_path / "b"), model_dir, num=50, config=config,
                      shards=5)
  assert said("sample shards:") == [f"sample shards: {k}/5 shard"
                                    for k in range(1, 6)]
  assert said("output-CFG intersection:")
