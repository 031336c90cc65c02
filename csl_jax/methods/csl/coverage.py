"""How much of a dataset a QCFG parses and derives (`csl-jax coverage`)."""

import os
from typing import Any, Dict

import gin
import numpy as np

from csl_jax import configs
from csl_jax.cky import forest
from csl_jax.cky.grammar_arrays import DEFAULT_MAX_NTS, encode_qcfg
from csl_jax.data import tsv
from csl_jax.qcfg.rules import check_max_nts, load_rules
from csl_jax.progress import progress


@gin.configurable(module="coverage")
def coverage(out_dir: str, grammar: str, data: str,
             max_nts: int = DEFAULT_MAX_NTS,
             max_source_len: int = forest.DEFAULT_MAX_SOURCE_LEN,
             max_target_len: int = forest.DEFAULT_MAX_TARGET_LEN,
             skip_malformed: bool = False,
             skip_too_long: bool = False) -> dict:
  """Writes summary.json (input_coverage: % of inputs with a source-side
  parse; pair_coverage = coverage: % of pairs the grammar derives) and
  not_derived.tsv."""
  configs.check_values("coverage", locals(), max_nts=configs.AT_LEAST_ONE,
                       max_source_len=configs.AT_LEAST_ONE,
                       max_target_len=configs.AT_LEAST_ONE)
  os.makedirs(out_dir, exist_ok=True)
  summary: Dict[str, Any] = {}
  rules = load_rules(grammar)
  check_max_nts(rules, max_nts, grammar, "--max_nts")
  encoded = encode_qcfg(rules, max_nts=max_nts)
  stats = tsv.ReadStats()
  examples = tsv.read_tsv(data, skip_malformed=skip_malformed, stats=stats)
  derived = forest.derivable(encoded, examples, max_source_len,
                             max_target_len, skip_too_long, source=data,
                             lines=stats.lines)
  too_long = [i for i, (x, y) in enumerate(examples)
              if len(x.split()) > max_source_len
              or len(y.split()) > max_target_len]
  skip = set(too_long)
  parsed = np.zeros(len(examples), np.bool_)
  for i, ex in enumerate(progress(examples, desc="source parses",
                                   mininterval=2.0)):
    if i not in skip:
      parsed[i] = forest.parse_source(encoded, ex.input,
                                      max_source_len).parses
  tsv.write_tsv(os.path.join(out_dir, "not_derived.tsv"),
                [ex for ex, ok in zip(examples, derived, strict=True)
                 if not ok])
  total = max(len(examples), 1)
  summary.update(
      grammar=os.fspath(grammar), data=os.fspath(data),
      num_rules=len(rules), num_examples=len(examples),
      num_skipped_malformed=stats.num_skipped,
      num_skipped_too_long=len(too_long),
      # Percentages, the unit of every accuracy and coverage we report.
      input_coverage=100.0 * float(parsed.sum()) / total,
      pair_coverage=100.0 * float(derived.sum()) / total,
      coverage=100.0 * float(derived.sum()) / total)
  return dict(summary)
