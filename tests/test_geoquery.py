"""Tests for csl_jax.data.geoquery (small files in a tmp dir)."""

import pytest

from csl_jax.data import geoquery
from csl_jax.data.tsv import Example, ReadStats
from csl_jax.errors import InputError

TRAIN = [Example("give me the cities in m0",
                 "answer ( intersection ( city , loc_2 ( m0 ) ) )")]
TEST = [Example("what is the capital of m0",
                "answer ( capital_1 ( m0 ) )")]


def _write(directory, part, examples):
  directory.mkdir(parents=True, exist_ok=True)
  (directory / f"{part}.tsv").write_text(
      "".join(f"{e.input}\t{e.output}\n" for e in examples), encoding="utf-8")


def test_load_split_present_parts(tmp_path):
  _write(tmp_path / "standard", "train", TRAIN)
  _write(tmp_path / "standard", "test", TEST)
  _write(tmp_path / "length", "train", TRAIN)
  _write(tmp_path / "length", "dev", TEST)
  _write(tmp_path / "length", "test", TEST)
  assert geoquery.load_split(tmp_path, "standard") == {"train": TRAIN,
                                                       "test": TEST}
  parts = geoquery.load_split(str(tmp_path), "length")
  assert list(parts) == ["train", "dev", "test"]


def test_unknown_split_lists_valid_ones(tmp_path):
  with pytest.raises(InputError, match="template_1, template_2, template_3"):
    geoquery.load_split(tmp_path, "tmcd")


def test_missing_directory_or_train(tmp_path):
  with pytest.raises(InputError, match="no such split directory") as info:
    geoquery.load_split(tmp_path, "template_2")
  assert info.value.source.endswith("template_2")
  _write(tmp_path / "template_2", "test", TEST)
  with pytest.raises(InputError, match="no train.tsv"):
    geoquery.load_split(tmp_path, "template_2")


def test_other_data_given_as_geoquery_is_refused(tmp_path):
  """SCAN's pairs in a GeoQuery split directory: no output is FunQL. One
  unbalanced program among FunQL ones is let through (GECA-style noise is
  not this loader's to judge)."""
  scan_pairs = [Example("jump twice", "I_JUMP I_JUMP"),
                Example("walk", "I_WALK")]
  _write(tmp_path / "standard", "train", scan_pairs)
  with pytest.raises(InputError, match=r"2 of 2 outputs are not FunQL "
                     r"programs \(answer \( \.\.\. \)\), e\.g\. "
                     r"'I_JUMP I_JUMP': is this GeoQuery data\?") as info:
    geoquery.load_split(tmp_path, "standard")
  assert info.value.source.endswith("train.tsv")
  odd = [Example("x", "answer ( city ( m0 )")]  # one bracket short
  _write(tmp_path / "length", "train", TRAIN * 2 + odd)
  assert geoquery.load_split(tmp_path, "length")["train"][-1] == odd[0]
  assert [geoquery._is_funql(p) for p in (  # pylint: disable=protected-access
      "answer ( m0 )", "answer ( m0", "answer ) m0 ( )", "city ( m0 )")] == [
          True, False, False, False]


def test_malformed_line_names_file_and_line(tmp_path):
  _write(tmp_path / "template_1", "train", TRAIN)
  (tmp_path / "template_1" / "dev.tsv").write_text(
      "ok\tanswer ( m0 )\nno tab here\n", encoding="utf-8")
  with pytest.raises(InputError) as info:
    geoquery.load_split(tmp_path, "template_1")
  assert info.value.source.endswith("dev.tsv") and info.value.line == 2
  stats = ReadStats()
  parts = geoquery.load_split(tmp_path, "template_1", skip_malformed=True,
                              stats=stats)
  assert len(parts["dev"]) == 1 and stats.num_skipped == 1
