"""`csl-jax parse` and `csl-jax evaluate`: CSL as a parser, scored."""

import argparse
import os
import time
from typing import Optional

import gin

from csl_jax.cli import stage
from csl_jax.data import tsv
from csl_jax.model import evaluation
from csl_jax.model import viterbi
from csl_jax.model.saved import load_model


@gin.configurable(module="parse")
def parse(out_dir: str, model: str, data: str, k: Optional[int] = None,
          max_unary_chain: int = viterbi.DEFAULT_MAX_UNARY_CHAIN) -> dict:
  """Writes DIR/predictions.tsv and DIR/summary.json (accuracy, coverage)."""
  with stage.stage(out_dir, stage.command_line()) as summary:
    saved = load_model(model)
    examples = tsv.read_tsv(data)
    start = time.time()
    results = viterbi.parse_batch(
        saved.rules, saved.grammar, saved.log_p, saved.ctx_index,
        [e.input for e in examples], k=k, output_cfg=saved.output_cfg,
        max_unary_chain=max_unary_chain)
    seconds = time.time() - start
    predictions = [evaluation.Prediction(
        e.input, " ".join(r.target) if r.parsed else None, e.output)
                   for e, r in zip(examples, results)]
    evaluation.write_predictions(os.path.join(out_dir, "predictions.tsv"),
                                 predictions)
    summary.update(model=os.fspath(model), data=os.fspath(data),
                   parse_seconds=round(seconds, 3),
                   examples_per_second=round(len(examples) / max(seconds,
                                                                 1e-9), 1),
                   **evaluation.breakdown(predictions))
  return dict(summary)


def evaluate(out_dir: str, predictions: str,
             other: Optional[str] = None) -> dict:
  with stage.stage(out_dir, stage.command_line()) as summary:
    csl = evaluation.read_predictions(predictions)
    fallback = evaluation.read_predictions(other) if other else None
    summary.update(predictions=os.fspath(predictions),
                   **evaluation.breakdown(csl, fallback))
    if other:
      summary["other"] = os.fspath(other)
  return dict(summary)


def add_parser(subparsers) -> None:
  p = subparsers.add_parser("parse", help="parse inputs with a fitted model")
  p.add_argument("--model", required=True, help="a `csl-jax fit` directory")
  p.add_argument("--data", required=True, help="input<TAB>output TSV")
  p.add_argument("--out", required=True)
  p = subparsers.add_parser(
      "evaluate", help="exact match, coverage breakdown, ensemble")
  p.add_argument("--predictions", required=True,
                 help="CSL's predictions.tsv (from `csl-jax parse`)")
  p.add_argument("--other", help="another system's predictions "
                 "(input<TAB>prediction), used where CSL has no output")
  p.add_argument("--out", required=True)


def main(args: argparse.Namespace) -> int:
  if args.subcommand == "parse":
    parse(args.out, args.model, args.data)
  else:
    evaluate(args.out, args.predictions, args.other)
  return 0
