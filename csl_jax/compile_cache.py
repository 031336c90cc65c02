"""JAX's persistent compilation cache, on for every `csl-jax` command.

A CSL fit compiles dozens of small XLA programs (one per array shape), and a
seq2seq run compiles its train and decode steps: seconds each process pays
again for identical programs (BENCHMARKS.md "Issue 10 → Test suite"). JAX
keys the cache on the program, jax/jaxlib versions, backend and flags, so a
stale entry is never used.

JAX (0.10) writes an entry in place (`LRUCache.put`: `write_bytes` on the
entry's own name) and never writes one that exists. A process killed while
it wrote (kill -9, out of memory, a full disk) left a truncated entry that
every later process sharing the cache failed to read (a UserWarning with
its source line), compiled again, and kept; another process reading the
entry while it was written failed the same way. Here an entry is written
to a temporary name and renamed into place, and one that exists when a
process writes (it could not read it, or another process has just written
the same program) is replaced.
"""

import hashlib
import importlib.abc
import importlib.util
import os
import platform
import sys

from csl_jax import files

ENV = "JAX_COMPILATION_CACHE_DIR"
MIN_SECONDS_ENV = "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"


def default_directory() -> str:
  """Per host CPU: a home directory shared by machines of other CPUs must
  not hand one a program compiled for another's instruction set."""
  root = os.environ.get("XDG_CACHE_HOME") or os.path.join(
      os.path.expanduser("~"), ".cache")
  return os.path.join(root, "csl_jax", "jax", _host_key())


def _host_key() -> str:
  flags = platform.processor()
  try:
    with open("/proc/cpuinfo", encoding="utf-8") as f:
      flags = next((line for line in f if line.startswith("flags")), flags)
  except OSError:
    pass
  digest = hashlib.sha256(flags.encode()).hexdigest()[:12]
  return f"{platform.machine() or 'cpu'}-{digest}"


def _atomic_put(original):
  def put(self, key: str, value: bytes) -> None:
    directory = os.fspath(self.path)
    if (not key or getattr(self, "eviction_enabled", False)
        or "://" in directory):
      # JAX's own: its lock and checks, or a remote store (gs://) that
      # os.replace cannot reach.
      return original(self, key, value)
    # Not mkstemp: its 0600 would hide entries from the other users of a
    # shared cache (JAX's own are 0666 less the umask). A short name: the
    # key already nears the file system's limit on a name's length. Random:
    # threads of one process may write at once. csl-jax's temporary mark:
    # a killed writer's is removed at the next start (`enable`).
    temporary = files.temporary_path(
        os.path.join(directory, "." + os.urandom(6).hex()))
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
      with os.fdopen(fd, "wb") as f:
        f.write(value)
      os.replace(temporary, os.path.join(directory, f"{key}-cache"))
    except BaseException:
      try:
        os.remove(temporary)
      except OSError:
        pass
      raise
  put.csl_jax_atomic = True
  return put


def _patch(lru_cache) -> None:
  cache = getattr(lru_cache, "LRUCache", None)
  if (cache is None or getattr(cache.put, "csl_jax_atomic", False)
      or getattr(lru_cache, "_CACHE_SUFFIX", None) != "-cache"):
    return  # another JAX: its own put
  cache.put = _atomic_put(cache.put)


_LRU = "jax._src.lru_cache"


class _PatchOnImport(importlib.abc.MetaPathFinder):
  """Patches JAX's file cache when jax imports it, so `enable` need not
  import jax (commands that never use it start faster)."""

  def find_spec(self, name, path=None, target=None):  # pylint: disable=unused-argument
    if name != _LRU:
      return None
    sys.meta_path.remove(self)
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
      return spec
    exec_module = spec.loader.exec_module

    def exec_and_patch(module):
      exec_module(module)
      _patch(module)

    spec.loader.exec_module = exec_and_patch
    return spec


def _patch_file_cache() -> None:
  if _LRU in sys.modules:
    _patch(sys.modules[_LRU])
  elif not any(isinstance(f, _PatchOnImport) for f in sys.meta_path):
    sys.meta_path.insert(0, _PatchOnImport())


def enable() -> None:
  """Caches every compiled program under $JAX_COMPILATION_CACHE_DIR (the
  user's choice wins), else `default_directory()`."""
  directory = os.environ.get(ENV)
  if not directory:
    directory = default_directory()
    try:
      os.makedirs(directory, exist_ok=True)
    except OSError as e:
      # A read-only or missing home: JAX's own complaint was a UserWarning
      # that reading a cache entry failed, with its source line. No cache.
      from absl import logging  # pylint: disable=g-import-not-at-top
      logging.warning("JAX's compilation cache is off: cannot create %s (%s);"
                      " set %s to a writable directory to keep compiled "
                      "programs between runs", directory,
                      e.strerror or e, ENV)
      return
  if "://" not in directory:
    # What a process killed while it wrote an entry left, which nothing
    # reads.
    files.remove_temporaries(directory)
  _patch_file_cache()
  # Most of a fit's programs compile in well under JAX's default 1 s floor.
  min_seconds = os.environ.get(MIN_SECONDS_ENV, "0")
  if "jax" in sys.modules:  # jax read its environment already
    import jax  # pylint: disable=g-import-not-at-top
    jax.config.update("jax_compilation_cache_dir", directory)
    jax.config.update("jax_persistent_cache_min_compile_time_secs",
                      float(min_seconds))
  else:
    os.environ[ENV] = directory
    os.environ[MIN_SECONDS_ENV] = min_seconds
