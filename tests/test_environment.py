"""The process's environment and its paths (session 52): path names that
are not UTF-8, the locale, caches nowhere writable. Each was a traceback
or other bytes before."""

import os

import pytest

from csl_jax.cli import main as cli
from csl_jax.data import tsv

pytestmark = pytest.mark.usefixtures("clear_gin")  # tests/conftest.py

_PAIRS = [("jump", "I_JUMP"), ("walk", "I_WALK"), ("walk twice",
                                                    "I_WALK I_WALK"),
          ("look twice", "I_LOOK I_LOOK"), ("run", "I_RUN")]


def test_a_run_directory_whose_name_is_not_utf8(tmp_path):
  # A directory named in Latin-1 (`caf\xe9`, from an older system) reaches
  # Python as `caf\udce9`; the report names its data directory, and writing
  # that as UTF-8 was a UnicodeEncodeError traceback after every stage had
  # run.
  root = os.path.join(os.fsencode(str(tmp_path)), b"caf\xe9")
  os.mkdir(root)
  data = os.fsdecode(root)
  tsv.write_tsv(os.path.join(data, "train.tsv"),
                [tsv.Example(i, o) for i, o in _PAIRS])
  out = os.path.join(data, "run")
  assert cli.main(["augment", "--dataset", "tsv", "--data_dir", data,
                   "--method", "primaug", "--out", out]) == 0
  with open(os.path.join(out, "report.md"), encoding="utf-8") as f:
    assert "caf\\udce9" in f.readline()  # said, and the file is UTF-8
  assert os.path.getsize(os.path.join(out, "primaug", "synthetic.tsv")) > 0
