"""Backtranslation quality of a `pcfg_bt` reverse model, per category
(Yao & Koller Table 8: exact match and BLEU of program -> utterance on the
test set; for COGS only the structural generalization types, "Struct").

The reverse model (RUN/pcfg_bt_reverse_model: `model/` and its word
vocabulary `spm.model`) decodes each row's program (the TSV's second
column) into an utterance, scored against the row's first column with the
project's exact match and BLEU (`csl_jax.evaluation`).

  python3 benchmarks/bench_backtranslation.py \
    --reverse_model RUN/augment/gen/seed_0/pcfg_bt_reverse_model \
    --tsv ../shared/data/cogs/gen.tsv --categories ../shared/data/cogs/gen_categories.txt \
    --keep obj_pp_to_subj_pp pp_recursion cp_recursion --beam 4 [--out RESULT.json]
"""

import argparse
import collections
import os
import time

from csl_jax import evaluation
from csl_jax.data.tsv import read_tsv
from csl_jax.errors import run_script
from csl_jax.experiments.runner import load_categories
from csl_jax.files import atomic_write_json
from csl_jax.methods.pcfg_bt.method import WORD_SPM
from csl_jax.seq2seq import decode
from csl_jax.seq2seq import train as train_lib
from tasks import vocab as vocab_lib


def rows_to_score(tsv, categories, keep):
  """(utterance, program, category) rows; only `keep` categories if given.
  `categories` as the experiment runner's: a file of one per row, or
  `column3` (the TSV's third column)."""
  pairs = read_tsv(tsv)
  if categories and categories != "column3":
    categories = os.path.abspath(categories)
  labels = (load_categories(tsv, os.path.dirname(tsv), categories)
            or ["all"] * len(pairs))
  return [(x, y, c) for (x, y), c in zip(pairs, labels)
          if not keep or c in keep]


def scores(rows, predictions):
  targets = [x for x, _, _ in rows]
  return {"n": len(rows),
          **evaluation.exact_match(targets, predictions),
          **evaluation.bleu(targets, predictions)}


def main() -> None:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--reverse_model", required=True,
                 help="a pcfg_bt reverse model stage (model/, spm.model)")
  p.add_argument("--tsv", required=True, help="utterance<TAB>program rows")
  p.add_argument("--categories", help="one category per TSV row, or column3")
  p.add_argument("--keep", nargs="*", help="score only these categories")
  p.add_argument("--beam", type=int, default=4)
  p.add_argument("--batch", type=int, default=64)
  p.add_argument("--out", help="JSON of the scores")
  args = p.parse_args()
  rows = rows_to_score(args.tsv, args.categories, args.keep)
  model, params = train_lib.load_params(
      os.path.join(args.reverse_model, "model"))
  vocabulary = vocab_lib.get_vocabulary(
      "sentencepiece", os.path.join(args.reverse_model, WORD_SPM))
  cfg = model.config
  start = time.time()
  predictions, cut = decode.translate(
      model, params, vocabulary, [y for _, y, _ in rows], cfg.max_input_len,
      cfg.max_target_len, args.batch, args.beam)
  seconds = time.time() - start
  by_category = collections.defaultdict(list)
  for i, (_, _, c) in enumerate(rows):
    by_category[c].append(i)
  result = {"reverse_model": args.reverse_model, "tsv": args.tsv,
            "beam": args.beam, "programs_cut": cut,
            "decode_seconds": round(seconds, 1),
            "all": scores(rows, predictions),
            "categories": {c: scores([rows[i] for i in ix],
                                     [predictions[i] for i in ix])
                           for c, ix in sorted(by_category.items())}}
  print("| rows | n | exact match | BLEU |\n|---|---|---|---|")
  for name, s in [("all", result["all"]), *result["categories"].items()]:
    print(f"| {name} | {s['n']:,} | {s['exact_match']:.1f} | "
          f"{s['bleu']:.1f} |")
  print(f"decoded {len(rows):,} programs in {seconds:.1f} s (beam "
        f"{args.beam}; {cut} cut to the model's input length)")
  if args.out:
    atomic_write_json(args.out, result)


if __name__ == "__main__":
  run_script(main)
