"""csl_jax.numba_fixes: kernel cache saves that concurrent processes cannot
mix up (each signature's index entry names its own complete file), and slice
assignments that still check shapes with the cheap error."""

import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

from csl_jax.numba_fixes import cache
from csl_jax.numba_fixes import slice_errors

# One cached kernel, compiled for one dtype per process; a mixed-up cache
# returns the other dtype's sum (or crashes).
_MODULE = textwrap.dedent("""\
    import sys
    import numba
    import numpy as np
    from csl_jax import numba_fixes

    @numba.njit(cache=True)
    def total(a):
      s = a[0] * 0
      for v in a:
        s += v * v + 1
      return s

    if __name__ == "__main__":
      for name in sys.argv[1:]:
        a = np.arange(1, 50).astype(np.dtype(name))
        print(repr(float(total(a))))
    """)
_DTYPES = ("int32", "int64", "float64")


def test_installed_on_this_numba():
  assert cache.install()
  assert slice_errors.install()


@numba.njit
def _assign(out, src, lo, hi):
  out[lo:hi] = src
  return out


def test_slice_assignment_still_copies_and_checks_shapes():
  out = _assign(np.zeros((4, 2)), np.arange(4.0).reshape(2, 2), 1, 3)
  np.testing.assert_array_equal(out, [[0, 0], [0, 1], [2, 3], [0, 0]])
  with pytest.raises(ValueError, match=slice_errors.MESSAGE):
    _assign(np.zeros((4, 2)), np.ones((3, 2)), 1, 3)


def test_processes_compiling_at_once_keep_each_signature_apart(tmp_path):
  (tmp_path / "kernel.py").write_text(_MODULE)
  env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
             PYTHONPATH=os.pathsep.join([str(tmp_path)] + sys.path))

  def run(*groups):
    procs = [subprocess.Popen([sys.executable, "kernel.py", *g], cwd=tmp_path,
                              env=env, stdout=subprocess.PIPE, text=True)
             for g in groups]
    return [l for p in procs for l in p.communicate()[0].split()]

  first = run(*([d] for d in _DTYPES))  # all compile (and save) at once
  again = run(_DTYPES)  # one process loads what each of the others saved
  assert len(first) == len(_DTYPES), first
  for d, a, b in zip(_DTYPES, first, again):
    assert b == a, (d, a, b)
  files = [n for _, _, names in os.walk(tmp_path / "cache") for n in names]
  assert sum(n.endswith(".nbi") for n in files) == 1
  assert sum(n.endswith(".nbc") for n in files) == len(_DTYPES)


def test_a_cache_nowhere_writable_falls_back_to_the_temporary_dir(tmp_path):
  # A read-only install run by a user whose home is read-only or missing
  # (`nobody`'s /nonexistent): numba found no directory to cache in and
  # refused to define the kernel, a RuntimeError traceback at import. A
  # file where each directory would go makes them unwritable even as root.
  package = tmp_path / "package"
  package.mkdir()
  (package / "kernel.py").write_text(_MODULE)
  (package / "__pycache__").write_text("")
  (tmp_path / "file").write_text("")
  env = dict(os.environ, HOME=str(tmp_path / "file" / "home"),
             XDG_CACHE_HOME=str(tmp_path / "file" / "cache"),
             TMPDIR=str(tmp_path / "tmp"),
             PYTHONPATH=os.pathsep.join([str(package)] + sys.path))
  env.pop("NUMBA_CACHE_DIR", None)
  (tmp_path / "tmp").mkdir()

  def run():
    return subprocess.run([sys.executable, "kernel.py", "int64"],
                          cwd=package, env=env, capture_output=True,
                          text=True, check=False)

  first = run()
  assert first.returncode == 0, first.stderr
  assert first.stdout.split() == ["40474.0"]
  assert "set NUMBA_CACHE_DIR" in first.stderr
  saved = [n for _, _, names in os.walk(tmp_path / "tmp") for n in names]
  assert sum(n.endswith(".nbc") for n in saved) == 1  # a second run loads it
  assert run().stdout == first.stdout
