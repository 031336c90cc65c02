"""Sampling speed and SCAN sample quality (issue 5).

  python3 benchmarks/bench_sampling.py --model DIR [--num 100000]
      [--max_depth 5] [--temperature 1.0] [--primitive jump]

DIR is a `csl-jax fit` directory of a SCAN model. Correctness is checked with
the project's SCAN interpreter: a sample is correct if its input is a valid
SCAN command and its output is that command's action sequence.
"""

import argparse
import time

from csl_jax.data import scan
from csl_jax.errors import run_script
from csl_jax.model.csl_model import CSLModel
from csl_jax.sampling import sampler


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--model", required=True)
  parser.add_argument("--num", type=int, default=100_000)
  parser.add_argument("--max_depth", type=int, default=5)
  parser.add_argument("--temperature", type=float, default=1.0)
  parser.add_argument("--primitive", default="jump")
  parser.add_argument("--repeats", type=int, default=3)
  args = parser.parse_args()
  model = CSLModel.load(args.model)
  config = sampler.SampleConfig(max_depth=args.max_depth,
                                temperature=args.temperature)
  sampler.sample(model, 1000, config)  # JIT cache load
  times = []
  for _ in range(args.repeats):
    start = time.perf_counter()
    result = sampler.sample(model, args.num, config)
    times.append(time.perf_counter() - start)
  pairs = result.pairs
  correct = sum(scan.is_valid_command(x) and scan.interpret(x) == y
                for x, y in pairs)
  inputs = {x for x, _ in pairs}
  with_primitive = {x for x in inputs if args.primitive in x.split()}
  print(f"{args.num} samples: best {min(times):.2f} s "
        f"({args.num / min(times):,.0f} samples/s)")
  print(f"correct SCAN pairs: {correct / len(pairs):.2%}")
  print(f"distinct inputs: {len(inputs)}; containing {args.primitive!r}: "
        f"{len(with_primitive)} (other than the bare primitive: "
        f"{len(with_primitive - {args.primitive})})")


if __name__ == "__main__":
  run_script(main)
