"""JAX's persistent compilation cache, on for every `csl-jax` command.

A CSL fit compiles dozens of small XLA programs (one per array shape), and a
seq2seq run compiles its train and decode steps: seconds each process pays
again for identical programs (BENCHMARKS.md "Issue 10 → Test suite"). JAX
keys the cache on the program, jax/jaxlib versions, backend and flags, so a
stale entry is never used.
"""

import hashlib
import os
import platform
import sys

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
