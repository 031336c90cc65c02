"""Quiet accelerator probes: no alarming CUDA lines on CPU-only machines.

TensorFlow (TensorBoard summaries, TFDS, SeqIO) and JAX probe for CUDA when
imported. On a machine without a GPU that prints lines such as
`cudart_stub.cc: Could not find cuda drivers`, `failed call to cuInit` or
`Unable to initialize backend 'cuda'`, which look like failures but are not.

`silence_accelerator_logs()` (call once at CLI start, before TensorFlow or
JAX is imported) only changes what is LOGGED, never which device is used:

* TF_CPP_MIN_LOG_LEVEL, unless the user set it: 3 on a machine with no
  NVIDIA/TPU device nodes (TensorFlow logs `failed call to cuInit` as an
  ERROR when it first touches devices, e.g. for a TensorBoard writer), else
  2 (INFO and WARNING off, real errors stay);
* JAX_PLATFORMS is never set: forcing `cpu` would hide a GPU or TPU that
  JAX could use (TPU VMs and containers do not always show device nodes);
* on a machine with no NVIDIA/TPU device nodes, JAX's "falling back to
  cpu" / "Unable to initialize backend" messages are dropped from Python
  logging.

Some TensorFlow builds print `cudart_stub` lines at import regardless of
TF_CPP_MIN_LOG_LEVEL; `filtered_stderr()` drops exactly those known probe
lines (`NOISE`) from file descriptor 2 around an import, and lets every
other line through.
"""

import contextlib
import glob
import logging
import os
import re
import sys
import tempfile
from typing import Iterator

# Lines of accelerator probing and build notices, never errors of ours.
NOISE = re.compile(
    r"cudart_stub\.cc|failed call to cuInit|cuda_diagnostics|"
    r"Could not find cuda drivers|cpu_feature_guard\.cc|"
    r"To enable the following instructions: .* rebuild TensorFlow|"
    r"All log messages before absl::InitializeLog\(\) is called|"
    r"Unable to register cu(DNN|FFT|BLAS) factory|"
    r"computation placer already registered|TF-TRT Warning|"
    r"This TensorFlow binary is optimized to use available CPU|"
    r"oneDNN custom operations are on")

_JAX_PROBE = re.compile(r"Unable to initialize backend|"
                        r"CUDA-enabled jaxlib is not installed|"
                        r"Falling back to cpu|No GPU/TPU found")


def has_accelerator_device() -> bool:
  """Whether the machine shows NVIDIA GPU or TPU device nodes."""
  patterns = ("/dev/nvidia[0-9]*", "/dev/accel*", "/dev/vfio/[0-9]*")
  return any(glob.glob(p) for p in patterns)


def _add_once(logger: logging.Logger, kind: type) -> None:
  """Adds a `kind` filter to `logger` unless it has one: every installer
  here is idempotent."""
  if not any(isinstance(f, kind) for f in logger.filters):
    logger.addFilter(kind())


class _DropJaxProbe(logging.Filter):

  def filter(self, record: logging.LogRecord) -> bool:
    return not _JAX_PROBE.search(record.getMessage())


def silence_accelerator_logs() -> None:
  """Sets the logging knobs above; idempotent. Devices are untouched."""
  device = has_accelerator_device()
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2" if device else "3")
  if not device:
    _add_once(logging.getLogger("jax._src.xla_bridge"), _DropJaxProbe)


# Orbax's, and TensorFlow's for the data position saved beside each
# checkpoint ("Sharding callback duration: ...").
_CHECKPOINTERS = (f"{os.sep}orbax{os.sep}",
                  os.path.join("tensorflow", "python", "checkpoint", ""))


class _DropCheckpointerInfo(logging.Filter):
  """Orbax logs a dozen INFO lines per checkpoint saved; ten lanes of a
  GPU call bury their own progress under them. Warnings pass."""

  def filter(self, record: logging.LogRecord) -> bool:
    return (record.levelno >= logging.WARNING or
            not any(p in record.pathname for p in _CHECKPOINTERS))


def quiet_checkpointer_logs() -> None:
  """Drops the checkpointers' INFO records from absl's logger;
  idempotent."""
  _add_once(logging.getLogger("absl"), _DropCheckpointerInfo)


class _DropSkippedLengthCheck(logging.Filter):
  """SeqIO logs an INFO line for every pipeline built without its length
  check (`input_pipeline.get_dataset` turns it off)."""

  def filter(self, record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith("Length validation is skipped")


def quiet_skipped_length_check() -> None:
  """Drops that record from absl's logger; idempotent."""
  _add_once(logging.getLogger("absl"), _DropSkippedLengthCheck)


class _DropGinProbe(logging.Filter):
  """gin tries each search-path prefix with each file reader; its package
  reader logs `ERROR Path not found` for every prefix where `gin/...` is
  not a Python package, before the file is found under the next prefix."""

  def filter(self, record: logging.LogRecord) -> bool:
    return not (record.pathname.endswith(
        os.path.join("gin", "resource_reader.py")) and
                str(record.msg).startswith("Path not found"))


def quiet_gin_search() -> None:
  """Drops those records from the root logger (gin logs there); a file
  found nowhere is still gin's IOError; idempotent."""
  _add_once(logging.getLogger(), _DropGinProbe)


@contextlib.contextmanager
def filtered_stderr() -> Iterator[None]:
  """Runs the block with fd 2 captured, then writes back every line that is
  not `NOISE` (so C++ logs of an import can be filtered; Python exceptions
  are objects and pass untouched). Only for short blocks: lines appear
  when the block ends."""
  try:
    sys.stderr.flush()
    saved = os.dup(2)
  except (OSError, ValueError):  # No real fd 2 (embedded interpreter).
    yield
    return
  with tempfile.TemporaryFile() as capture:
    os.dup2(capture.fileno(), 2)
    try:
      yield
    finally:
      sys.stderr.flush()
      os.dup2(saved, 2)
      os.close(saved)
      capture.seek(0)
      kept = [line for line in capture.read().decode(
          "utf-8", "replace").splitlines(keepends=True)
              if not NOISE.search(line)]
      if kept:
        sys.stderr.write("".join(kept))
        sys.stderr.flush()


def import_tensorflow():
  """`import tensorflow` without its CUDA probe lines; returns the module."""
  silence_accelerator_logs()
  if "tensorflow" in sys.modules:
    return sys.modules["tensorflow"]
  with filtered_stderr():
    import tensorflow  # pylint: disable=g-import-not-at-top
  return tensorflow
