"""One TensorBoard scalar writer for every training loop.

TensorFlow is imported only when a directory is given: stages that do not
write summaries (or run where TensorFlow is absent) never pay its import.
"""

from typing import Mapping, Optional


class TensorBoardWriter:
  """TensorBoard scalars under `directory`; a no-op when it is None/empty."""

  def __init__(self, directory: Optional[str]):
    self._writer = None
    if directory:
      from csl_jax import quiet  # pylint: disable=g-import-not-at-top
      tf = quiet.import_tensorflow()  # without the CUDA probe lines
      self._tf = tf
      self._writer = tf.summary.create_file_writer(directory)

  @property
  def enabled(self) -> bool:
    return self._writer is not None

  def scalar(self, name: str, value: float, step: int) -> None:
    if self._writer is not None:
      with self._writer.as_default():
        self._tf.summary.scalar(name, value, step=step)

  def scalars(self, values: Mapping[str, float], step: int,
              prefix: str = "") -> None:
    """Writes `prefix/name` for each value, then flushes: callers log a
    group at a time, so TensorBoard sees progress during long runs."""
    if self._writer is None:
      return
    with self._writer.as_default():
      for name, value in values.items():
        tag = f"{prefix}/{name}" if prefix else name
        self._tf.summary.scalar(tag, value, step=step)
    self._writer.flush()

  def close(self) -> None:
    if self._writer is not None:
      self._writer.flush()
      self._writer.close()
      self._writer = None
