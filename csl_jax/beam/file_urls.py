"""Files that may live in an object store: a path with a scheme
(`gs://bucket/dir`, `s3://...`) goes through Beam's file systems, which
Dataflow's workers reach where they share no disk; a plain path stays on
the local file system (written atomically, `csl_jax.files`). A URL file
is written under a temporary name and renamed when complete, so a writer
that fails midway (a generator raising) leaves no partial file either.
"""

import contextlib
import fnmatch
import io
import os
from typing import Iterable, Iterator, List
import uuid

from csl_jax import files
from csl_jax.errors import InputError


def is_url(path: str) -> bool:
  return "://" in os.fspath(path)


def _file_systems(path: str):
  try:
    from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise InputError("a URL path needs apache-beam (README 'Scaling out')",
                     path) from None
  try:
    FileSystems.get_filesystem(path)
  except ValueError as e:  # e.g. gs:// without apache-beam[gcp]
    raise InputError(f"no file system for this URL ({e}); install its "
                     f"apache-beam extra, e.g. apache-beam[gcp]",
                     path) from None
  return FileSystems


def join(base: str, name: str) -> str:
  if is_url(base):
    return _file_systems(base).join(base, name)
  return os.path.join(base, name)


@contextlib.contextmanager
def _created(path: str):
  """A write channel to `path` (a URL) that appears there only whole."""
  fs = _file_systems(path)
  from apache_beam.io.filesystem import CompressionTypes  # pylint: disable=g-import-not-at-top
  tmp = f"{path}.tmp-{uuid.uuid4().hex}"
  try:
    with fs.create(tmp, compression_type=CompressionTypes.UNCOMPRESSED) as f:
      yield f
  except BaseException:
    if fs.exists(tmp):
      fs.delete([tmp])
    raise
  if fs.exists(path):  # object stores' rename does not replace
    fs.delete([path])
  fs.rename([tmp], [path])


def write_text(path: str, lines: Iterable[str]) -> None:
  """The lines (with their newlines), streamed; atomic either way."""
  if not is_url(path):
    files.atomic_write_text(path, lines)
    return
  with _created(path) as f:
    for line in lines:
      f.write(line.encode("utf-8"))


def write_bytes(path: str, data: bytes) -> None:
  if not is_url(path):
    files.atomic_write_bytes(path, data)
    return
  with _created(path) as f:
    f.write(data)


def read_bytes(path: str) -> bytes:
  if not is_url(path):
    with open(path, "rb") as f:
      return f.read()
  fs = _file_systems(path)
  from apache_beam.io.filesystem import CompressionTypes  # pylint: disable=g-import-not-at-top
  with fs.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
    return f.read()


def read_lines(path: str) -> Iterator[str]:
  """The file's lines with their newlines, streamed."""
  if not is_url(path):
    with open(path, encoding="utf-8", newline="") as f:
      yield from f
    return
  fs = _file_systems(path)
  from apache_beam.io.filesystem import CompressionTypes  # pylint: disable=g-import-not-at-top
  with fs.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as raw:
    yield from io.TextIOWrapper(raw, encoding="utf-8", newline="")


def exists(path: str) -> bool:
  return _file_systems(path).exists(path) if is_url(path) else (
      os.path.exists(path))


def matching(base: str, pattern: str) -> List[str]:
  """The files directly in `base` whose names match the glob `pattern`."""
  if not is_url(base):
    if not os.path.isdir(base):
      return []
    return sorted(os.path.join(base, n) for n in os.listdir(base)
                  if fnmatch.fnmatch(n, pattern))
  fs = _file_systems(base)
  found = fs.match([join(base, pattern)])[0].metadata_list
  return sorted(m.path for m in found)


def delete(paths: List[str]) -> None:
  for path in paths:
    if is_url(path):
      _file_systems(path).delete([path])
    else:
      os.remove(path)


def make_dirs(path: str) -> None:
  """Object stores have no directories: only local paths are made."""
  if not is_url(path):
    if os.path.exists(path) and not os.path.isdir(path):
      raise InputError("is a file, not a directory", path)
    os.makedirs(path, exist_ok=True)
