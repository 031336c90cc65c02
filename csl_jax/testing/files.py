"""Writing small datasets for tests."""

import os
from typing import Iterable, Tuple


def write_pairs(path, pairs: Iterable[Tuple[str, str]]) -> str:
  """Writes `input<TAB>output` lines as given (no validation); returns path.

  Unlike `data.tsv.write_tsv`, nothing is checked, so tests can also write
  files that readers must reject.
  """
  with open(path, "w", encoding="utf-8") as f:
    f.write("".join(f"{x}\t{y}\n" for x, y in pairs))
  return os.fspath(path)
