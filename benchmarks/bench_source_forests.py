"""Source forests for log p(x): the batched build against its per-input
twin on a real grammar and training set (times and array equality).

  python3 benchmarks/bench_source_forests.py GRAMMAR.qcfg TRAIN.tsv MAX_NTS

GRAMMAR: a `csl-jax induce` output (e.g. RUN/csl/induce/grammar.qcfg);
MAX_NTS: the fit's `max_nts` (gin `fit.max_nts`: SCAN 2, GeoQuery and COGS 4).
"""

import argparse
import time

import numpy as np

from csl_jax.cky.grammar_arrays import encode_qcfg
from csl_jax.data.tsv import read_tsv
from csl_jax.errors import run_script
from csl_jax.model import source_forests
from csl_jax.model import source_forests_reference
from csl_jax.qcfg.rules import load_rules

FIELDS = ("node_offsets", "edge_offsets", "nodes", "edge_rule",
          "edge_parent", "edge_children")


def main() -> None:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("grammar")
  p.add_argument("train")
  p.add_argument("max_nts", type=int)
  args = p.parse_args()
  grammar = encode_qcfg(load_rules(args.grammar), args.max_nts)
  inputs = [" ".join(x) for x, _ in read_tsv(args.train)]
  source_forests.source_forest_batch(grammar, inputs[:2])  # kernel loaded
  times, batches = {}, {}
  for name, build in (("per-input twin", source_forests_reference),
                      ("batched", source_forests)):
    start = time.perf_counter()
    batches[name] = build.source_forest_batch(grammar, inputs)
    times[name] = time.perf_counter() - start
  same = all(np.array_equal(getattr(batches["per-input twin"], f),
                            getattr(batches["batched"], f)) for f in FIELDS)
  print(f"| {len(inputs):,} inputs | {times['per-input twin']:.2f} s | "
        f"{times['batched']:.2f} s | {'identical' if same else 'DIFFER'} |")


if __name__ == "__main__":
  run_script(main)
