"""TSV reading with validation: errors name file and line; skips counted."""

import pytest

from csl_jax.data import tsv
from csl_jax.errors import InputError


def test_read_write_round_trip(tmp_path):
  path = tmp_path / "a.tsv"
  examples = [tsv.Example("jump twice", "I_JUMP I_JUMP"),
              tsv.Example("walk", "I_WALK")]
  assert tsv.write_tsv(path, examples) == 2
  assert path.read_text() == "jump twice\tI_JUMP I_JUMP\nwalk\tI_WALK\n"
  assert tsv.read_tsv(path) == examples


@pytest.mark.parametrize("bad,reason", [
    ("no tab here", "no tab"),
    ("a\tb\tc", "3 tab-separated fields"),
    ("\tB", "empty input"),
    ("a\t  ", "empty output"),
    ("", "empty line"),
])
def test_malformed_line_is_an_error_naming_file_and_line(tmp_path, bad,
                                                         reason):
  path = tmp_path / "bad.tsv"
  path.write_text("a\tA\n" + bad + "\nb\tB\n")
  with pytest.raises(InputError) as e:
    tsv.read_tsv(path)
  assert str(e.value).startswith(f"{path}:2: ")
  assert reason in str(e.value)


def test_skip_malformed_counts_what_it_skips(tmp_path):
  path = tmp_path / "bad.tsv"
  path.write_text("a\tA\nno tab\nb\tB\nx\ty\tz\n")
  stats = tsv.ReadStats()
  examples = tsv.read_tsv(path, skip_malformed=True, stats=stats)
  assert examples == [("a", "A"), ("b", "B")]
  assert stats.num_read == 2 and stats.num_skipped == 2
  assert [line for line, _ in stats.skipped] == [2, 4]


def test_bad_utf8_and_missing_file(tmp_path):
  path = tmp_path / "latin1.tsv"
  path.write_bytes("caf\xe9\tx\n".encode("latin-1"))
  with pytest.raises(InputError, match="not valid UTF-8"):
    tsv.read_tsv(path)
  with pytest.raises(InputError, match="no such file"):
    tsv.read_tsv(tmp_path / "missing.tsv")


def test_write_refuses_unwritable_examples(tmp_path):
  # What read_tsv would refuse or read otherwise is not written.
  for example in (("a\tb", "c"), ("a\rb", "c"), (" ", "x"), ("a", "")):
    with pytest.raises(ValueError, match="blank or has a tab/line break"):
      tsv.write_tsv(tmp_path / "x.tsv", [example])


def test_a_header_row_is_named(tmp_path, caplog):
  # The format has no header; a first line naming the columns is read as
  # an example, and said so (file and line), not silently.
  path = tmp_path / "h.tsv"
  path.write_text("input\toutput\njump\tI_JUMP\n")
  with caplog.at_level("WARNING"):
    rows = tsv.read_tsv(str(path))
  assert len(rows) == 2
  assert f"{path}:1: 'input\\toutput' looks like a header row" in caplog.text
  caplog.clear()
  path.write_text("jump\tI_JUMP\ninput\toutput\n")  # not the first line
  with caplog.at_level("WARNING"):
    tsv.read_tsv(str(path))
  assert "header" not in caplog.text
