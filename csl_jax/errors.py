"""Errors that point at the user's input: a file and a line, never a deep traceback."""

import os
import sys
from typing import Any, Callable, Optional


class InputError(ValueError):
  """Bad user input. Names the source (file) and 1-based line when known."""

  def __init__(self, message: str, source: Optional[str] = None,
               line: Optional[int] = None):
    self.source = source
    self.line = line
    self.message = message
    where = ""
    if source is not None:
      where = f"{source}:{line}: " if line is not None else f"{source}: "
    self.text = where + message  # str(self) may gain notes from gin
    super().__init__(self.text)


class Pending(Exception):
  """Work exported to run elsewhere (`seq2seq/bundle.py`: cells for
  `csl-jax run-bundle`; pcfg_bt's programs for T5X); `cells` names what
  waits, `how` (where given) says what to run before running again."""

  def __init__(self, *cells: str, how: str = ""):
    super().__init__(", ".join(cells))
    self.cells = list(cells)  # gin adds context to the message, not here
    self.how = how


def run_script(main: Callable[..., Any], *args: Any) -> None:
  """`sys.exit(main(*args))` for the scripts under benchmarks/ and scripts/:
  bad input (an InputError, a missing file or a directory where a file
  belongs) is one line on stderr and exit status 2, as the `csl-jax`
  commands do, not a traceback."""
  name = os.path.basename(sys.argv[0])
  try:
    code = main(*args)
  except InputError as e:
    print(f"{name}: error: {e}", file=sys.stderr)
    sys.exit(2)
  except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as e:
    what = (f"{e.filename}: {e.strerror.lower()}" if e.filename and
            e.strerror else str(e))
    print(f"{name}: error: {what}", file=sys.stderr)
    sys.exit(2)
  sys.exit(code)
