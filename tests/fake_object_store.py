"""An object store for tests: Beam file system `fakeobj://KEY`, objects kept
as files under `FakeObjectStore.root`, published whole on close (as GCS
does), no directories. Importing it registers the scheme with Beam's
`FileSystems` in this process (Beam finds file systems by subclass)."""

import os
import tempfile

from apache_beam.io.filesystem import FileMetadata
from apache_beam.io.filesystem import FileSystem

PREFIX = "fakeobj://"


class _Publishing:
  """Write channel: the object appears only when closed."""

  def __init__(self, path):
    self.path = path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, self.tmp = tempfile.mkstemp(dir=os.path.dirname(path),
                                    prefix=".upload")
    self.f = os.fdopen(fd, "wb")

  def write(self, data):
    return self.f.write(data)

  def close(self):
    self.f.close()
    os.replace(self.tmp, self.path)

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    self.close()


class FakeObjectStore(FileSystem):
  root = None  # set by the test

  @classmethod
  def scheme(cls):
    return "fakeobj"

  def _local(self, url):
    assert url.startswith(PREFIX), url
    return os.path.join(self.root, url[len(PREFIX):])

  def join(self, basepath, *paths):
    return "/".join([basepath.rstrip("/")] + [p.strip("/") for p in paths])

  def split(self, path):
    head, _, tail = path.rpartition("/")
    return head, tail

  def mkdirs(self, path):
    pass

  def has_dirs(self):
    return False

  def _list(self, dir_or_prefix):
    for dirpath, _, names in os.walk(self.root):
      for name in names:
        if name.startswith(".upload"):
          continue
        local = os.path.join(dirpath, name)
        url = PREFIX + os.path.relpath(local, self.root)
        if url.startswith(dir_or_prefix):
          yield FileMetadata(url, os.path.getsize(local),
                             os.path.getmtime(local))

  def create(self, path, mime_type=None, compression_type=None):
    return _Publishing(self._local(path))

  def open(self, path, mime_type=None, compression_type=None):
    return open(self._local(path), "rb")  # pylint: disable=consider-using-with

  def copy(self, source_file_names, destination_file_names):
    for a, b in zip(source_file_names, destination_file_names):
      with open(self._local(a), "rb") as f, self.create(b) as g:
        g.write(f.read())

  def rename(self, source_file_names, destination_file_names):
    for a, b in zip(source_file_names, destination_file_names):
      os.makedirs(os.path.dirname(self._local(b)), exist_ok=True)
      os.replace(self._local(a), self._local(b))

  def exists(self, path):
    return os.path.exists(self._local(path))

  def size(self, path):
    return os.path.getsize(self._local(path))

  def last_updated(self, path):
    return os.path.getmtime(self._local(path))

  def checksum(self, path):
    return str(self.size(path))

  def metadata(self, path):
    return FileMetadata(path, self.size(path), self.last_updated(path))

  def delete(self, paths):
    for path in paths:
      os.remove(self._local(path))
