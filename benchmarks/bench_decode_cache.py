"""Decoding with the key/value cache vs recomputing the prefix (issue 13).

  python3 benchmarks/bench_decode_cache.py [--target_len 50] [--batch 64]

Backtranslation decodes thousands of sampled programs into utterances, so
decoding speed matters. Same parameters, same inputs: greedy and beam 4,
each with the cache (`decode.*_cached`) and without (`decode.greedy_decode`,
`decode.beam_search`); prints examples/s both ways, the speed-up, and
whether the tokens are identical. The model is the size of
gin/experiments/cpu_small.gin (and --d_model etc.), random parameters with
the padding and EOS embeddings zeroed, so that outputs run the full --target_len tokens
(the mean length decoded is printed). Compile time is excluded: each
function runs once before it is timed.
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

from csl_jax.errors import run_script
from csl_jax.seq2seq import decode
from csl_jax.seq2seq import models


def timed(fn, repeats):
  out = jax.block_until_ready(fn())  # Compiles.
  best = float("inf")
  for _ in range(repeats):
    start = time.perf_counter()
    jax.block_until_ready(fn())
    best = min(best, time.perf_counter() - start)
  return out, best


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--target_len", type=int, default=50)
  parser.add_argument("--input_len", type=int, default=50)
  parser.add_argument("--batch", type=int, default=64)
  parser.add_argument("--vocab", type=int, default=64)
  parser.add_argument("--d_model", type=int, default=64)
  parser.add_argument("--num_heads", type=int, default=4)
  parser.add_argument("--d_ff", type=int, default=256)
  parser.add_argument("--num_layers", type=int, default=2)
  parser.add_argument("--repeats", type=int, default=3)
  args = parser.parse_args()
  cfg = models.Seq2SeqConfig(
      vocab_size=args.vocab, d_model=args.d_model, num_heads=args.num_heads,
      d_ff=args.d_ff, num_layers=args.num_layers, dropout=0.0,
      max_input_len=args.input_len, max_target_len=args.target_len)
  model, params = models.init_params(cfg, jax.random.PRNGKey(0))
  # Padding (0) and EOS get logit 0, below the best of the other 62.
  params["embed"]["embedding"] = params["embed"]["embedding"].at[
      :decode.EOS_ID + 1].set(0.0)
  inputs = jnp.asarray(np.random.RandomState(0).randint(
      2, args.vocab, (args.batch, args.input_len)), jnp.int32)
  print(f"model d_model={cfg.d_model} layers={cfg.num_layers} "
        f"d_ff={cfg.d_ff} vocab={cfg.vocab_size}; batch {args.batch}, "
        f"inputs {args.input_len} tokens, outputs up to {args.target_len}; "
        f"{jax.device_count()} device(s): {jax.devices()[0].platform}")
  print("| decoding | no cache (examples/s) | cache (examples/s) | speed-up "
        "| same tokens | mean length |")
  print("|---|---|---|---|---|---|")
  for name, plain, cached in (
      ("greedy", lambda: decode.greedy_decode(model, params, inputs,
                                              args.target_len),
       lambda: decode.greedy_decode_cached(model, params, inputs,
                                           args.target_len)),
      ("beam 4", lambda: decode.beam_search(model, params, inputs,
                                            args.target_len, 4)[0],
       lambda: decode.beam_search_cached(model, params, inputs,
                                         args.target_len, 4)[0])):
    want, slow = timed(plain, args.repeats)
    got, fast = timed(cached, args.repeats)
    length = np.mean([len(r) for r in decode.strip_eos(np.asarray(got))])
    print(f"| {name} | {args.batch / slow:.1f} | {args.batch / fast:.1f} | "
          f"{slow / fast:.1f}× | "
          f"{bool((np.asarray(want) == np.asarray(got)).all())} | "
          f"{length:.1f} |", flush=True)


if __name__ == "__main__":
  run_script(main)
