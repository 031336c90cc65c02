"""Errors that point at the user's input: a file and a line, never a deep traceback."""

from typing import Optional


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
