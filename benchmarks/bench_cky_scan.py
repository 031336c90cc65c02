"""Speed of the Numba QCFG CKY core on SCAN addprim_jump train (issue 2).

Checks derivability of all 14,670 training pairs with the hand-written SCAN
QCFG (tests/fixtures/scan.qcfg), then builds their packed forests. Times are
after JIT warm-up; the kernels are serial (one core). Reads
../shared/data/scan/addprim_jump/train.tsv by default.

  python3 benchmarks/bench_cky_scan.py [--data PATH] [--repeats 5]
"""

import argparse
import os
import time

import numpy as np

from csl_jax.cky import forest
from csl_jax.cky.grammar_arrays import encode_qcfg
from csl_jax.data.tsv import read_tsv
from csl_jax.errors import run_script
from csl_jax.qcfg.rules import load_rules

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--data", default=os.path.join(
      ROOT, "..", "shared", "data", "scan", "addprim_jump", "train.tsv"))
  parser.add_argument("--grammar", default=os.path.join(
      ROOT, "tests", "fixtures", "scan.qcfg"))
  parser.add_argument("--repeats", type=int, default=5)
  args = parser.parse_args()
  grammar = encode_qcfg(load_rules(args.grammar))
  examples = read_tsv(args.data)
  forest.derivable(grammar, examples[:10])  # JIT warm-up / cache load
  forest.build_forests(grammar, examples[:10])
  check, build = [], []
  for _ in range(args.repeats):
    start = time.perf_counter()
    ok = forest.derivable(grammar, examples)
    check.append(time.perf_counter() - start)
    start = time.perf_counter()
    batch, _ = forest.build_forests(grammar, examples)
    build.append(time.perf_counter() - start)
  assert ok.all(), "the fixture grammar must derive every pair"
  n = len(examples)
  print(f"pairs: {n}, all derivable: {bool(ok.all())}")
  print(f"forests: {batch.nodes.shape[0]} nodes, "
        f"{batch.edge_rule.shape[0]} hyperedges, derivations per pair "
        f"(mean) {np.mean([batch[b].count_derivations() for b in range(0, n, 50)]):.2f}")
  print(f"derivability check: best {min(check):.3f} s, median "
        f"{np.median(check):.3f} s ({n / min(check):,.0f} pairs/s)")
  print(f"forest building:    best {min(build):.3f} s, median "
        f"{np.median(build):.3f} s ({n / min(build):,.0f} pairs/s)")


if __name__ == "__main__":
  run_script(main)
