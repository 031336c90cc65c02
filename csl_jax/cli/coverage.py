"""`csl-jax coverage`: how much of a dataset a QCFG parses and derives."""

import argparse
import os

import gin
import numpy as np
import tqdm

from csl_jax.cky import forest
from csl_jax.cky.grammar_arrays import DEFAULT_MAX_NTS, encode_grammar
from csl_jax.cli import stage
from csl_jax.data import tsv
from csl_jax.qcfg.rules import load_rules


@gin.configurable(module="coverage")
def coverage(out_dir: str, grammar: str, data: str,
             max_nts: int = DEFAULT_MAX_NTS,
             max_source_len: int = forest.DEFAULT_MAX_SOURCE_LEN,
             max_target_len: int = forest.DEFAULT_MAX_TARGET_LEN,
             skip_malformed: bool = False,
             skip_too_long: bool = False) -> dict:
  """Writes summary.json (input_coverage: share of inputs with a source-side
  parse; pair_coverage = coverage: share of pairs the grammar derives) and
  not_derived.tsv."""
  with stage.stage(out_dir, stage.command_line()) as summary:
    rules = load_rules(grammar)
    encoded = encode_grammar(rules, max_nts=max_nts)
    stats = tsv.ReadStats()
    examples = tsv.read_tsv(data, skip_malformed=skip_malformed, stats=stats)
    derived = forest.derivable(encoded, examples, max_source_len,
                               max_target_len, skip_too_long, source=data)
    too_long = [i for i, (x, y) in enumerate(examples)
                if len(x.split()) > max_source_len
                or len(y.split()) > max_target_len]
    skip = set(too_long)
    parsed = np.zeros(len(examples), np.bool_)
    for i, ex in enumerate(tqdm.tqdm(examples, desc="source parses",
                                     mininterval=2.0)):
      if i not in skip:
        parsed[i] = forest.parse_source(encoded, ex.input,
                                        max_source_len).parses
    tsv.write_tsv(os.path.join(out_dir, "not_derived.tsv"),
                  [ex for ex, ok in zip(examples, derived) if not ok])
    total = max(len(examples), 1)
    summary.update(
        grammar=os.fspath(grammar), data=os.fspath(data),
        num_rules=len(rules), num_examples=len(examples),
        num_skipped_malformed=stats.num_skipped,
        num_skipped_too_long=len(too_long),
        input_coverage=float(parsed.sum()) / total,
        pair_coverage=float(derived.sum()) / total,
        coverage=float(derived.sum()) / total)
  return dict(summary)


def add_parser(subparsers) -> None:
  parser = subparsers.add_parser(
      "coverage", help="share of a dataset's inputs/pairs a QCFG covers")
  parser.add_argument("--grammar", required=True, help="a .qcfg file")
  parser.add_argument("--data", required=True, help="input<TAB>output TSV")
  parser.add_argument("--max_nts", type=int)
  parser.add_argument("--max_source_len", type=int)
  parser.add_argument("--max_target_len", type=int)
  parser.add_argument("--skip_malformed", action="store_true", default=None)
  parser.add_argument("--skip_too_long", action="store_true", default=None)
  parser.add_argument("--out", required=True)


def main(args: argparse.Namespace) -> int:
  kwargs = {n: getattr(args, n) for n in (
      "max_nts", "max_source_len", "max_target_len", "skip_malformed",
      "skip_too_long") if getattr(args, n) is not None}
  coverage(args.out, args.grammar, args.data, **kwargs)
  return 0
