"""csl_jax/compile_cache.py: where `csl-jax` commands cache compiled JAX
programs (in a fresh process: jax reads the environment once)."""

import os
import subprocess
import sys

from csl_jax import compile_cache
from csl_jax import files

_SCRIPT = """
import os, sys
if os.environ.pop("IMPORT_JAX_FIRST", None):
  import jax
from csl_jax import compile_cache
compile_cache.enable()
import jax
print(jax.config.jax_compilation_cache_dir)
print(jax.config.jax_persistent_cache_min_compile_time_secs)
"""


def _run(**env):
  base = {k: v for k, v in os.environ.items()
          if not k.startswith("JAX_") and k != "XDG_CACHE_HOME"}
  proc = subprocess.run([sys.executable, "-c", _SCRIPT], env=dict(base, **env),
                        capture_output=True, text=True, check=True)
  return proc.stdout.split()


def test_default_directory_is_under_the_user_cache(tmp_path):
  directory, seconds = _run(XDG_CACHE_HOME=str(tmp_path))
  # One directory per host CPU below it.
  assert os.path.dirname(directory) == str(tmp_path / "csl_jax" / "jax")
  assert float(seconds) == 0.0
  assert directory == _run(XDG_CACHE_HOME=str(tmp_path))[0]


def test_after_jax_is_imported(tmp_path):
  directory, _ = _run(XDG_CACHE_HOME=str(tmp_path), IMPORT_JAX_FIRST="1")
  assert os.path.dirname(directory) == str(tmp_path / "csl_jax" / "jax")


def test_the_users_choice_wins(tmp_path):
  directory, seconds = _run(JAX_COMPILATION_CACHE_DIR=str(tmp_path / "mine"),
                            JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="2.5")
  assert directory == str(tmp_path / "mine") and float(seconds) == 2.5


def test_a_home_that_cannot_be_written_turns_the_cache_off(tmp_path):
  # A read-only or missing home: JAX warned, from its first compile, that
  # *reading* an entry failed. Now one line says why and what to set.
  (tmp_path / "file").write_text("")
  base = {k: v for k, v in os.environ.items()
          if not k.startswith("JAX_") and k != "XDG_CACHE_HOME"}
  proc = subprocess.run(
      [sys.executable, "-c", _SCRIPT + "print(jax.jit(lambda x: x + 1)(1))"],
      env=dict(base, XDG_CACHE_HOME=str(tmp_path / "file" / "cache")),
      capture_output=True, text=True, check=True)
  assert proc.stdout.split()[0] in ("None", "")  # no cache directory
  assert proc.stdout.split()[-1] == "2"
  assert "JAX_COMPILATION_CACHE_DIR to a writable" in proc.stderr
  assert "UserWarning" not in proc.stderr


_COMPILE = """
import os
from csl_jax import compile_cache
compile_cache.enable()
import jax
print(jax.jit(lambda x: x * 3 + 1)(2))
"""


def _compile(directory, first_jax=False):
  base = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
  code = ("import jax\n" if first_jax else "") + _COMPILE
  return subprocess.run([sys.executable, "-c", code],
                        env=dict(base, JAX_COMPILATION_CACHE_DIR=directory),
                        capture_output=True, text=True, check=True)


def _entries(directory):
  return sorted(n for n in os.listdir(directory) if n.startswith("jit_"))


def test_a_truncated_entry_is_replaced_not_kept(tmp_path):
  # A process killed while JAX wrote an entry in place left it truncated:
  # every later process warned that it could not read it, compiled the
  # program again and kept the broken entry. Now the entry is rewritten
  # (whole, renamed into place) by the next process that compiles it.
  for first_jax in (False, True):  # patched whether or not jax came first
    directory = str(tmp_path / f"cache_{first_jax}")
    assert _compile(directory, first_jax).stdout.split()[-1] == "7"
    (entry,) = [n for n in _entries(directory) if "lambda" in n]
    path = os.path.join(directory, entry)
    with open(path, "rb") as f:
      whole = f.read()
    os.truncate(path, len(whole) // 2)
    again = _compile(directory, first_jax)
    assert again.stdout.split()[-1] == "7"
    assert "Error reading persistent compilation cache entry" in again.stderr
    with open(path, "rb") as f:
      assert len(f.read()) == len(whole)  # rewritten whole
    third = _compile(directory, first_jax)
    assert "UserWarning" not in third.stderr, third.stderr
    assert not [n for n in os.listdir(directory)
                if files.TEMPORARY_MARK in n]


def test_entries_are_readable_by_a_shared_caches_other_users(tmp_path):
  # mkstemp's 0600 hid every entry from the other users of a shared cache
  # (each failed to read it, warned and compiled again); JAX's own entries
  # are 0666 less the umask.
  directory = str(tmp_path / "shared")
  base = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
  subprocess.run(
      [sys.executable, "-c", "import os\nos.umask(0o022)\n" + _COMPILE],
      env=dict(base, JAX_COMPILATION_CACHE_DIR=directory),
      capture_output=True, text=True, check=True)
  (entry,) = [n for n in _entries(directory) if "lambda" in n]
  assert os.stat(os.path.join(directory, entry)).st_mode & 0o777 == 0o644


def test_a_remote_cache_is_left_to_jax():
  # gs://...: os.replace cannot reach it; JAX's own put writes there.
  calls = []

  class _Remote:
    path = "gs://bucket/cache"
    eviction_enabled = False

  put = compile_cache._atomic_put(  # pylint: disable=protected-access
      lambda self, key, value: calls.append((key, value)))
  put(_Remote(), "jit_f-0123", b"x")
  assert calls == [("jit_f-0123", b"x")]


def test_a_killed_writers_temporary_goes_at_the_next_start(tmp_path):
  # A process killed while it wrote an entry left `.HEX.tmp.csl_jax.PID` in
  # the cache, which nothing read or removed; a live writer's stays.
  directory = tmp_path / "cache"
  directory.mkdir()
  dead = subprocess.Popen([sys.executable, "-c", "pass"])
  dead.wait()
  left = directory / f".0a1b2c{files.TEMPORARY_MARK}{dead.pid}"
  live = directory / f".0a1b2c{files.TEMPORARY_MARK}{os.getpid()}"
  other = directory / "jit_f-abc-cache"
  for path in (left, live, other):
    path.write_bytes(b"x")
  _run(JAX_COMPILATION_CACHE_DIR=str(directory))
  assert not left.exists()
  assert live.exists() and other.exists()
