"""The grid of an experiment: (dataset split) × (training data) × (seed).

A cell trains one model and scores it. Training data rows are `original`
(the task `NAME`) or a method's synthetic data `m` (a method of the
pipeline, or a selector's subset `m_<selector>_<k>`), used as the 1:1
mixture `NAME_m_mixture` (regime `mixture`) or for pretraining before
fine-tuning on `NAME` (regime `pretrain_finetune`).
"""

import dataclasses
import re
from typing import List, Optional, Sequence

from absl import logging

from csl_jax import selection
from csl_jax.errors import InputError

ORIGINAL = "original"
REGIMES = ("mixture", "pretrain_finetune")
_NAME = re.compile(r"^[a-z0-9_]+$")


@dataclasses.dataclass(frozen=True)
class Cell:
  split: str
  data: str  # `original` or a method (subset) name
  seed: int

  @property
  def path(self) -> str:
    """The cell's directory under OUT/cells/."""
    return f"{self.split}/{self.data}/seed_{self.seed}"

  def describe(self) -> str:
    return f"{self.split} / {self.data} / seed {self.seed}"


def data_rows(methods: Sequence[str], data: Optional[Sequence[str]],
              select, select_num: Optional[int]) -> List[str]:
  """The training-data rows: `data` as given, else `original`, each method
  and, with selectors (`selection.parse`), each method's subsets
  `m_<selector>_<k>`.

  Raises:
    InputError: a row that names no method of the experiment, or an
      unknown selector.
  """
  selectors = selection.parse(select)
  if selectors and (select_num is None or isinstance(select_num, bool) or
                    not isinstance(select_num, int) or select_num < 1):
    raise InputError("experiment.select needs experiment.select_num, the "
                     "size k >= 1 of each subset (rows m_<selector>_<k>), "
                     f"not {select_num!r}")
  subsets = [f"{m}_{s}_{select_num}" for m in methods for s in selectors]
  known = list(dict.fromkeys([ORIGINAL] + list(methods) + subsets))
  if data is None:
    return known
  rows = as_list("data", data, str)
  for row in rows:
    if row not in known:
      raise InputError(f"experiment.data: {row!r} is neither {ORIGINAL!r} "
                       f"nor a method of experiment.methods (valid: "
                       f"{', '.join(known)}; a subset row "
                       "m_<selector>_<k> needs experiment.select and "
                       "experiment.select_num)")
  if not rows:
    raise InputError("experiment.data is empty")
  return rows


def as_list(kind: str, value, item) -> list:
  """`value` as a list of distinct `item`s (one alone is a list of it; a
  name given twice counts once: a repeated cell would weigh twice in the
  means and the tests over seeds)."""
  if isinstance(value, item) and not isinstance(value, bool):
    value = [value]
  if not isinstance(value, (list, tuple)):
    raise InputError(f"experiment.{kind} must be a list of "
                     f"{item.__name__}, not {value!r}")
  distinct = list(dict.fromkeys(value))
  if len(distinct) < len(value):  # said, not dropped without a word
    repeated = [v for v in distinct if list(value).count(v) > 1]
    logging.warning("experiment.%s: %s given more than once; each counts "
                    "once", kind, ", ".join(map(repr, repeated)))
  return distinct


def check_names(kind: str, names: Sequence[str]) -> List[str]:
  names = as_list(kind, names, str)
  if not names:
    raise InputError(f"experiment.{kind} is empty")
  for n in names:
    if not isinstance(n, str) or not _NAME.match(n):
      raise InputError(f"experiment.{kind}: {n!r} is not a name of "
                       "lower-case letters, digits and _")
  return names


def check_seeds(seeds: Sequence[int]) -> List[int]:
  if isinstance(seeds, int) and not isinstance(seeds, bool):
    # `seeds = 3` read as seed 3 alone, where three seeds were meant.
    raise InputError(f"experiment.seeds is a list of seeds, e.g. [0, 1, 2], "
                     f"not {seeds} (one seed: [{seeds}])")
  seeds = as_list("seeds", seeds, int)
  if not seeds or any(isinstance(s, bool) or not isinstance(s, int) or s < 0
                      for s in seeds):
    raise InputError(f"experiment.seeds must be integers >= 0, not {seeds}")
  return seeds


def expand(splits: Sequence[str], rows: Sequence[str],
           seeds: Sequence[int]) -> List[Cell]:
  """Every cell, split-major, then data row, then seed: the rows of a
  split's column finish before the next split starts."""
  return [Cell(sp, d, s) for sp in splits for d in rows for s in seeds]
