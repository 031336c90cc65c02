"""Throughput of OutputCFG recognition (not a test).

  PYTHONPATH=. python benchmarks/bench_output_cfg.py [--length N] [--seconds S]

Grammars: a typed FunQL-like one with ~1,000 productions (mostly lexical, plus
unary chains with a cycle), and a highly ambiguous arithmetic one (dense
charts, the CKY worst case). Prints strings/s after JIT warm-up.
"""

import argparse
import random
import time

from csl_jax.errors import run_script
from csl_jax.qcfg.output_cfg import OutputCFG, Symbol


def funql_like(num_types=20, words_per_type=45, num_functions=60, seed=0):
  rng = random.Random(seed)
  types = [f"T{i}" for i in range(num_types)]
  pairs = [("Q", "answer ( T0 )")]
  for i, t in enumerate(types):
    pairs += [(t, f"w{i}_{j}") for j in range(words_per_type)]
  for k in range(num_functions):
    t, a, b = (rng.choice(types) for _ in range(3))
    rhs = f"f{k} ( {a} )" if k % 2 else f"f{k} ( {a} , {b} )"
    pairs.append((t, rhs))
  # Unary chains, including the cycle T1 -> T2 -> T1.
  pairs += [("T1", "T2"), ("T2", "T1"), ("T0", "T3"), ("T3", "T4")]
  return OutputCFG.from_pairs(pairs)


def arithmetic():
  return OutputCFG.from_pairs([("E", "E + E"), ("E", "E * E"),
                               ("E", "( E )"), ("E", "num")])


def sample(cfg, rng, length, max_depth=60):
  """A random derivation of cfg.start, its length within ~10% of `length`."""
  slack = max(2, length // 10)
  by_lhs = {}
  for p in cfg.productions:
    by_lhs.setdefault(p.lhs, []).append(p.rhs)
  while True:
    out, stack = [], [(Symbol(cfg.start, False), 0)]
    while stack and len(out) <= length + slack:
      symbol, depth = stack.pop()
      if symbol.terminal:
        out.append(symbol.name)
        continue
      options = by_lhs[symbol.name]
      if depth > max_depth or len(out) + len(stack) >= length:
        options = [min(options, key=len)]  # Close off the derivation.
      elif rng.random() < 0.9:
        options = [r for r in options if len(r) > 1] or options  # Grow.
      rhs = rng.choice(options)
      stack += [(s, depth + 1) for s in reversed(rhs)]
    if not stack and abs(len(out) - length) <= slack:
      return out


def throughput(fn, strings, seconds):
  fn(strings[0])  # JIT warm-up (or load from the numba cache).
  count, start = 0, time.perf_counter()
  while time.perf_counter() - start < seconds:
    for s in strings:
      fn(s)
    count += len(strings)
  return count / (time.perf_counter() - start)


def main():
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("--length", type=int, default=100)
  parser.add_argument("--seconds", type=float, default=1.0)
  args = parser.parse_args()
  rng = random.Random(0)
  for name, cfg in [("funql_like", funql_like()), ("arithmetic", arithmetic())]:
    strings = [sample(cfg, rng, args.length) for _ in range(20)]
    assert all(cfg.recognizes(s) for s in strings)
    # A slotted variant, as in a QCFG rule target: two leaves that some
    # category derives alone become slots.
    slotted = []
    for s in strings:
      leaves = [i for i, t in enumerate(s) if cfg.derivable_categories([t])]
      is_slot = [False] * len(s)
      for i in rng.sample(leaves, min(2, len(leaves))):
        is_slot[i] = True
      slotted.append((s, is_slot))
    mean = sum(map(len, strings)) / len(strings)
    symbols = cfg._tables.grammar.num_symbols  # pylint: disable=protected-access
    print(f"{name}: {len(cfg.productions)} productions, {symbols} chart "
          f"symbols, strings of {mean:.0f} tokens on average")
    runs = [
        ("recognizes", cfg.recognizes, strings),
        ("recognizes_with_slots (2 slots)",
         lambda x: cfg.recognizes_with_slots(*x), slotted),
        ("recognizes_with_slots (2 slots, same id)",
         lambda x: cfg.recognizes_with_slots(
             x[0], x[1], slot_ids=[0 if b else -1 for b in x[1]]), slotted),
    ]
    for label, fn, data in runs:
      rate = throughput(fn, data, args.seconds)
      accepted = sum(map(bool, map(fn, data))) / len(data)
      print(f"  {label:42s} {rate:10.0f} strings/s {1e6 / rate:8.1f} "
            f"us/string ({accepted:.0%} accepted)")


if __name__ == "__main__":
  run_script(main)
