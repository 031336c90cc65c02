"""GECA's index as partitioned joins (`partitioned.py`, `beam_index.py`):
the same new pairs, in the same order, and the same index statistics as
the one-build index, for any settings (sampled or not) and partition
count; on Beam's DirectRunner where apache-beam is installed."""

import dataclasses
import importlib.util
import os

from hypothesis import given
from hypothesis import strategies as st
import pytest

from csl_jax.data import scan
from csl_jax.errors import InputError
from csl_jax.methods.geca import augment as augment_lib
from csl_jax.methods.geca import partitioned
from csl_jax.methods.geca.config import GECAConfig
import numpy as np

from test_geca import (  # pylint: disable=g-bad-import-order
    _SETTINGS, configs, dense_pairs, pair_lists, window_configs)

_STATS = augment_lib._INDEX_STATS  # pylint: disable=protected-access
_USED = ("generated", "templates_used", "fragments_used", "preview",
         "targets_visited", "fills_considered", "rejected_not_novel")


def _same_as_one_build(pairs, config, num_shards, runner=None, work_dir=None,
                       **kwargs):
  want, want_stats = augment_lib.augment(pairs, config)
  got, got_stats = augment_lib.augment(
      pairs, dataclasses.replace(config, num_shards=num_shards,
                                 runner=runner, **kwargs), work_dir=work_dir)
  assert got == want  # the same pairs in the same (generation) order
  for k in _USED + (_STATS if want else ()):
    assert got_stats.get(k) == want_stats.get(k), k
  return got


sampled = st.builds(
    lambda c, n, v, s: dataclasses.replace(c, n_sample=n, variants=v, seed=s),
    configs, st.sampled_from([None, 2, 5]), st.integers(1, 3),
    st.integers(0, 3))


@_SETTINGS
@given(pair_lists, sampled, st.integers(2, 5))
def test_partitioned_index_gives_the_same_pairs(pairs, config, num_shards):
  _same_as_one_build(pairs, config, num_shards)


@_SETTINGS
@given(dense_pairs, window_configs, st.integers(2, 4))
def test_partitioned_index_windowed(pairs, config, num_shards):
  # Shared environments are common here: targets whose own environment
  # donates to them and targets where it may not (the rule's t'1 != t1).
  _same_as_one_build(pairs, config, num_shards)


def _scan_pairs():
  """One-clause SCAN commands, `jump` only alone (addprim_jump in
  miniature: GECA puts `jump` into the other verbs' 20 templates)."""
  return [(c, scan.interpret(c)) for c in scan.all_commands()
          if " and " not in c and " after " not in c
          and ("jump" not in c or c == "jump")]


@pytest.mark.parametrize("n_sample,variants,want", [(None, 10**6, 20),
                                                    (8, 1, 8)])
def test_scan_like_data_many_partitions(n_sample, variants, want):
  config = GECAConfig(wug_size=1, wug_count=2, max_len=40,
                      n_sample=n_sample, variants=variants)
  got = _same_as_one_build(_scan_pairs(), config, 7)
  assert len(got) == want
  assert all(scan.interpret(i) == o for i, o in got)


def test_partition_is_monotone_in_the_hash():
  h = np.sort(np.random.default_rng(0).integers(
      0, 2**64, 1000, dtype=np.uint64))
  for n in (1, 3, 64):
    p = partitioned.partition_of(h, n)
    assert p.min() >= 0 and p.max() < n
    assert np.all(np.diff(p) >= 0)


def test_join_pairs_equal_keys():
  left = np.array([3, 1, 3, 7], np.uint64)
  right = np.array([3, 3, 1, 5], np.uint64)
  i, j = partitioned._join(left, right)  # pylint: disable=protected-access
  got = sorted(zip(i.tolist(), j.tolist()))
  assert got == [(0, 0), (0, 1), (1, 2), (2, 0), (2, 1)]


def test_runner_needs_partitions():
  with pytest.raises(InputError, match="num_shards"):
    GECAConfig(runner="DirectRunner")
  with pytest.raises(InputError, match="num_shards"):
    GECAConfig(num_shards=0)


@pytest.mark.skipif(importlib.util.find_spec("apache_beam") is None,
                    reason="apache-beam not installed (README: Scaling out)")
def test_beam_direct_runner_gives_the_same_pairs():
  pairs = _scan_pairs()
  for config in (GECAConfig(wug_size=1, wug_count=2, n_sample=8),
                 GECAConfig(wug_size=2, wug_count=2, window=1,
                            weighting="uniform", n_sample=None)):
    _same_as_one_build(pairs, config, 3, runner="DirectRunner",
                       pipeline_args=("--direct_num_workers=1",))


def test_a_work_dir_keeps_files_that_are_not_the_index(tmp_path):
  # The index's tables are removed before and after a run; a user's own
  # arrays in the same directory are not.
  mine = tmp_path / "my_embeddings.npy"
  np.save(mine, np.arange(3))
  (tmp_path / "flow").mkdir()  # a folder of the user's
  (tmp_path / "flow" / "notes.txt").write_text("mine")
  _same_as_one_build(_scan_pairs(), GECAConfig(wug_size=1, n_sample=8), 2,
                     work_dir=str(tmp_path))
  assert np.load(mine).tolist() == [0, 1, 2]
  assert (tmp_path / "flow" / "notes.txt").read_text() == "mine"
  assert any(n.startswith("targets-") for n in os.listdir(tmp_path))


def test_method_stage_same_key_and_file_with_partitions(tmp_path):
  from csl_jax.data.tsv import write_tsv  # pylint: disable=g-import-not-at-top
  from csl_jax.methods import base  # pylint: disable=g-import-not-at-top
  from csl_jax.pipeline import cache  # pylint: disable=g-import-not-at-top
  train = str(tmp_path / "train.tsv")
  write_tsv(train, _scan_pairs())
  data = base.RunData(str(tmp_path), {"train": train})
  method = base.get("geca")
  made = []
  for shards in (1, 3):
    method.config = GECAConfig(wug_size=1, wug_count=2, n_sample=8,
                               num_shards=shards)
    stage, = method.stages(data, str(tmp_path / "geca"))
    out = str(tmp_path / f"geca{shards}" / "generate")
    summary = cache.run_stage(stage, out)
    assert not os.path.exists(os.path.join(out, "index.tmp"))
    with open(summary["candidates"], encoding="utf-8") as f:
      made.append((stage.config, f.read()))
  assert made[0] == made[1] and made[0][1].count("\n") == 8


@pytest.mark.skipif(importlib.util.find_spec("apache_beam") is None,
                    reason="apache-beam not installed (README: Scaling out)")
def test_tables_in_an_object_store(tmp_path):
  import fake_object_store  # pylint: disable=g-import-not-at-top
  fake_object_store.FakeObjectStore.root = str(tmp_path / "store")
  config = GECAConfig(wug_size=1, wug_count=2, n_sample=8)
  for runner in (None, "DirectRunner"):
    url = f"fakeobj://bucket/{runner}"
    _same_as_one_build(_scan_pairs(), config, 3, runner=runner,
                       work_dir=url)
    stored = os.listdir(tmp_path / "store" / "bucket" / str(runner))
    assert any(n.startswith("targets-") and n.endswith(".seq.npy")
               for n in stored)
    assert any(n.startswith("candidates-") for n in stored)
    assert any(n.startswith("stats-T-") for n in stored)
