"""Numba's on-disk kernel cache, safe when processes compile at once.

Every kernel is `cache=True`. Numba (0.68) saves a compiled signature by
reading the kernel's index, picking the first free data-file number, writing
the index and then the data, with no lock: two processes saving signatures
of one kernel at the same time (xdist workers, CLI processes a test starts,
parallel jobs of a user) can pick the same file, and the index then maps one
signature to the other's machine code, which later processes load and run.
Importing this module makes each save hold an exclusive lock on the
kernel's index while it rereads the index, writes the data and only then
the index, so an index entry always names that signature's own complete
file. Kernel modules import it before they define kernels.
"""

import contextlib
import itertools

try:
  import fcntl
except ImportError:  # not POSIX: numba's own, unlocked saves
  fcntl = None
from numba.core import caching

_NEEDED = ("_load_index", "_save_index", "_save_data", "_data_name")


@contextlib.contextmanager
def _locked(path: str):
  with open(path + ".lock", "a+b") as f:
    fcntl.flock(f, fcntl.LOCK_EX)
    try:
      yield
    finally:
      fcntl.flock(f, fcntl.LOCK_UN)


def _save(self, key, data):
  """`numba.core.caching.IndexDataCacheFile.save`, under the index's lock."""
  with _locked(self._index_path):  # pylint: disable=protected-access
    overloads = self._load_index()  # pylint: disable=protected-access
    name = overloads.get(key)
    if name is None:
      used = set(overloads.values())
      name = next(n for n in map(self._data_name, itertools.count(1))  # pylint: disable=protected-access
                  if n not in used)
    self._save_data(name, data)  # pylint: disable=protected-access
    overloads[key] = name
    self._save_index(overloads)  # pylint: disable=protected-access


def install() -> bool:
  """Patches numba's cache saves (once); False where it cannot (no fcntl,
  or a numba whose cache lacks the methods this relies on)."""
  cache_file = caching.IndexDataCacheFile
  if cache_file.save is _save:
    return True
  if fcntl is None or not all(hasattr(cache_file, n) for n in _NEEDED):
    return False
  cache_file.save = _save
  return True


install()
