"""GeoQuery (FunQL, NQG/CSL format): the standard, length and template splits.

A split is a directory `<data_dir>/<split>/` with `train.tsv` and, when the
split has them, `dev.tsv` and `test.tsv` (`question<TAB>funql` per line).
"""

import os
from typing import Dict, List, Optional

from absl import logging

from csl_jax.data.tsv import Example, ReadStats, read_tsv
from csl_jax.errors import InputError

SPLITS = ("standard", "length", "template_1", "template_2", "template_3")
PARTS = ("train", "dev", "test")


def load_split(data_dir: str, split: str, skip_malformed: bool = False,
               stats: Optional[ReadStats] = None) -> Dict[str, List[Example]]:
  """Reads one split: {part: examples} for the parts present, train first.

  Raises InputError for an unknown split name, a missing split directory or
  train.tsv, and malformed lines (file and line named).
  """
  if split not in SPLITS:
    raise InputError(f"unknown GeoQuery split {split!r}; valid splits: "
                     f"{', '.join(SPLITS)}")
  directory = os.path.join(os.fspath(data_dir), split)
  if not os.path.isdir(directory):
    raise InputError("no such split directory", directory)
  if not os.path.lexists(os.path.join(directory, "train.tsv")):
    raise InputError("split has no train.tsv", directory)
  known = {f"{part}.tsv" for part in PARTS}
  for name in sorted(os.listdir(directory)):  # said, not dropped silently
    if name.endswith(".tsv") and name not in known:
      logging.warning("%s: not read (a GeoQuery split's parts are %s)",
                      os.path.join(directory, name),
                      ", ".join(sorted(known)))
  parts = {}
  for part in PARTS:
    path = os.path.join(directory, f"{part}.tsv")
    # A directory or a broken link is read, and refused by name, not
    # left out without a word.
    if os.path.lexists(path):
      parts[part] = read_tsv(path, skip_malformed, stats)
      _check_funql(parts[part], path)
  return parts


def _is_funql(program: str) -> bool:
  """`answer ( ... )` with balanced brackets: the shape of every FunQL
  program (tasks/geoquery/funql.cfg parses them in full)."""
  tokens = program.split()
  if tokens[:2] != ["answer", "("] or tokens[-1] != ")":
    return False
  depth = 0
  for t in tokens:
    depth += (t == "(") - (t == ")")
    if depth < 0:
      return False
  return depth == 0


def _check_funql(examples: List[Example], path: str) -> None:
  """Most outputs not FunQL: other data (SCAN's, say) given as GeoQuery."""
  bad = [e for e in examples if not _is_funql(e.output)]
  if 2 * len(bad) > len(examples):
    raise InputError(f"{len(bad):,} of {len(examples):,} outputs are not "
                     f"FunQL programs (answer ( ... )), e.g. "
                     f"{bad[0].output[:60]!r}: is this GeoQuery data?", path)
