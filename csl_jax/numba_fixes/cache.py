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

It also gives numba a last place to cache in: where neither
$NUMBA_CACHE_DIR, the package's `__pycache__` nor the user's cache
directory can be written (a read-only install run by a user whose home is
read-only or missing, such as `nobody`'s /nonexistent), numba refused to
define a cached kernel at all, a RuntimeError traceback at import.
"""

import contextlib
import itertools
import os
import stat
import tempfile

try:
  import fcntl
except ImportError:  # not POSIX: numba's own, unlocked saves
  fcntl = None
from absl import logging
from numba.core import caching
from numba.misc.appdirs import AppDirs

from csl_jax.errors import InputError

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


_FALLBACK_DIR = []  # the directory, once chosen


def _fallback_directory(py_file: str) -> str:
  """A directory of this user's under the temporary directory, said once.
  Never one another user can write: numba loads code from it."""
  if _FALLBACK_DIR:
    return _FALLBACK_DIR[0]
  uid = os.getuid()
  try:
    path = os.path.join(tempfile.gettempdir(), f"csl_jax-numba-{uid}")
    try:
      os.makedirs(path, mode=0o700, exist_ok=True)
      info = os.lstat(path)
      if (not stat.S_ISDIR(info.st_mode) or info.st_uid != uid
          or info.st_mode & 0o022):
        raise PermissionError(path)
    except OSError:  # taken, or not ours alone: a fresh one
      path = tempfile.mkdtemp(prefix="csl_jax-numba-")
  except OSError as e:
    raise InputError(
        "no writable directory for numba's compiled kernels: not the "
        "package's __pycache__, not the user's cache directory "
        f"({AppDirs(appname='numba', appauthor=False).user_cache_dir}), not "
        f"the temporary directory ({e.strerror or e}): set NUMBA_CACHE_DIR "
        "to a writable directory", os.path.dirname(py_file)) from None
  given = os.environ.get("NUMBA_CACHE_DIR")
  # Side processes (compile_ahead, precompile) cache there too, as numba's
  # own $NUMBA_CACHE_DIR locator gives the same paths.
  os.environ["NUMBA_CACHE_DIR"] = path
  _FALLBACK_DIR.append(path)
  logging.warning(
      "numba: %sthe package's __pycache__ (%s) and the user's cache "
      "directory (%s) are not writable; the compiled kernels are cached in "
      "%s, which the system may clear (set NUMBA_CACHE_DIR to a writable "
      "directory to keep them)",
      f"$NUMBA_CACHE_DIR ({given}), " if given else "",
      os.path.dirname(py_file),
      AppDirs(appname="numba", appauthor=False).user_cache_dir, path)
  return path


class _TemporaryDirLocator(caching._SourceFileBackedLocatorMixin,  # pylint: disable=protected-access
                           caching._CacheLocator):  # pylint: disable=protected-access
  """numba's last locator: the temporary directory, where its own found
  nothing writable. The same paths as its $NUMBA_CACHE_DIR locator."""

  def __init__(self, py_func, py_file):
    self._py_file = py_file
    self._lineno = py_func.__code__.co_firstlineno
    self._cache_path = os.path.join(_fallback_directory(py_file),
                                    self.get_suitable_cache_subpath(py_file))

  def get_cache_path(self):
    return self._cache_path


def install() -> bool:
  """Patches numba's cache saves (once); False where it cannot (no fcntl,
  or a numba whose cache lacks the methods this relies on)."""
  locators = caching.CacheImpl._locator_classes  # pylint: disable=protected-access
  if _TemporaryDirLocator not in locators:
    locators.append(_TemporaryDirLocator)
  cache_file = caching.IndexDataCacheFile
  if cache_file.save is _save:
    return True
  if fcntl is None or not all(hasattr(cache_file, n) for n in _NEEDED):
    return False
  cache_file.save = _save
  return True


install()
