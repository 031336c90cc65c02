"""Atomic writes of text and JSON artifacts (never pickle)."""

import io
import json
import os
from typing import Any


def atomic_write_text(path: str, text: str) -> None:
  """Writes a file so that readers never see a partial one."""
  path = os.fspath(path)
  directory = os.path.dirname(os.path.abspath(path))
  os.makedirs(directory, exist_ok=True)
  tmp = f"{path}.tmp.{os.getpid()}"
  with io.open(tmp, "w", encoding="utf-8", newline="\n") as f:
    f.write(text)
    f.flush()
    os.fsync(f.fileno())
  os.replace(tmp, path)


def atomic_write_json(path: str, obj: Any) -> None:
  atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def read_json(path: str) -> Any:
  with io.open(os.fspath(path), encoding="utf-8") as f:
    return json.load(f)


def atomic_write_bytes(path: str, data: bytes) -> None:
  """Binary twin of atomic_write_text (array checkpoints, msgpack)."""
  path = os.fspath(path)
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  tmp = f"{path}.tmp.{os.getpid()}"
  with open(tmp, "wb") as f:
    f.write(data)
    f.flush()
    os.fsync(f.fileno())
  os.replace(tmp, path)
