"""Forests built in shards and kept as array files (csl_jax/cky/
forest_shards.py; issue 16): the same arrays as one build, resumed shard by
shard, never stale, the same on Beam's DirectRunner, and the fit from
sharded forests the same fit."""

import os
import re

import numpy as np
import pytest

from csl_jax.cky import forest as forest_lib
from csl_jax.cky import forest_shards
from csl_jax.cky.grammar_arrays import encode_qcfg
from csl_jax.errors import InputError
from csl_jax.model import train
from csl_jax.qcfg.rules import format_rule, parse_rules
from csl_jax.testing import toy_language

RULES = parse_rules(toy_language.GRAMMAR)
PAIRS = sorted({(tuple(x.split()), tuple(y.split()))
                for x, y in toy_language.sentences()})
MAX_NTS = 2


def _key(pairs=PAIRS):
  return forest_shards.data_key("\n".join(format_rule(r) for r in RULES),
                                MAX_NTS, pairs)


def _assert_same(a, b):
  for k in forest_shards.FIELDS:
    x, y = getattr(a, k), getattr(b, k)
    assert x.dtype == y.dtype and np.array_equal(x, y), k


def test_shard_ranges_cover_in_order():
  assert forest_shards.shard_ranges(10, 3) == [(0, 3), (3, 6), (6, 10)]
  assert forest_shards.shard_ranges(2, 4) == [(0, 0), (0, 1), (1, 1), (1, 2)]
  with pytest.raises(InputError):
    forest_shards.shard_ranges(5, 0)


@pytest.mark.parametrize("num_shards", [1, 3, 7, len(PAIRS) + 2])
def test_sharded_forests_equal_one_build(tmp_path, num_shards):
  grammar = encode_qcfg(RULES, MAX_NTS)
  whole, _ = forest_lib.build_forests(grammar, PAIRS, max_source_len=10**9,
                                      max_target_len=10**9)
  got = forest_shards.build_sharded(grammar, PAIRS, num_shards,
                                    str(tmp_path), _key())
  _assert_same(got, whole)
  assert len(got) == len(PAIRS)
  for b in range(len(PAIRS)):  # per-example forests, node ids local
    a, w = got[b], whole[b]
    assert np.array_equal(a.edge_children, w.edge_children)
  assert sorted(f for f in os.listdir(tmp_path) if f.startswith("forests-")
                ) == [os.path.basename(forest_shards.shard_path(
                    "", s, num_shards)) for s in range(num_shards)]


@pytest.mark.parametrize("pieces", [1, 3, 1000])
def test_forests_built_in_pieces_equal_one_build_and_say_how_far(
    monkeypatch, caplog, pieces):
  from csl_jax import progress  # pylint: disable=g-import-not-at-top
  monkeypatch.setenv(progress.ENV, "0")  # as in a log file
  monkeypatch.setattr(forest_shards, "PROGRESS_DELAY", 0.0)  # a slow build
  grammar = encode_qcfg(RULES, MAX_NTS)
  whole, _ = forest_lib.build_forests(grammar, PAIRS, max_source_len=10**9,
                                      max_target_len=10**9)
  with caplog.at_level("INFO"):
    got = forest_shards.build_in_pieces(grammar, PAIRS, "forests", pieces)
  _assert_same(got, whole)
  lines = [r.getMessage().split(",")[0] for r in caplog.records
           if r.getMessage().startswith("forests:")]
  n = len(PAIRS)
  # A line per tenth of the pairs, where the pieces are that fine.
  assert lines[-1] == f"forests: {n}/{n} pair"
  assert len(lines) == min(pieces, 10)
  # A quick one (under PROGRESS_DELAY seconds) says nothing.
  monkeypatch.setattr(forest_shards, "PROGRESS_DELAY", 60.0)
  caplog.clear()
  with caplog.at_level("INFO"):
    forest_shards.build_in_pieces(grammar, PAIRS, "forests", pieces)
  assert not [r for r in caplog.records
              if r.getMessage().startswith("forests:")]


def test_the_fit_says_how_far_its_forests_are_and_what_comes_next(
    monkeypatch, caplog):
  """Nothing was said between the induction and the fit's first progress
  line: a line per tenth of the forests, then that the first step
  compiles (most of the wait on COGS)."""
  from csl_jax import progress  # pylint: disable=g-import-not-at-top
  monkeypatch.setenv(progress.ENV, "0")
  monkeypatch.setattr(forest_shards, "PROGRESS_DELAY", 0.0)  # a slow build
  config = train.FitConfig(num_states=2, batch_size=26, num_restarts=1,
                           num_steps=2)
  with caplog.at_level("INFO"):
    train.fit(RULES, [(list(x), list(y)) for x, y in PAIRS], config, MAX_NTS)
  said = [r.getMessage() for r in caplog.records]
  forests = [m for m in said if m.startswith("fit forests:")]
  assert len(forests) == 10 and forests[-1].startswith(
      f"fit forests: {len(PAIRS)}/{len(PAIRS)} pair, ")
  assert any(re.fullmatch(
      rf"fit: forests of {len(PAIRS)} distinct pairs in \d+\.\ds, \d+ "
      r"batch\(es\); the first step compiles the training step", m)
             for m in said)


def test_resume_rebuilds_only_missing_and_never_reuses_stale(tmp_path,
                                                             monkeypatch):
  grammar = encode_qcfg(RULES, MAX_NTS)
  directory = str(tmp_path)
  first = forest_shards.build_sharded(grammar, PAIRS, 4, directory, _key())
  os.remove(forest_shards.shard_path(directory, 2, 4))
  built = []
  real = forest_shards.build_shard
  monkeypatch.setattr(forest_shards, "build_shard",
                      lambda *a: (built.append(a[2]), real(*a))[1])
  _assert_same(forest_shards.build_sharded(grammar, PAIRS, 4, directory,
                                           _key()), first)
  assert built == [2]
  # Other pairs: every shard is rebuilt, none of the old ones is read.
  fewer = PAIRS[:5]
  built.clear()
  got = forest_shards.build_sharded(grammar, fewer, 4, directory,
                                    _key(fewer))
  assert built == [0, 1, 2, 3] and len(got) == 5
  (tmp_path / "bad.npz").write_text("x")
  with pytest.raises(InputError, match="bad.npz"):
    forest_shards.load(str(tmp_path / "bad.npz"))


def test_fit_on_sharded_forests_is_the_same_fit(tmp_path):
  config = train.FitConfig(num_states=2, learning_rate=0.1, batch_size=26,
                           num_restarts=1, num_steps=6, checkpoint_every=100)
  plain = train.fit(RULES, [(list(x), list(y)) for x, y in PAIRS], config,
                    MAX_NTS)

  def builder(grammar, pairs, rules):
    key = forest_shards.data_key("\n".join(format_rule(r) for r in rules),
                                 grammar.max_nts, pairs)
    return forest_shards.build_sharded(grammar, pairs, 3, str(tmp_path), key)

  sharded = train.fit(RULES, [(list(x), list(y)) for x, y in PAIRS], config,
                      MAX_NTS, forest_builder=builder)
  for k in plain[0]:
    assert np.array_equal(np.asarray(plain[0][k]), np.asarray(sharded[0][k]))
  assert plain[1] == sharded[1]


def test_beam_direct_runner_writes_the_same_shards(tmp_path):
  pytest.importorskip("apache_beam")
  grammar = encode_qcfg(RULES, MAX_NTS)
  local = forest_shards.build_sharded(grammar, PAIRS, 3,
                                      str(tmp_path / "local"), _key())
  beam = forest_shards.build_sharded(
      grammar, PAIRS, 3, str(tmp_path / "beam"), _key(),
      runner="DirectRunner",
      pipeline_args=["--direct_num_workers=2",
                     "--direct_running_mode=multi_processing"])
  _assert_same(beam, local)
  for s in range(3):
    with open(forest_shards.shard_path(str(tmp_path / "local"), s, 3),
              "rb") as f, open(forest_shards.shard_path(
                  str(tmp_path / "beam"), s, 3), "rb") as g:
      assert f.read() == g.read()


def test_shards_in_an_object_store_locally_and_on_beam(tmp_path):
  pytest.importorskip("apache_beam")
  import fake_object_store  # pylint: disable=g-import-not-at-top
  fake_object_store.FakeObjectStore.root = str(tmp_path / "store")
  grammar = encode_qcfg(RULES, MAX_NTS)
  local = forest_shards.build_sharded(grammar, PAIRS, 3,
                                      str(tmp_path / "local"), _key())
  for runner in (None, "DirectRunner"):
    url = f"fakeobj://bucket/{runner}"
    _assert_same(forest_shards.build_sharded(grammar, PAIRS, 3, url, _key(),
                                             runner=runner), local)
    stored = tmp_path / "store" / "bucket" / str(runner)
    assert sorted(os.listdir(stored)) == [
        "forests-00000-of-00003.npz", "forests-00001-of-00003.npz",
        "forests-00002-of-00003.npz", "key.json"]
    for s in range(3):
      with open(forest_shards.shard_path(str(tmp_path / "local"), s, 3),
                "rb") as f:
        assert (stored / f"forests-{s:05d}-of-00003.npz").read_bytes() == (
            f.read())
  # Another shard count: the old objects are deleted first.
  forest_shards.build_sharded(grammar, PAIRS, 2, "fakeobj://bucket/None",
                              _key())
  assert len(os.listdir(tmp_path / "store" / "bucket" / "None")) == 3


def test_augment_shards_and_runner_reach_every_beam_stage(clear_gin):  # pylint: disable=unused-argument
  import gin  # pylint: disable=g-import-not-at-top
  from csl_jax import configs  # pylint: disable=g-import-not-at-top
  from csl_jax.pipeline import augment  # pylint: disable=g-import-not-at-top
  got = augment.beam_bindings(4, "DirectRunner", ["--direct_num_workers=2"])
  assert got == {
      "sample.shards": 4, "fit.forest_shards": 4, "UAT.num_shards": 4,
      "geca.GECAConfig.num_shards": 4,
      "sample.runner": "DirectRunner", "fit.runner": "DirectRunner",
      "UAT.runner": "DirectRunner", "geca.GECAConfig.runner": "DirectRunner",
      "sample.pipeline_args": ["--direct_num_workers=2"],
      "fit.pipeline_args": ["--direct_num_workers=2"],
      "UAT.pipeline_args": ["--direct_num_workers=2"],
      "geca.GECAConfig.pipeline_args": ["--direct_num_workers=2"],
      "InductionConfig.runner": "DirectRunner",
      "InductionConfig.pipeline_args": ("--direct_num_workers=2",)}
  gin.bind_parameter("CMaxEnt.num_shards", 4)  # sharded: on Beam too
  assert augment.beam_bindings(4, "R")["CMaxEnt.runner"] == "R"
  gin.clear_config()
  with configs.bound(got, "test"):
    assert gin.query_parameter("fit.forest_shards") == 4
    from csl_jax.methods.geca.config import GECAConfig  # pylint: disable=g-import-not-at-top
    assert GECAConfig().num_shards == 4
  with pytest.raises(ValueError):  # restored: unbound again
    gin.query_parameter("fit.forest_shards")
  assert augment.beam_bindings(None, None) == {}
  with pytest.raises(InputError, match="--shards"):
    augment.beam_bindings(None, "DirectRunner")
  with pytest.raises(InputError, match="need --runner"):
    augment.beam_bindings(2, None, ["--x"])
  with pytest.raises(InputError, match=">= 1"):
    augment.beam_bindings(0, None)
