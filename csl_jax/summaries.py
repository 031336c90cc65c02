"""One TensorBoard scalar writer for every training loop.

Event files are written with the `tensorboard` package's record writer on a
local file, not `tf.summary` (nor tensorboard's EventFileWriter, which goes
through `tf.io.gfile` when TensorFlow is installed): a CSL fit then never
imports TensorFlow (seconds per process, see BENCHMARKS.md "Issue 10 → Test
suite"), and TensorBoard reads `simple_value` scalars as it reads
`tf.summary.scalar`'s.
"""

import os
import socket
import time
from typing import Mapping, Optional


FLUSH_SECONDS = 5.0


class TensorBoardWriter:
  """TensorBoard scalars under `directory`; a no-op when it is None/empty."""

  def __init__(self, directory: Optional[str],
               start_step: Optional[int] = None):
    """`start_step`: a training run that starts (or resumed) at that step
    (0: from scratch). A SessionLog START at the step after it tells
    TensorBoard to drop what an earlier process wrote from there on (the
    steps a kill lost since the checkpoint, or since step 0 before any,
    trained again now), as tf.summary's writers do on a restart. None: a
    writer that adds to a run's scalars (scores of a finished training)."""
    self._writer = None
    self._flushed = time.time()
    if directory:
      # pylint: disable=g-import-not-at-top
      from tensorboard.compat.proto import event_pb2
      from tensorboard.compat.proto import summary_pb2
      from tensorboard.summary.writer import record_writer
      # pylint: enable=g-import-not-at-top
      self._event_pb2, self._summary_pb2 = event_pb2, summary_pb2
      os.makedirs(directory, exist_ok=True)
      # One new file per writer, named as TensorFlow names them: a resumed
      # run appends a file, the reader merges them by step.
      path = os.path.join(directory, "events.out.tfevents.%010d.%s.%d.%d" % (
          time.time(), socket.gethostname(), os.getpid(), id(self)))
      self._writer = record_writer.RecordWriter(open(path, "wb"))
      self._write(event_pb2.Event(wall_time=time.time(),
                                  file_version="brain.Event:2"))
      if start_step is not None:
        self._write(event_pb2.Event(
            wall_time=time.time(), step=int(start_step) + 1,
            session_log=event_pb2.SessionLog(
                status=event_pb2.SessionLog.START)))

  @property
  def enabled(self) -> bool:
    return self._writer is not None

  def scalar(self, name: str, value: float, step: int) -> None:
    """Writes one scalar; flushed every FLUSH_SECONDS, so that TensorBoard
    sees a long fit as it goes and a killed one keeps its curve."""
    self._add({name: value}, step)
    if self._writer is not None and (
        time.time() - self._flushed >= FLUSH_SECONDS):
      self._writer.flush()
      self._flushed = time.time()

  def scalars(self, values: Mapping[str, float], step: int,
              prefix: str = "") -> None:
    """Writes `prefix/name` for each value, then flushes: callers log a
    group at a time, so TensorBoard sees progress during long runs."""
    if self._writer is None:
      return
    self._add({f"{prefix}/{k}" if prefix else k: v
               for k, v in values.items()}, step)
    self._writer.flush()

  def _add(self, values: Mapping[str, float], step: int) -> None:
    if self._writer is None:
      return
    summary = self._summary_pb2.Summary(value=[
        self._summary_pb2.Summary.Value(tag=tag, simple_value=float(value))
        for tag, value in values.items()])
    self._write(self._event_pb2.Event(wall_time=time.time(), step=int(step),
                                      summary=summary))

  def _write(self, event) -> None:
    self._writer.write(event.SerializeToString())

  def close(self) -> None:
    if self._writer is not None:
      self._writer.flush()
      self._writer.close()
      self._writer = None
