"""SIGTERM as a request to stop at the next safe point, not at once.

A time limit's `timeout`, or a machine being taken back, sends SIGTERM to
a whole process group: the trainer then checkpoints the step it is on
(`seq2seq/train.py`), and `run-bundle`'s parent waits for its lanes to do
so (`seq2seq/bundle.py`). Only the main thread takes signals: elsewhere
nothing is ever requested.
"""

import signal
import threading

EXIT_CODE = 128 + signal.SIGTERM  # what a process killed by SIGTERM returns


class StopRequest:
  """`with StopRequest() as stop:` ... `stop.requested` once SIGTERM came;
  the earlier handler is back after the block."""

  def __init__(self):
    self.requested = False
    self._previous = None

  def __enter__(self) -> "StopRequest":
    if threading.current_thread() is threading.main_thread():
      self._previous = signal.signal(signal.SIGTERM, self._ask)
    return self

  def _ask(self, signum, frame):
    del signum, frame
    self.requested = True

  def __exit__(self, *exc_info):
    if self._previous is not None:
      signal.signal(signal.SIGTERM, self._previous)
