"""One process per run directory: an advisory lock on `RUN/.lock`.

Two `csl-jax augment` runs into one directory would mix their artifacts
(one run's model fit on the other's data); so would two stage commands
(`fit`, `parse`, `train`, ...) into one `--out`, which `cli/stage.py` locks
the same way. The lock is an OS file lock, so
it goes away with the process however it ends (kill -9 included): there is
never a stale lock to clean up by hand.
"""

import contextlib
import errno
import fcntl
import os
import time
from typing import Iterator

from absl import logging

from csl_jax.errors import InputError
from csl_jax.files import remove_temporaries

LOCK_FILE = ".lock"


def _holder(path: str) -> str:
  try:
    with open(path, encoding="utf-8") as f:
      pid = f.read().strip()
    return f"pid {pid}" if pid else "another process"
  except OSError:
    return "another process"


@contextlib.contextmanager
def run_lock(run_dir: str, wait: bool = False,
             poll_seconds: float = 1.0,
             wait_flag: bool = True) -> Iterator[None]:
  """Holds the lock of `run_dir` for the body.

  Args:
    run_dir: the run directory (created if missing).
    wait: wait for the other process to finish instead of stopping.
    poll_seconds: how often to retry while waiting.
    wait_flag: the command has `--wait` (the error suggests it).

  Raises:
    InputError: the directory is locked by a live process and `wait` is off,
      or it cannot be created or written.
  """
  try:
    os.makedirs(run_dir, exist_ok=True)
    # Only a directory a run held before can hold a killed run's leftovers.
    used_before = os.path.exists(os.path.join(run_dir, LOCK_FILE))
    fd = os.open(os.path.join(run_dir, LOCK_FILE), os.O_RDWR | os.O_CREAT,
                 0o644)
  except OSError as e:
    raise InputError(f"cannot use as a run directory ({e.strerror})",
                     run_dir) from None
  try:
    announced = False
    while True:
      try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        break
      except OSError as e:
        if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
          raise
        holder = _holder(os.path.join(run_dir, LOCK_FILE))
        if not wait:
          raise InputError(
              f"in use by {holder} (another csl-jax run); wait for it to "
              f"finish{', pass --wait,' if wait_flag else ''} or choose "
              "another --out", run_dir) from None
        if not announced:
          logging.info("%s is in use by %s; waiting", run_dir, holder)
          announced = True
        time.sleep(poll_seconds)
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    # A holder killed mid-write left its temporaries; no rerun would
    # write or remove them again (they carry the dead holder's pid).
    for path in remove_temporaries(run_dir) if used_before else ():
      logging.info("removed %s, left by a run that was killed", path)
    yield
  finally:
    os.close(fd)  # releases the lock
