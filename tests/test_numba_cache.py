"""csl_jax.numba_cache: kernel cache saves that concurrent processes cannot
mix up (each signature's index entry names its own complete file)."""

import os
import subprocess
import sys
import textwrap

from csl_jax import numba_cache

# One cached kernel, compiled for one dtype per process; a mixed-up cache
# returns the other dtype's sum (or crashes).
_MODULE = textwrap.dedent("""\
    import sys
    import numba
    import numpy as np
    from csl_jax import numba_cache

    @numba.njit(cache=True)
    def total(a):
      s = a[0] * 0
      for v in a:
        s += v * v + 1
      return s

    if __name__ == "__main__":
      dtype = np.dtype(sys.argv[1])
      a = np.arange(1, 50).astype(dtype)
      print(repr(float(total(a))))
    """)
_DTYPES = ("int16", "int32", "int64", "float64")


def test_installed_on_this_numba():
  assert numba_cache.install()


def test_processes_compiling_at_once_keep_each_signature_apart(tmp_path):
  (tmp_path / "kernel.py").write_text(_MODULE)
  env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
             PYTHONPATH=os.pathsep.join([str(tmp_path)] + sys.path))

  def run_all():
    procs = [subprocess.Popen([sys.executable, "kernel.py", d], cwd=tmp_path,
                              env=env, stdout=subprocess.PIPE, text=True)
             for d in _DTYPES]
    return [p.communicate()[0].strip() for p in procs]

  first = run_all()  # all compile (and save) at once
  again = run_all()  # all load what the others saved
  assert all(first), first
  for d, a, b in zip(_DTYPES, first, again):
    assert b == a, (d, a, b)
  files = [n for _, _, names in os.walk(tmp_path / "cache") for n in names]
  assert sum(n.endswith(".nbi") for n in files) == 1
  assert sum(n.endswith(".nbc") for n in files) == len(_DTYPES)
