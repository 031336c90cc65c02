"""Speed of CSL's Viterbi parser on SCAN addprim_jump test (7,706 inputs).

The 20-rule SCAN grammar that CSL induces, random log p(r | context) (seeded;
rows are log-softmaxes), all test inputs parsed in one `parse_batch` call
after JIT warm-up. Serial Numba; k = 1 (no output CFG) and k = 16.

  python3 benchmarks/bench_viterbi.py [--repeats 5] [--seed 0]
"""

import argparse
import time

import numpy as np

from csl_jax.cky.grammar_arrays import encode_qcfg
from csl_jax.data.scan import make_split
from csl_jax.errors import run_script
from csl_jax.model import contexts
from csl_jax.model import viterbi
from csl_jax.qcfg.rules import parse_rules

SCAN_GRAMMAR = """\
NT_1 after NT_2 ### NT_2 NT_1
NT_1 and NT_2 ### NT_1 NT_2
NT_1 around left ### I_TURN_LEFT NT_1 I_TURN_LEFT NT_1 I_TURN_LEFT NT_1 I_TURN_LEFT NT_1
NT_1 around right ### I_TURN_RIGHT NT_1 I_TURN_RIGHT NT_1 I_TURN_RIGHT NT_1 I_TURN_RIGHT NT_1
NT_1 left ### I_TURN_LEFT NT_1
NT_1 opposite left ### I_TURN_LEFT I_TURN_LEFT NT_1
NT_1 opposite right ### I_TURN_RIGHT I_TURN_RIGHT NT_1
NT_1 right ### I_TURN_RIGHT NT_1
NT_1 thrice ### NT_1 NT_1 NT_1
NT_1 twice ### NT_1 NT_1
jump ### I_JUMP
look ### I_LOOK
run ### I_RUN
turn around left ### I_TURN_LEFT I_TURN_LEFT I_TURN_LEFT I_TURN_LEFT
turn around right ### I_TURN_RIGHT I_TURN_RIGHT I_TURN_RIGHT I_TURN_RIGHT
turn left ### I_TURN_LEFT
turn opposite left ### I_TURN_LEFT I_TURN_LEFT
turn opposite right ### I_TURN_RIGHT I_TURN_RIGHT
turn right ### I_TURN_RIGHT
walk ### I_WALK
"""


def random_log_p(num_contexts: int, num_rules: int, seed: int) -> np.ndarray:
  logits = np.random.default_rng(seed).normal(size=(num_contexts, num_rules))
  top = logits.max(axis=1, keepdims=True)
  return logits - top - np.log(np.exp(logits - top).sum(axis=1,
                                                         keepdims=True))


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--repeats", type=int, default=5)
  parser.add_argument("--seed", type=int, default=0)
  args = parser.parse_args()
  rules = parse_rules(SCAN_GRAMMAR)
  grammar = encode_qcfg(rules)
  ctx_index = contexts.context_index(rules, grammar.max_nts)
  log_p = random_log_p(contexts.num_contexts(rules), len(rules), args.seed)
  test = make_split("addprim_jump")[1]
  inputs = [e.input for e in test]
  model = (rules, grammar, log_p, ctx_index)
  start = time.perf_counter()
  viterbi.parse_batch(*model, inputs[:10])  # JIT warm-up / cache load
  viterbi.kbest_batch(*model, inputs[:10], k=16)
  print(f"warm-up (JIT or cache load): {time.perf_counter() - start:.1f} s")
  n = len(inputs)
  for name, run in [
      ("parse_batch, k=1", lambda: viterbi.parse_batch(*model, inputs)),
      ("kbest_batch, k=16", lambda: viterbi.kbest_batch(*model, inputs,
                                                        k=16))]:
    times = []
    for _ in range(args.repeats):
      start = time.perf_counter()
      out = run()
      times.append(time.perf_counter() - start)
    print(f"{name}: {n} inputs, best {min(times):.3f} s, median "
          f"{np.median(times):.3f} s ({n / min(times):,.0f} inputs/s, "
          f"{1e6 * min(times) / n:.0f} us/input)")
    if name.startswith("parse"):
      parsed = sum(r.parsed for r in out)
      exact = sum(r.parsed and " ".join(r.target) == e.output
                  for r, e in zip(out, test))
      print(f"  parsed {parsed}/{n}; exact match with random log_p "
            f"{exact / n:.1%} (ambiguity resolved by chance)")


if __name__ == "__main__":
  run_script(main)
