"""SIGTERM (and, where asked, Ctrl-C) as a request to stop at the next safe
point, not at once.

A time limit's `timeout`, or a machine being taken back, sends SIGTERM to
a whole process group: the trainer then checkpoints the step it is on
(`seq2seq/train.py`), and `run-bundle`'s parent waits for its lanes to do
so (`seq2seq/bundle.py`). With `interrupt=True` a first Ctrl-C (SIGINT)
is such a request too: the trainer checkpoints, then raises
KeyboardInterrupt (a KeyboardInterrupt at an arbitrary bytecode would
leave the step, the data position and the loss history out of step, so
nothing could be saved). A second Ctrl-C stops at once, as Python's own
handler does. Only the main thread takes signals: elsewhere nothing is
ever requested.
"""

import os
import signal
import threading

from absl import logging

EXIT_CODE = 128 + signal.SIGTERM  # what a process killed by SIGTERM returns
# Said by a KeyboardInterrupt of a second Ctrl-C: nothing was saved then.
AT_ONCE = ("stopped at once (Ctrl-C twice), without a checkpoint: the same "
           "command resumes from the last checkpoint, training the steps "
           "since then again")


class StopRequest:
  """`with StopRequest() as stop:` ... `stop.requested` once SIGTERM came
  (with `interrupt=True`, or a first Ctrl-C: then `stop.interrupted` too,
  and the Ctrl-C is answered on stderr, naming the work `what`);
  the earlier handlers are back after the block. A Ctrl-C the block did not
  act on is raised as KeyboardInterrupt as it ends."""

  def __init__(self, interrupt: bool = False, what: str = ""):
    self.requested = False
    self.interrupted = False
    self._interrupt = interrupt
    self._what = what  # the work, as the messages name it ("fit")
    self._previous = {}

  def __enter__(self) -> "StopRequest":
    if threading.current_thread() is threading.main_thread():
      self._previous[signal.SIGTERM] = signal.signal(signal.SIGTERM,
                                                     self._ask)
      # Only over Python's own handler: an ignored SIGINT (a job started
      # in the background) or someone else's handler is left alone.
      if (self._interrupt and
          signal.getsignal(signal.SIGINT) is signal.default_int_handler):
        self._previous[signal.SIGINT] = signal.signal(signal.SIGINT,
                                                      self._ask_interrupt)
    return self

  def _ask(self, signum, frame):
    del signum, frame
    self.requested = True

  def _ask_interrupt(self, signum, frame):
    del signum, frame
    if self.interrupted:
      raise KeyboardInterrupt(AT_ONCE)
    self.requested = self.interrupted = True
    # os.write: the main thread may be inside a write to sys.stderr.
    try:
      os.write(2, (f"\ncsl-jax: Ctrl-C: {self._what} checkpoints the step "
                   "in progress, then stops (Ctrl-C again: at once, without "
                   "it)\n").encode())
    except OSError:
      pass

  def __exit__(self, exc_type, *exc_info):
    for signum, previous in self._previous.items():
      if previous is not None:  # None: a handler set outside Python
        signal.signal(signum, previous)
    self._previous = {}
    if self.interrupted and exc_type is None:
      raise KeyboardInterrupt

  def stop(self, step: int):
    """Once the step reached is checkpointed: KeyboardInterrupt after a
    first Ctrl-C, SystemExit(EXIT_CODE) after SIGTERM, each saying so."""
    if self.interrupted:
      raise KeyboardInterrupt(f"{self._what} stopped at step {step} "
                              "(checkpointed); the same command resumes there")
    logging.info("SIGTERM: %s stopped at step %d (checkpointed)", self._what,
                 step)
    raise SystemExit(EXIT_CODE)
