"""Shares of work in forked children, the parent taking one itself.

The candidate search reads a large state (the grammar, its encodings, the
cost caches): forked children see it without a copy. The parent computes
the first share in place, so what it computes stays in its caches and no
process sits idle waiting; each child computes one other share and sends
it back pickled through a pipe (process-to-process only, never stored),
then leaves with `os._exit`: no interpreter teardown of the copied heap.
"""

import os
import pickle
import signal
import traceback
from typing import Callable, List, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def _child(fn: Callable[[T], R], share: T, write_fd: int) -> None:
  code = 0
  try:
    payload = pickle.dumps((True, fn(share)), pickle.HIGHEST_PROTOCOL)
  except BaseException:  # pylint: disable=broad-except
    payload = pickle.dumps((False, traceback.format_exc()))
    code = 1
  try:
    with os.fdopen(write_fd, "wb") as f:
      f.write(payload)
  finally:
    os._exit(code)  # pylint: disable=protected-access


def fork_map(fn: Callable[[T], R], shares: Sequence[T]) -> List[R]:
  """[fn(s) for s in shares], shares[1:] each in a forked child. A child's
  error is raised here with its traceback."""
  children = []
  try:
    for share in shares[1:]:
      read_fd, write_fd = os.pipe()
      pid = os.fork()
      if pid == 0:
        os.close(read_fd)
        _child(fn, share, write_fd)
      os.close(write_fd)
      children.append((pid, read_fd))
    results = [fn(shares[0])] if shares else []
    while children:
      pid, read_fd = children[0]
      with os.fdopen(read_fd, "rb") as f:
        data = f.read()
      children.pop(0)
      _, status = os.waitpid(pid, 0)
      if not data:
        raise RuntimeError(f"forked worker {pid} died (wait status "
                           f"{status}) before sending its share")
      ok, value = pickle.loads(data)
      if not ok:
        raise RuntimeError(f"forked worker {pid} failed:\n{value}")
      results.append(value)
    return results
  finally:
    for pid, read_fd in children:  # after an error: stop the rest
      try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
      except OSError:
        pass
      os.close(read_fd)
