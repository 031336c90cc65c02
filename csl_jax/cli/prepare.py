"""`csl-jax prepare {scan,cogs,geoquery}`: write a dataset's splits as TSV."""

import argparse

from csl_jax.cli import stage
from csl_jax.data import cogs
from csl_jax.data import registry
from csl_jax.data import scan


def add_parser(subparsers) -> None:
  parser = subparsers.add_parser(
      "prepare", help="write a dataset's splits as input<TAB>output TSV")
  datasets = parser.add_subparsers(dest="dataset", required=True)
  p = datasets.add_parser("scan", help="SCAN (generated; no download)")
  p.add_argument("--split", choices=scan.SPLITS,
                 help="default: addprim_jump")
  p.add_argument("--seed", type=int, help="for the random `simple` split")
  p.add_argument("--source", choices=registry.SCAN_SOURCES,
                 help="default: generate")
  p.add_argument("--data_dir", help="TFDS data dir, or dir with TSVs")
  p.add_argument("--out", required=True)
  p = datasets.add_parser("cogs", help="COGS, to CSL's variable-free form")
  p.add_argument("--data_dir", required=True,
                 help="dir with train/dev/test/gen.tsv")
  p.add_argument("--original_lf", action="store_true",
                 help="keep the original logical forms")
  p.add_argument("--primitives", choices=cogs.PRIMITIVE_MODES,
                 help="default: word")
  p.add_argument("--out", required=True)
  p = datasets.add_parser("geoquery", help="GeoQuery FunQL, one split")
  p.add_argument("--data_dir", required=True,
                 help="dir with <split>/{train,dev,test}.tsv")
  p.add_argument("--split", choices=registry.get("geoquery").splits,
                 help="default: standard")
  p.add_argument("--out", required=True)


def main(args: argparse.Namespace) -> int:
  options = stage.given(args, "seed", "source", "primitives")
  if getattr(args, "original_lf", False):
    options["varfree"] = False
  kwargs = stage.given(args, "split", "data_dir")
  if options:
    kwargs["options"] = options
  stage.run(args.out, registry.prepare, args.dataset, **kwargs)
  return 0
