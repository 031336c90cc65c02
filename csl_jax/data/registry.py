"""One loader shape for every dataset: SCAN, COGS, GeoQuery, your own TSVs.

A `Dataset` turns (split, data_dir, options) into {part: examples}; it names
the source files its result depends on (they key the pipeline's cache) and
the output CFG of its programs, a package asset under `tasks/<dataset>/`.
`prepare` writes the parts as `<out_dir>/<part>.tsv`. Both `csl-jax prepare`
and `csl-jax augment` go through `get(name)`.
"""

import dataclasses
import glob
import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from absl import logging
import gin

from csl_jax.data import cogs
from csl_jax.data import geoquery
from csl_jax.data import scan
from csl_jax.data import scan_star
from csl_jax.data import tsv
from csl_jax.errors import InputError
from csl_jax.files import atomic_write_text, read_text

Parts = Dict[str, List[tsv.Example]]


@dataclasses.dataclass(frozen=True)
class Dataset:
  """A dataset the pipeline can prepare.

  Attributes:
    name: registry name (`scan`, `cogs`, `geoquery`, `tsv`).
    splits: valid split names; empty: the dataset has one fixed split.
    default_split: the split used when none is given.
    needs_data_dir: whether files must be given (SCAN is generated).
    load: (split, data_dir, options) -> {part: examples}.
    source_files: (split, data_dir, options) -> the files `load` reads.
    output_cfg: the programs' CFG, a path relative to the `tasks` package
      (see `csl_jax.assets`), or None.
    eval_part: the part the CSL parser is scored on in the report.
    reads_data_dir: options -> whether `load` reads data_dir (SCAN only
      from TFDS or local files); None: whenever it is given.
    side_files: files of data_dir copied beside the parts where present
      (COGS's gen_categories.txt: a prepared directory used as `tsv` data
      keeps its per-category scores).
  """
  name: str
  splits: Sequence[str]
  default_split: str
  needs_data_dir: bool
  load: Callable[[str, Optional[str], Mapping[str, Any]], Parts]
  source_files: Callable[[str, Optional[str], Mapping[str, Any]], List[str]]
  output_cfg: Optional[str] = None
  eval_part: str = "test"
  reads_data_dir: Optional[Callable[[Mapping[str, Any]], bool]] = None
  side_files: Sequence[str] = ()

  def check_split(self, split: str) -> None:
    if self.splits and split not in self.splits:
      raise InputError(f"unknown {self.name} split {split!r}; valid: "
                       f"{', '.join(self.splits)}")

  def check_split_flag(self, split: str) -> None:
    """A `--split` the user typed for a dataset of one split is an error,
    not silently dropped (a gin file's `augment.split`, written for
    another dataset, is moot: `resolve`)."""
    if not self.splits and split != self.default_split:
      one = f" ({self.default_split})" if self.default_split else ""
      raise InputError(f"{self.name} has one split{one}: --split "
                       f"{split!r} is not used (leave it out)")

  def resolve(self, split: Optional[str], data_dir: Optional[str],
              options: Mapping[str, Any]) -> str:
    """The split to prepare (a dataset of one split has it whatever
    `split` says); a data directory the dataset would not read is an
    error, not silently dropped."""
    if self.splits:
      split = split or self.default_split
      self.check_split(split)
    else:
      split = self.default_split
    if data_dir and self.reads_data_dir and not self.reads_data_dir(options):
      raise InputError(f"{self.name} is generated here and does not read "
                       "--data_dir (leave it out)", data_dir)
    return split


_DATASETS: Dict[str, Dataset] = {}


def add(dataset: Dataset) -> None:
  _DATASETS[dataset.name] = dataset


def get(name: str) -> Dataset:
  if name not in _DATASETS:
    raise InputError(f"unknown dataset {name!r}; valid: {', '.join(names())} "
                     "(or run the stage commands on your own TSVs)")
  return _DATASETS[name]


def names() -> List[str]:
  return sorted(_DATASETS)


@gin.configurable(module="prepare")
def prepare(out_dir: str, dataset: str, split: Optional[str] = None,
            data_dir: Optional[str] = None,
            options: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
  """Writes `<out_dir>/<part>.tsv` for every part; returns the summary."""
  spec = get(dataset)
  options = dict(options or {})
  split = spec.resolve(split, data_dir, options)
  if spec.needs_data_dir:
    if not data_dir:
      raise InputError(f"{dataset} needs --data_dir (the directory of its "
                       "files; see ../shared/data/README.md)")
    if not os.path.isdir(data_dir):
      raise InputError(not_a_data_directory(data_dir), data_dir)
  parts = spec.load(split, data_dir, options)
  summary: Dict[str, Any] = {"dataset": dataset, "split": split}
  if data_dir:  # names the data where no split does (`tsv`)
    summary["data_dir"] = os.path.abspath(data_dir)
  summary.update({k: v for k, v in options.items()})
  total = 0
  for part in TSV_PARTS:  # an earlier prepare's, of another split
    stale = os.path.join(out_dir, f"{part}.tsv")
    if part not in parts and os.path.exists(stale):
      os.remove(stale)
  for part, examples in parts.items():
    tsv.write_tsv(os.path.join(out_dir, f"{part}.tsv"), examples)
    summary[f"num_{part}"] = len(examples)
    total += len(examples)
  summary["num_examples"] = total
  for name in spec.side_files if data_dir else ():
    src = os.path.join(data_dir, name)
    if os.path.isfile(src):
      atomic_write_text(os.path.join(out_dir, name), read_text(src))
      summary.setdefault("side_files", []).append(name)
  return summary


# ---- SCAN: generated from its grammar, or TFDS / local files ---------------

SCAN_SOURCES = ("generate", "tfds", "local")


def _scan_load(split, data_dir, options) -> Parts:
  source = options.get("source", "generate")
  if source not in SCAN_SOURCES:
    raise InputError(f"unknown SCAN source {source!r}; valid: "
                     f"{', '.join(SCAN_SOURCES)}")
  if source == "generate":
    train, test = scan.make_split(split, seed=options.get("seed", 0))
  elif source == "tfds":
    train, test = scan.load_tfds(split, data_dir=data_dir)
  else:
    if not data_dir:
      raise InputError("--source=local needs --data_dir")
    train, test = scan.load_local(data_dir)
  return {"train": train, "test": test}


def _scan_sources(split, data_dir, options) -> List[str]:
  if options.get("source", "generate") == "local" and data_dir:
    return sorted(glob.glob(os.path.join(data_dir, "*.txt")) +
                  glob.glob(os.path.join(data_dir, "*.tsv")))
  return []  # generated: the split name and seed key it


add(Dataset("scan", scan.SPLITS, "addprim_jump", False, _scan_load,
            _scan_sources, output_cfg="tasks/scan/actions.cfg",
            reads_data_dir=lambda options: options.get(
                "source", "generate") != "generate"))


# ---- SCAN*: generated (Zhou et al. 2023 App. A.2) ---------------------------

def _scan_star_load(split, data_dir, options) -> Parts:
  del data_dir
  common = {k: options[k] for k in ("num_train", "num_test", "seed")
            if k in options}
  if split == "length":
    if options.get("max_primitives") is not None:  # else unread, unsaid
      raise InputError("--max_primitives (dataset option max_primitives) "
                       "is a knob of SCAN*'s jump split; the length split "
                       "takes none")
    train, test = scan_star.length_split(
        options.get("max_len", scan_star.LENGTHS[1]), **common)
  else:
    train, test = scan_star.jump_split(
        options.get("max_len", 62),
        max_primitives_per_example=options.get("max_primitives"),
        test_max_len=options.get("test_max_len", 62), **common)
  return {"train": train, "test": test}


add(Dataset("scan_star", scan_star.SPLITS, "length", False, _scan_star_load,
            lambda split, data_dir, options: [],
            reads_data_dir=lambda options: False))


# ---- COGS: its TSVs (2 or 3 columns), optionally variable-free --------------

COGS_PARTS = ("train", "dev", "test", "gen")


def _cogs_load(split, data_dir, options) -> Parts:
  del split  # COGS has one split: train/dev/test/gen
  varfree = options.get("varfree", True)
  primitives = options.get("primitives", "word")
  parts = {}
  for part in options.get("parts", COGS_PARTS):
    src = os.path.join(data_dir, f"{part}.tsv")
    if not os.path.lexists(src):  # a directory or broken link: read_text's
      raise InputError("missing COGS file", src)
    if varfree:
      parts[part] = cogs.convert_examples(src, primitives)
    else:
      parts[part] = [tsv.Example(e.input, e.output)
                     for e in cogs.load_cogs(src)]
  return parts


def _cogs_sources(split, data_dir, options) -> List[str]:
  del split
  return [os.path.join(data_dir, f"{p}.tsv")
          for p in options.get("parts", COGS_PARTS)]


add(Dataset("cogs", (), "gen", True, _cogs_load, _cogs_sources,
            output_cfg="tasks/cogs/varfree.cfg",
            side_files=("gen_categories.txt",)))


# ---- GeoQuery: FunQL, NQG/CSL format ---------------------------------------

def _geoquery_load(split, data_dir, options) -> Parts:
  del options
  return geoquery.load_split(data_dir, split)


def _geoquery_sources(split, data_dir, options) -> List[str]:
  del options
  return sorted(glob.glob(os.path.join(data_dir, split, "*.tsv")))


add(Dataset("geoquery", geoquery.SPLITS, "standard", True, _geoquery_load,
            _geoquery_sources, output_cfg="tasks/geoquery/funql.cfg"))


def not_a_data_directory(path: str) -> str:
  """Why a --data_dir that is not a directory cannot be read."""
  return ("is a file, not a data directory" if os.path.exists(path) else
          "no such data directory")


# ---- Your own data: <data_dir>/{train,dev,test,gen}.tsv as they are --------

TSV_PARTS = ("train", "dev", "test", "gen")


def _tsv_part_paths(data_dir: str) -> List[str]:
  """The parts present: a directory or a broken link where a part goes is
  read (and refused by name), not left out without a word."""
  return [os.path.join(data_dir, f"{p}.tsv") for p in TSV_PARTS
          if os.path.lexists(os.path.join(data_dir, f"{p}.tsv"))]


def _tsv_load(split, data_dir, options) -> Parts:
  del split, options
  if not os.path.lexists(os.path.join(data_dir, "train.tsv")):
    raise InputError("no train.tsv", data_dir)
  other = sorted(set(glob.glob(os.path.join(data_dir, "*.tsv"))) -
                 {os.path.join(data_dir, f"{p}.tsv") for p in TSV_PARTS})
  for path in other:  # said, not silently dropped
    logging.warning("%s: not read (the tsv dataset's parts are %s.tsv)",
                    path, ", ".join(TSV_PARTS))
  return {os.path.basename(path)[:-len(".tsv")]: tsv.read_tsv(path)
          for path in _tsv_part_paths(data_dir)}


def _tsv_sources(split, data_dir, options) -> List[str]:
  del split, options
  return _tsv_part_paths(data_dir)


add(Dataset("tsv", (), "", True, _tsv_load, _tsv_sources))
