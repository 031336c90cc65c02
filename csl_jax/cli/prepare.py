"""`csl-jax prepare {scan,cogs,geoquery}`: write a dataset's splits as TSV."""

import argparse
import os
from typing import Dict, List, Optional

import gin

from csl_jax.cli import stage
from csl_jax.data import cogs
from csl_jax.data import geoquery
from csl_jax.data import scan
from csl_jax.data import tsv
from csl_jax.errors import InputError

SCAN_SOURCES = ("generate", "tfds", "local")


def _write_parts(out_dir: str, parts: Dict[str, List[tsv.Example]],
                 summary: stage.Summary) -> None:
  total = 0
  for part, examples in parts.items():
    tsv.write_tsv(os.path.join(out_dir, f"{part}.tsv"), examples)
    summary[f"num_{part}"] = len(examples)
    total += len(examples)
  summary["num_examples"] = total


@gin.configurable(module="prepare")
def prepare_scan(out_dir: str, split: str = "addprim_jump", seed: int = 0,
                 source: str = "generate",
                 data_dir: Optional[str] = None) -> None:
  """SCAN: generated from its grammar (default), via TFDS, or local files."""
  if source not in SCAN_SOURCES:
    raise InputError(f"unknown SCAN source {source!r}; valid: "
                     f"{', '.join(SCAN_SOURCES)}")
  with stage.stage(out_dir, stage.command_line()) as summary:
    if source == "generate":
      train, test = scan.make_split(split, seed=seed)
    elif source == "tfds":
      train, test = scan.load_tfds(split, data_dir=data_dir)
    else:
      if not data_dir:
        raise InputError("--source=local needs --data_dir")
      train, test = scan.load_local(data_dir)
    summary.update(dataset="scan", split=split, source=source, seed=seed)
    _write_parts(out_dir, {"train": train, "test": test}, summary)


@gin.configurable(module="prepare")
def prepare_cogs(out_dir: str, data_dir: Optional[str] = None,
                 varfree: bool = True, primitives: str = "word",
                 parts=("train", "dev", "test", "gen")) -> None:
  """COGS from its TSV files (2 or 3 columns), optionally variable-free."""
  if not data_dir:
    raise InputError("COGS needs --data_dir (the directory of its TSVs)")
  with stage.stage(out_dir, stage.command_line()) as summary:
    total = 0
    for part in parts:
      src = os.path.join(data_dir, f"{part}.tsv")
      dst = os.path.join(out_dir, f"{part}.tsv")
      if not os.path.isfile(src):
        raise InputError("missing COGS file", src)
      if varfree:
        count = cogs.convert_file(src, dst, primitives=primitives)
      else:
        examples = cogs.load_cogs(src)
        count = tsv.write_tsv(dst, [(e.input, e.output) for e in examples])
      summary[f"num_{part}"] = count
      total += count
    summary.update(dataset="cogs", varfree=varfree, primitives=primitives,
                   num_examples=total)


@gin.configurable(module="prepare")
def prepare_geoquery(out_dir: str, data_dir: Optional[str] = None,
                     split: str = "standard") -> None:
  """GeoQuery FunQL (NQG/CSL format): one split, validated."""
  if not data_dir:
    raise InputError("GeoQuery needs --data_dir (the directory of splits)")
  with stage.stage(out_dir, stage.command_line()) as summary:
    parts = geoquery.load_split(data_dir, split)
    summary.update(dataset="geoquery", split=split)
    _write_parts(out_dir, parts, summary)


def add_parser(subparsers) -> None:
  parser = subparsers.add_parser(
      "prepare", help="write a dataset's splits as input<TAB>output TSV")
  datasets = parser.add_subparsers(dest="dataset", required=True)
  p = datasets.add_parser("scan", help="SCAN (generated; no download)")
  p.add_argument("--split", choices=scan.SPLITS)
  p.add_argument("--seed", type=int, help="for the random `simple` split")
  p.add_argument("--source", choices=SCAN_SOURCES)
  p.add_argument("--data_dir", help="TFDS data dir, or dir with TSVs")
  p.add_argument("--out", required=True)
  p = datasets.add_parser("cogs", help="COGS, to CSL's variable-free form")
  p.add_argument("--data_dir", help="dir with train/dev/test/gen.tsv")
  p.add_argument("--original_lf", action="store_true",
                 help="keep the original logical forms")
  p.add_argument("--primitives", choices=cogs.PRIMITIVE_MODES)
  p.add_argument("--out", required=True)
  p = datasets.add_parser("geoquery", help="GeoQuery FunQL, one split")
  p.add_argument("--data_dir", help="dir with <split>/{train,dev,test}.tsv")
  p.add_argument("--split", choices=geoquery.SPLITS)
  p.add_argument("--out", required=True)


def _given(args: argparse.Namespace, *names) -> dict:
  """Flags the user gave; the rest come from gin or the defaults."""
  return {n: getattr(args, n) for n in names
          if getattr(args, n, None) is not None}


def main(args: argparse.Namespace) -> int:
  if args.dataset == "scan":
    prepare_scan(args.out, **_given(args, "split", "seed", "source",
                                    "data_dir"))
  elif args.dataset == "cogs":
    kwargs = _given(args, "data_dir", "primitives")
    if args.original_lf:
      kwargs["varfree"] = False
    prepare_cogs(args.out, **kwargs)
  else:
    prepare_geoquery(args.out, **_given(args, "data_dir", "split"))
  return 0
