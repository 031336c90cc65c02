"""`csl-jax fit`: CSL's parametric model over an induced grammar."""

import argparse

from csl_jax.cli import stage
from csl_jax.errors import InputError


def add_parser(subparsers) -> None:
  parser = subparsers.add_parser(
      "fit", help="fit CSL's model p(r | parent, i) over a grammar")
  parser.add_argument("--grammar", required=True)
  parser.add_argument("--train", required=True)
  parser.add_argument("--eval", help="held-out TSV for log p(y | x)")
  parser.add_argument("--output_cfg", help="stored with the model for parse")
  parser.add_argument("--unlabeled", help="inputs to label and refit on "
                      "(hard EM, paper C.7)")
  parser.add_argument("--unlabeled_copies", type=int)
  parser.add_argument("--max_source_len", type=int, help=stage.SOURCE_HELP)
  parser.add_argument("--max_target_len", type=int, help=stage.TARGET_HELP)
  parser.add_argument("--skip_too_long", action="store_true", default=None,
                      help="leave longer pairs out (counted in the summary)")
  parser.add_argument("--forest_shards", type=int,
                      help="build the forests in N shards kept as array "
                      "files in OUT/forests (the same fit)")
  parser.add_argument("--forest_dir",
                      help="keep the forest shards there instead, e.g. "
                      "gs://bucket/forests for Beam workers that share no "
                      "disk (URLs need apache-beam)")
  parser.add_argument("--out", required=True)
  stage.add_runner_flags(parser)


def main(args: argparse.Namespace) -> int:
  from csl_jax.methods.csl import fit as fit_lib  # pylint: disable=g-import-not-at-top
  stage.run(args.out, fit_lib.fit, args.grammar, args.train,
            **stage.given(args, "eval", "output_cfg", "unlabeled",
                          "unlabeled_copies", "max_source_len",
                          "max_target_len", "skip_too_long", "forest_shards",
                          "forest_dir", "runner", rename={"eval": "eval_data"}),
            **({"pipeline_args": args.pipeline_args}
               if args.pipeline_args else {}))
  return 0


def register_configurables() -> None:
  """Imports FitConfig (with JAX, Flax, Optax): only fitting pays for it."""
  # pylint: disable=g-import-not-at-top,unused-import
  from csl_jax.methods.csl import fit
  from csl_jax.model import train
