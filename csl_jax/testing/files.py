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


def write_reversal_toy(directory) -> str:
  """DIR/toy/{train,test}.tsv: three letters of a-d reversed, 40 train and
  10 test pairs (the experiment tests' dataset); returns DIR/toy."""
  words = [" ".join(a + b + c) for a in "abcd" for b in "abcd"
           for c in "abcd"][:50]
  pairs = [(w, " ".join(reversed(w.split()))) for w in words]
  d = os.path.join(os.fspath(directory), "toy")
  os.makedirs(d)
  write_pairs(os.path.join(d, "train.tsv"), pairs[:40])
  write_pairs(os.path.join(d, "test.tsv"), pairs[40:])
  return d
