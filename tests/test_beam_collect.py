"""A pipeline's small result back to the driver (`beam/collect.py`): through
a local temporary file, or under `--temp_location` where that is a URL
(Dataflow), removed afterwards. Runs where apache-beam is installed."""

import os

import pytest

from csl_jax.beam import collect
from csl_jax.beam import options as beam_options


@pytest.mark.parametrize("remote", [False, True])
def test_lines_come_back_and_nothing_is_left(tmp_path, remote, monkeypatch):
  beam = pytest.importorskip("apache_beam")
  read = []
  real = collect.file_urls.read_lines
  monkeypatch.setattr(collect.file_urls, "read_lines",
                      lambda path: (read.append(path), real(path))[1])
  args = []
  if remote:
    import fake_object_store  # pylint: disable=g-import-not-at-top
    fake_object_store.FakeObjectStore.root = str(tmp_path / "store")
    args = ["--temp_location=fakeobj://bucket/tmp"]
  opts = beam_options.pipeline_options("DirectRunner", args)
  got = collect.lines(opts, lambda p: p | beam.Create(["b", "a", "c"]))
  assert sorted(got) == ["a", "b", "c"]
  assert read[0].startswith("fakeobj://bucket/tmp/") == remote
  if remote:
    left = [f for _, _, fs in os.walk(tmp_path / "store") for f in fs]
    assert not left
