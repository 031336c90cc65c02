"""CSL as a parser, scored (`csl-jax parse`, `csl-jax evaluate`)."""

import os
import time
from typing import Any, Dict, Optional

import gin

from csl_jax import configs
from csl_jax.data import tsv
from csl_jax.errors import InputError
from csl_jax.model import evaluation
from csl_jax.model import viterbi
from csl_jax.model.csl_model import CSLModel


@gin.configurable(module="parse")
def parse(out_dir: str, model: str, data: str, k: Optional[int] = None,
          max_unary_chain: int = viterbi.DEFAULT_MAX_UNARY_CHAIN,
          max_source_len: int = viterbi.DEFAULT_MAX_SOURCE_LEN,
          skip_too_long: bool = False) -> Dict[str, Any]:
  """Writes DIR/predictions.tsv; returns the summary (exact match,
  coverage, both in percent). Inputs over `max_source_len` tokens are an
  error, or with `skip_too_long` get no parse and are counted."""
  if k is not None and k < 1:
    raise InputError(f"k must be >= 1, not {k}")
  configs.check_values("parse", locals(),
                       max_unary_chain=configs.NON_NEGATIVE,
                       max_source_len=configs.AT_LEAST_ONE)
  csl = CSLModel.load(model)
  examples = tsv.read_tsv(data)
  os.makedirs(out_dir, exist_ok=True)
  start = time.time()
  results = csl.parse([e.input for e in examples], k=k,
                      max_unary_chain=max_unary_chain,
                      max_source_len=max_source_len,
                      skip_too_long=skip_too_long, source=data)
  seconds = time.time() - start
  predictions = [evaluation.Prediction(
      e.input, " ".join(r.target) if r.parsed else None, e.output)
                 for e, r in zip(examples, results, strict=True)]
  evaluation.write_predictions(os.path.join(out_dir, "predictions.tsv"),
                               predictions)
  summary = dict(model=os.fspath(model), data=os.fspath(data),
                 parse_seconds=round(seconds, 3),
                 num_skipped_too_long=viterbi.num_skipped(results),
                 examples_per_second=round(len(examples) / max(seconds,
                                                               1e-9), 1))
  summary.update(evaluation.breakdown(predictions))
  return summary


def evaluate(out_dir: str, predictions: str,
             other: Optional[str] = None) -> Dict[str, Any]:
  """Scores predictions (and the ensemble with `other`); returns the
  summary."""
  os.makedirs(out_dir, exist_ok=True)
  summary: Dict[str, Any] = {}
  csl = evaluation.read_predictions(predictions)
  fallback = evaluation.read_predictions(other) if other else None
  try:
    scores = evaluation.breakdown(csl, fallback)
  except InputError as e:  # the files the message is about
    if e.line is not None:
      raise InputError(f"{e.message} (in {predictions})", other,
                       e.line) from None
    raise InputError(e.message + (f" (the other: {other})" if other else ""),
                     predictions) from None
  summary.update(predictions=os.fspath(predictions), **scores)
  if other:
    summary["other"] = os.fspath(other)
  return dict(summary)
