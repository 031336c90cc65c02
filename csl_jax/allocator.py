"""glibc malloc settings for long JAX loops on CPU.

XLA gives each execution of a compiled program one large block for its
temporaries. glibc serves blocks above its mmap threshold (at most 32 MB)
with a fresh mmap and unmaps them on free, so every training step faults in
and zeroes those pages again: on the COGS fit that was most of its system
time (BENCHMARKS "Issue 17 → COGS fit"). Serving every block from the
heap and not trimming it keeps the pages mapped from one step to the next.
The cost is that freed memory stays with the process (peak RSS, not growth:
the next step reuses it). XLA's worker threads would each get an arena of
their own, whose heaps glibc maps and trims apart from these settings (the
COGS fit's system time again): one arena for all threads keeps their
blocks mapped too (BENCHMARKS "Issue 17 → COGS fit < 60 s on the slower
box"). `CSL_JAX_MALLOC=default` leaves glibc as it is.
"""

import ctypes
import ctypes.util
import os

_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_M_ARENA_MAX = -8


def keep_freed_memory() -> bool:
  """Applies the settings; False where there is no glibc (or opted out)."""
  if os.environ.get("CSL_JAX_MALLOC") == "default":
    return False
  name = ctypes.util.find_library("c")
  if not name:
    return False
  try:
    libc = ctypes.CDLL(name)
    mallopt = libc.mallopt
  except (OSError, AttributeError):  # not glibc (e.g. macOS)
    return False
  return (bool(mallopt(_M_MMAP_MAX, 0))
          and bool(mallopt(_M_TRIM_THRESHOLD, 2**31 - 1))
          and bool(mallopt(_M_ARENA_MAX, 1)))
