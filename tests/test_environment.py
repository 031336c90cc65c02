"""The process's environment and its paths (session 52): path names that
are not UTF-8, the locale, caches nowhere writable. Each was a traceback
or other bytes before."""

import os
import subprocess
import sys

import pytest

from csl_jax.cli import main as cli
from csl_jax.data import tsv

pytestmark = pytest.mark.usefixtures("clear_gin")  # tests/conftest.py

_PAIRS = [("jump", "I_JUMP"), ("walk", "I_WALK"), ("walk twice",
                                                    "I_WALK I_WALK"),
          ("look twice", "I_LOOK I_LOOK"), ("run", "I_RUN")]


def _data(directory, pairs=_PAIRS) -> str:
  """`directory` (made) with a train.tsv of `pairs`."""
  directory = os.fspath(directory)
  os.makedirs(directory, exist_ok=True)
  tsv.write_tsv(os.path.join(directory, "train.tsv"),
                [tsv.Example(i, o) for i, o in pairs])
  return directory


def _latin1_dir(tmp_path) -> str:
  """A directory named in Latin-1 (`caf\xe9`, from an older system): it
  reaches Python as `caf\udce9`."""
  return _data(os.fsdecode(os.path.join(os.fsencode(str(tmp_path)),
                                        b"caf\xe9")))


@pytest.fixture
def home(tmp_path, monkeypatch):
  """HOME is tmp_path/home (made), the working directory tmp_path."""
  monkeypatch.setenv("HOME", str(tmp_path / "home"))
  monkeypatch.chdir(tmp_path)
  (tmp_path / "home").mkdir()
  return tmp_path / "home"


def test_a_run_directory_whose_name_is_not_utf8(tmp_path):
  # A directory named in Latin-1 (`caf\xe9`, from an older system) reaches
  # Python as `caf\udce9`; the report names its data directory, and writing
  # that as UTF-8 was a UnicodeEncodeError traceback after every stage had
  # run.
  data = _latin1_dir(tmp_path)
  out = os.path.join(data, "run")
  assert cli.main(["augment", "--dataset", "tsv", "--data_dir", data,
                   "--method", "primaug", "--out", out]) == 0
  with open(os.path.join(out, "report.md"), encoding="utf-8") as f:
    assert "caf\\udce9" in f.readline()  # said, and the file is UTF-8
  assert os.path.getsize(os.path.join(out, "primaug", "synthetic.tsv")) > 0


def test_a_locale_that_is_not_utf8_reads_the_same_files(tmp_path):
  # TensorFlow and SentencePiece encode paths as UTF-8 whatever the locale:
  # under LC_ALL=C without Python's UTF-8 mode, `vocab` of a file in
  # `données/` was a TypeError traceback (under a Latin-1 locale, "No such
  # file" for a file that is there). The command reruns in UTF-8 mode.
  data = tmp_path / "données"
  _data(data, _PAIRS + [("sauté", "É")])
  env = dict(os.environ, LC_ALL="C", PYTHONUTF8="0",
             PYTHONPATH=os.pathsep.join(sys.path))
  env.pop("LANG", None)
  done = subprocess.run(
      [sys.executable, "-m", "csl_jax.cli.main", "vocab", "--tsv",
       str(data / "train.tsv"), "--out", str(data / "spm"), "--model_type",
       "word"], env=env, capture_output=True, check=False)
  assert done.returncode == 0, done.stderr.decode("utf-8", "replace")[-2000:]
  assert "sauté".encode() in (data / "spm.model").read_bytes()


def test_a_reader_that_goes_away_leaves_the_run_done(tmp_path):
  # `csl-jax augment ... | head -1` (or `| grep -q done`): the closing
  # line to a pipe nobody reads was a BrokenPipeError traceback and exit
  # status 1 after the run had finished.
  data = _data(tmp_path / "data")
  read, write = os.pipe()
  os.close(read)  # the reader is gone before the command speaks
  try:
    done = subprocess.run(
        [sys.executable, "-m", "csl_jax.cli.main", "augment", "--dataset",
         "tsv", "--data_dir", data, "--method", "primaug", "--out",
         str(tmp_path / "run")], stdout=write, stderr=subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
        check=False)
  finally:
    os.close(write)
  assert done.returncode == 0, done.stderr.decode()[-2000:]
  assert b"Traceback" not in done.stderr
  assert b"BrokenPipe" not in done.stderr
  assert (tmp_path / "run" / "report.md").exists()


def test_a_name_that_is_not_utf8_is_one_line_where_tensorflow_reads_it(
    tmp_path, capsys):
  # `vocab` (like train, decode, experiment) gives its paths to TensorFlow
  # and SentencePiece, which take UTF-8 text: a `caf\xe9` directory was a
  # TypeError traceback.
  data = _latin1_dir(tmp_path)
  assert cli.main(["vocab", "--tsv", os.path.join(data, "train.tsv"),
                   "--out", str(tmp_path / "spm")]) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1 and "a name that is not UTF-8" in err[0], err
  assert "caf\\xe9" in err[0]  # the name's bytes, as `ls -b` shows them


def test_a_home_the_shell_did_not_expand_is_expanded(tmp_path, home):
  # `--out=~/x`: the shell expands `~` only at a word's start; the command
  # made a directory named `~` in the working directory.
  data = _data(tmp_path / "data")
  assert cli.main(["augment", "--dataset", "tsv", "--data_dir", data,
                   "--method", "primaug", "--out=~/run"]) == 0
  assert (home / "run" / "report.md").exists()
  assert not (tmp_path / "~").exists()


def test_a_gin_file_the_shell_did_not_expand_is_read(tmp_path, home):
  # `--gin_file=~/x.gin` expanded the path the errors name but not the one
  # gin read: "not found" for a file in the home.
  data = _data(tmp_path / "data")
  (home / "x.gin").write_text("")
  assert cli.main(["augment", "--dataset", "tsv", "--data_dir", data,
                   "--method", "primaug", "--out", str(tmp_path / "run"),
                   "--gin_file=~/x.gin"]) == 0
