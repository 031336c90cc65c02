"""`csl-jax prepare {scan,scan_star,cogs,geoquery}`: write a dataset's splits as TSV."""

import argparse

from csl_jax.cli import stage
from csl_jax.data import cogs
from csl_jax.data import registry
from csl_jax.data import scan
from csl_jax.data import scan_star


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
  p = datasets.add_parser(
      "scan_star", help="SCAN* (Zhou et al. 2023): 200 verbs, any number "
      "of conjunctions; generated")
  p.add_argument("--split", choices=scan_star.SPLITS,
                 help="default: length (train 0 < l <= L, test L < l <= 2L)")
  p.add_argument("--max_len", type=int,
                 help="L: length split one of "
                 f"{', '.join(map(str, scan_star.LENGTHS))} (default 62); "
                 "jump split: longest training command (default 62)")
  p.add_argument("--max_primitives", type=int,
                 help="jump split: most distinct verbs per training example")
  p.add_argument("--num_train", type=int,
                 help="default 10000 (length split: before halving)")
  p.add_argument("--num_test", type=int, help="default 2000")
  p.add_argument("--seed", type=int, help="default 0")
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
  options = stage.given(args, "seed", "source", "primitives", "max_len",
                        "max_primitives", "num_train", "num_test")
  if getattr(args, "original_lf", False):
    options["varfree"] = False
  kwargs = stage.given(args, "split", "data_dir")
  if options:
    kwargs["options"] = options
  stage.run(args.out, registry.prepare, args.dataset, **kwargs)
  return 0
