"""What produced a run directory: provenance.json, config.gin, and a stage
reused from other code saying so."""

import importlib.metadata
import json
import logging
import os
import shlex
import shutil
import subprocess

import gin
import pytest

import csl_jax
from csl_jax import provenance
from csl_jax.cli import main as cli_main
from csl_jax.methods import base
from csl_jax.pipeline import cache

_GIT = shutil.which("git")


def _git(root, *args):
  """git in `root` alone: not a repository GIT_DIR names (a hook exports
  it), nor the user's or the system's config (signing, hooks)."""
  env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
  env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1",
             GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
             GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
  return subprocess.run(["git", "-C", str(root), *args], check=True,
                        capture_output=True, text=True, env=env).stdout


@pytest.mark.skipif(_GIT is None, reason="git is not installed")
def test_the_source_commit_and_local_changes(tmp_path, monkeypatch):
  root = tmp_path / "checkout"
  package = root / "csl_jax"
  package.mkdir(parents=True)
  (package / "__init__.py").write_text("__version__ = '9.9'\n")
  _git(root, "init", "-q")
  _git(root, "add", ".")
  _git(root, "commit", "-q", "--no-verify", "-m", "one")
  head = _git(root, "rev-parse", "HEAD").strip()

  def code_at(path):
    monkeypatch.setattr(csl_jax, "__file__", str(path / "__init__.py"))
    provenance._code.cache_clear()  # pylint: disable=protected-access
    try:
      return provenance.code()
    finally:
      provenance._code.cache_clear()  # pylint: disable=protected-access

  assert code_at(package) == {"csl_jax": csl_jax.__version__,
                              "commit": head, "modified": False}
  (package / "__init__.py").write_text("__version__ = '9.10'\n")
  assert code_at(package)["modified"] is True
  (package / "__init__.py").write_text("__version__ = '9.9'\n")
  (package / "new.py").write_text("")  # untracked: not the code that ran
  (root / "NOTES.md").write_text("a")
  _git(root, "add", "NOTES.md")
  _git(root, "commit", "-q", "--no-verify", "-m", "notes")
  head = _git(root, "rev-parse", "HEAD").strip()
  (root / "NOTES.md").write_text("b")  # the docs: not the code either
  assert code_at(package) == {"csl_jax": csl_jax.__version__,
                              "commit": head, "modified": False}
  # The gin files are code: what a run binds.
  (root / "gin").mkdir()
  (root / "gin" / "x.gin").write_text("a.b = 1\n")
  _git(root, "add", "gin")
  _git(root, "commit", "-q", "--no-verify", "-m", "gin")
  (root / "gin" / "x.gin").write_text("a.b = 2\n")
  assert code_at(package)["modified"] is True
  _git(root, "checkout", "-q", "--", "gin")
  head = _git(root, "rev-parse", "HEAD").strip()
  # GIT_DIR (as a git hook exports it) names another repository: the
  # package's own checkout is still the one recorded.
  other = tmp_path / "other"
  other.mkdir()
  _git(other, "init", "-q")
  _git(other, "commit", "-q", "--allow-empty", "--no-verify", "-m", "other")
  monkeypatch.setenv("GIT_DIR", str(other / ".git"))
  assert code_at(package)["commit"] == head
  monkeypatch.delenv("GIT_DIR")
  # A changed file whose name is not UTF-8, listed raw (core.quotePath):
  # recorded, not a UnicodeDecodeError in every command.
  _git(root, "config", "core.quotePath", "false")
  odd = os.path.join(os.fsencode(package), b"odd_\xff.txt")
  with open(odd, "wb") as f:
    f.write(b"1")
  _git(root, "add", "-A")
  _git(root, "commit", "-q", "--no-verify", "-m", "two")
  with open(odd, "wb") as f:
    f.write(b"2")
  assert code_at(package)["modified"] is True
  # A checkout git will not read says why (here: a broken .git file; for
  # another user's, "dubious ownership"), rather than look like a wheel.
  unread = tmp_path / "unread"
  (unread / "csl_jax").mkdir(parents=True)
  (unread / ".git").write_text("not a gitdir\n")
  record = code_at(unread / "csl_jax")
  assert "commit" not in record and record["git"].startswith("fatal:")
  elsewhere = tmp_path / "site-packages" / "csl_jax"  # an installed wheel
  elsewhere.mkdir(parents=True)
  assert code_at(elsewhere) == {"csl_jax": csl_jax.__version__}


def test_packages_are_the_installed_requirements():
  found = provenance.packages()
  # csl_jax is installed (`pip install -e .`, as the README says).
  for name in ("jax", "jaxlib", "numba", "numpy", "flax", "optax", "seqio"):
    assert found[name] == importlib.metadata.version(name)
  assert "pytest" not in found  # the test extra did not run anything


def test_a_command_writes_its_provenance_and_a_config_that_reruns_it(
    tmp_path, clear_gin):  # pylint: disable=unused-argument
  train = tmp_path / "train.tsv"
  train.write_text("walk\tW\njump\tJ\nwalk twice\tW W\njump twice\tJ J\n")
  out = tmp_path / "grammar"
  argv = ["induce", "--train", str(train), "--out", str(out),
          "--gin.InductionConfig.allow_single_nt_target=True"]
  assert cli_main.main(argv) == 0, "the induce stage runs"
  record = json.loads((out / "provenance.json").read_text())
  assert record["command"] == "csl-jax " + shlex.join(argv)
  assert record["code"] == provenance.code()
  assert record["code"]["csl_jax"] == csl_jax.__version__
  assert record["packages"]["jax"] == provenance.packages()["jax"]
  text = (out / "config.gin").read_text()
  assert "InductionConfig.allow_single_nt_target = True" in text
  # The file is gin: parsed again, it binds the same.
  bound = gin.config_str()
  gin.clear_config()
  gin.parse_config_file(str(out / "config.gin"))
  assert gin.config_str() == bound


def test_a_library_call_has_no_command_line(tmp_path, monkeypatch):
  monkeypatch.setitem(provenance._ARGV, "argv", None)  # pylint: disable=protected-access
  provenance.write(str(tmp_path))
  assert json.loads((tmp_path / "provenance.json").read_text()
                    )["command"] is None


def test_a_stage_reused_from_other_code_says_so(tmp_path, caplog,
                                                monkeypatch):
  monkeypatch.setattr(cache, "_OTHER_CODE_SAID", set())
  d = str(tmp_path / "stage")

  def stage():
    def run(directory):
      with open(os.path.join(directory, "a.txt"), "w") as f:
        f.write("a")
      return {}
    return base.Stage("s", [], {"x": 1}, run)

  cache.run_stage(stage(), d)
  key_path = os.path.join(d, cache.KEY_FILE)
  key = json.loads(open(key_path).read())
  assert key["code"] == provenance.code()
  with caplog.at_level(logging.INFO):
    assert cache.run_stage(stage(), d)["cached"]
  assert "computed by" not in caplog.text
  key["code"] = {"csl_jax": "0.0.9", "commit": "0123456789abcdef"}
  with open(key_path, "w") as f:
    json.dump(key, f)
  caplog.clear()
  with caplog.at_level(logging.INFO):
    assert cache.run_stage(stage(), d)["cached"]  # reused all the same
  assert "computed by csl_jax 0.0.9 at 0123456789ab, not this" in caplog.text
  assert "delete it to compute it again" in caplog.text
  # Said in full once: a grid reuses many stages.
  caplog.clear()
  with caplog.at_level(logging.INFO):
    assert cache.run_stage(stage(), d)["cached"]
  assert "(computed by csl_jax 0.0.9 at 0123456789ab)" in caplog.text
  assert "delete it" not in caplog.text
  # A hand-edited record is no reason to stop.
  key["code"] = "0.0.9"
  with open(key_path, "w") as f:
    json.dump(key, f)
  assert cache.run_stage(stage(), d)["cached"]


def test_version_names_the_code(capsys):
  with pytest.raises(SystemExit) as e:
    cli_main.build_parser().parse_args(["--version"])
  assert e.value.code == 0
  assert capsys.readouterr().out.strip() == (
      f"csl-jax {provenance.describe()}")
  assert provenance.describe({"csl_jax": "1.2", "commit": "ab" * 20,
                              "modified": True}) == (
                                  "1.2 at abababababab with local changes")
  assert provenance.describe({"csl_jax": "1.2"}) == "1.2"


def test_a_config_gin_cannot_write_is_a_comment_not_a_stop(tmp_path,
                                                           monkeypatch):
  def broken():
    raise KeyError("some.configurable")
  monkeypatch.setattr(gin, "config_str", broken)
  provenance.write(str(tmp_path))
  assert (tmp_path / "config.gin").read_text().splitlines()[-1] == (
      "# gin could not write its bindings: KeyError: 'some.configurable'")
