"""Atomic writes of text and JSON artifacts (never pickle); checked reads
of the user's text inputs."""

import contextlib
import errno
import hashlib
import io
import json
import os
import re
import shutil
from typing import Any, Callable, Iterable, Iterator, List, Union

from csl_jax.errors import InputError


@contextlib.contextmanager
def _atomic(path: str) -> Iterator[str]:
  """A temporary path beside `path` to write; moved onto `path` when the
  block ends, removed if it raises (a full disk leaves no partial file)."""
  path = os.fspath(path)
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  tmp = temporary_path(path)
  try:
    yield tmp
    os.replace(tmp, path)
  finally:
    if os.path.exists(tmp):
      os.remove(tmp)


# What csl-jax writes before a rename: NAME.tmp.csl_jax.PID[.png]. The
# mark is csl-jax's own, so that a cleanup never takes another program's
# file; the pid says whether its writer is alive.
TEMPORARY_MARK = ".tmp.csl_jax."
_TEMPORARY = re.compile(re.escape(TEMPORARY_MARK) + r"(\d+)(\.png)?$")
# Deep enough for every temporary csl-jax writes below a run directory
# (an experiment's cells/SPLIT/DATA/seed_N/PART/FILE); a bound on the walk
# where --out is a large tree.
_TEMPORARY_DEPTH = 8


def temporary_path(path: str, suffix: str = "") -> str:
  """Where to write `path` before renaming it onto `path`."""
  return f"{path}{TEMPORARY_MARK}{os.getpid()}{suffix}"


def _pid_alive(pid: int) -> bool:
  """Whether process `pid` runs (on this host); a number no pid can be
  counts as alive: not ours to judge."""
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except OSError:  # another user's: alive
    return True
  except OverflowError:  # no pid: not a name csl-jax wrote
    return True
  return True


def remove_temporaries(directory: str) -> List[str]:
  """Removes what a killed writer left under `directory`: a kill -9 between
  a temporary's creation and its rename leaves NAME.tmp.csl_jax.PID, which
  no rerun writes again (another pid) nor removes. Those of a live process
  (ours, or one writing there without the run lock) are left, and so is
  every name csl-jax did not write. Returns the paths."""
  removed = []
  top = os.path.join(directory, "").count(os.sep)
  for root, dirs, names in os.walk(directory):
    if os.path.join(root, "").count(os.sep) - top >= _TEMPORARY_DEPTH:
      dirs[:] = []
    for name in list(dirs) + names:
      found = _TEMPORARY.search(name)
      if not found or _pid_alive(int(found.group(1))):
        continue
      path = os.path.join(root, name)
      if name in dirs:
        dirs.remove(name)  # not walked into
        shutil.rmtree(path, ignore_errors=True)
      else:
        try:
          os.remove(path)
        except OSError:  # one we may not remove must not stop the run
          pass
      if not os.path.lexists(path):
        removed.append(path)
  return removed


def atomic_write_text(path: str, text: Union[str, Iterable[str]]) -> None:
  """Writes a file so that readers never see a partial one. `text` may be
  an iterable of pieces, written as they come (memory: one piece)."""
  with _atomic(path) as tmp:
    # A path whose name is not UTF-8 (or any non-ASCII path under an ASCII
    # locale) reaches Python with its bytes as lone surrogates, which UTF-8
    # cannot encode: a report naming its run directory was a traceback.
    # They are written as `\udce9`; read text never holds them.
    with io.open(tmp, "w", encoding="utf-8", errors="backslashreplace",
                 newline="\n") as f:
      if isinstance(text, str):
        f.write(text)
      else:
        f.writelines(text)
      f.flush()
      os.fsync(f.fileno())


def atomic_copy(src: str, dst: str) -> None:
  """`src`'s bytes at `dst`, which readers never see partial."""
  with _atomic(dst) as tmp:
    shutil.copyfile(src, tmp)


def atomic_write_json(path: str, obj: Any) -> None:
  atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def read_text(path: str) -> str:
  """The text of a UTF-8 input file, with a leading BOM removed.

  Every way a user's input file can be unreadable is an InputError naming
  the file (and, for bytes that are not UTF-8, the line): missing, a
  directory, not readable, not UTF-8. Newlines are left as they are.
  """
  path = os.fspath(path)
  if os.path.isdir(path):
    raise InputError("is a directory, expected a file", path)
  try:
    with open(path, "rb") as f:
      data = f.read()
  except FileNotFoundError:
    raise InputError("no such file", path) from None
  except PermissionError:
    raise InputError("permission denied", path) from None
  except OSError as e:
    raise InputError(f"cannot read: {e.strerror or e}", path) from None
  try:
    text = data.decode("utf-8")
  except UnicodeDecodeError as e:
    line = data.count(b"\n", 0, e.start) + 1
    column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
    raise InputError(
        f"not valid UTF-8 (byte 0x{data[e.start]:02x} at column {column}: "
        f"{e.reason}); save the file as UTF-8", path, line) from None
  # Editors on Windows write a BOM; it must not glue onto the first token.
  return text[1:] if text.startswith("\ufeff") else text


def file_sha256(path: str) -> str:
  """sha256 of a file's bytes (local, or any tf.io.gfile path: gs://...)."""
  h = hashlib.sha256()
  if "://" in os.fspath(path):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    if not tf.io.gfile.exists(path):  # as open() says it: callers catch it
      raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)
    opened = tf.io.gfile.GFile(path, "rb")
  else:
    opened = open(path, "rb")
  with opened as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
      h.update(chunk)
  return h.hexdigest()


def read_json(path: str) -> Any:
  with io.open(os.fspath(path), encoding="utf-8") as f:
    return json.load(f)


def atomic_write_bytes(path: str, data: bytes) -> None:
  """Binary twin of atomic_write_text (array checkpoints, msgpack)."""
  with _atomic(path) as tmp:
    with open(tmp, "wb") as f:
      f.write(data)
      f.flush()
      os.fsync(f.fileno())


def atomic_save_figure(fig, path: str, dpi: int = 100) -> str:
  """Saves a matplotlib figure atomically as PNG and closes it; returns path.

  The caller imports matplotlib; this only needs the figure object.
  """
  from matplotlib import pyplot as plt  # pylint: disable=g-import-not-at-top
  path = os.fspath(path)
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  tmp = temporary_path(path, ".png")
  fig.savefig(tmp, dpi=dpi)
  plt.close(fig)
  os.replace(tmp, path)
  return path


def save_figure_once(path: str, what: Any, draw: Callable[[], Any],
                     dpi: int = 100) -> str:
  """The PNG of `draw()` (a matplotlib figure) at `path`, drawn only when
  `what` (JSON: everything the figure shows) differs from what the PNG
  beside its key file shows: a figure costs about half a second, and a
  rerun whose every stage is cached should cost nothing. Returns path."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  path = os.fspath(path)
  key = hashlib.sha256(json.dumps(
      [matplotlib.__version__, what]).encode()).hexdigest()
  key_path = path + ".key"
  if (os.path.exists(path) and os.path.isfile(key_path)
      and read_text(key_path).strip() == key):
    return path
  if os.path.exists(key_path):  # a kill before the new key is written
    os.remove(key_path)         # must not leave the old key to a new PNG
  atomic_save_figure(draw(), path, dpi=dpi)
  atomic_write_text(key_path, key + "\n")
  return path
