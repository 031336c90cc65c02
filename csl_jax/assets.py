"""Package assets (output CFGs under `tasks/<dataset>/`), found from anywhere.

Gin files name assets as `tasks/<dataset>/<file>`. A path that exists as
given (relative to the working directory, or absolute) is the user's own
file and wins; otherwise a `tasks/...` path resolves inside the installed
`tasks` package, so configs work from any working directory and from a
non-editable install.
"""

import importlib.util
import os
from typing import Optional

from csl_jax.errors import InputError

_PREFIX = "tasks/"


def _tasks_dir() -> Optional[str]:
  # find_spec locates the package without importing it (importing `tasks`
  # loads TensorFlow and SeqIO).
  spec = importlib.util.find_spec("tasks")
  if spec is None or not spec.submodule_search_locations:
    return None
  return list(spec.submodule_search_locations)[0]


def resolve(path: Optional[str]) -> Optional[str]:
  """The file `path` names: as given, or a `tasks/...` package asset.

  Raises:
    InputError: neither exists.
  """
  if path is None:
    return None
  path = os.fspath(path)
  if os.path.exists(path):
    return path
  normalized = path.replace(os.sep, "/")
  if normalized.startswith(_PREFIX):
    root = _tasks_dir()
    if root:
      candidate = os.path.join(root, *normalized[len(_PREFIX):].split("/"))
      if os.path.exists(candidate):
        return candidate
  raise InputError("no such file (nor a `tasks/...` package asset)", path)
