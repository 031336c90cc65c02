"""Seq2seq train-step and greedy-decoding speed (issue 6).

  python3 benchmarks/bench_seq2seq.py [--gin_file gin/seq2seq/scan.gin]
      [--batch 64] [--input_len 16] [--steps 20]

Times the jitted train step on synthetic batches at each target width the
length buckets produce (16, 32, 48, and the configured maximum), and greedy
decoding of one batch to the maximum length, after a compiling warm-up
call. Prints examples/s; the model sizes come from the gin file.
"""

import argparse
import time

import gin
import jax
import numpy as np

from csl_jax.errors import run_script
from csl_jax.seq2seq import decode
from csl_jax.seq2seq import models
from csl_jax.seq2seq import train


def _batch(rng, batch, input_len, target_len, vocab):
  tokens = rng.integers(3, vocab, (batch, target_len)).astype(np.int32)
  return {"encoder_input_tokens": rng.integers(3, vocab, (batch, input_len)
                                               ).astype(np.int32),
          "decoder_input_tokens": np.pad(tokens, ((0, 0), (1, 0)))[:, :-1],
          "decoder_target_tokens": tokens,
          "decoder_loss_weights": np.ones((batch, target_len), np.float32)}


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--gin_file", default="gin/seq2seq/scan.gin")
  parser.add_argument("--batch", type=int, default=64)
  parser.add_argument("--input_len", type=int, default=16)
  parser.add_argument("--vocab", type=int, default=22)
  parser.add_argument("--steps", type=int, default=20)
  args = parser.parse_args()
  gin.parse_config_file(args.gin_file)
  config = models.Seq2SeqConfig(vocab_size=args.vocab)
  train_config = train.TrainConfig()
  state = train.create_state(config, train_config, jax.random.PRNGKey(0))
  rate = np.float32(train_config.learning_rate)  # the peak rate
  rng = np.random.default_rng(0)
  print(f"{jax.device_count()} {jax.devices()[0].platform} device(s); "
        f"d_model {config.d_model}, {config.num_layers}+{config.num_layers} "
        f"layers, batch {args.batch}")
  widths = sorted({w for w in (16, 32, 48) if w < config.max_target_len}
                  | {config.max_target_len})
  for width in widths:
    batch = _batch(rng, args.batch, args.input_len, width, args.vocab)
    state, out = train.train_step(state, batch, jax.random.PRNGKey(1),
                                    rate)
    jax.block_until_ready(out)
    start = time.perf_counter()
    for _ in range(args.steps):
      state, out = train.train_step(state, batch, jax.random.PRNGKey(1),
                                    rate)
    jax.block_until_ready(out)
    seconds = (time.perf_counter() - start) / args.steps
    print(f"train, targets {width:3d}: {seconds * 1e3:7.1f} ms/step, "
          f"{args.batch / seconds:8.0f} examples/s")
  model = models.Transformer(config)
  inputs = _batch(rng, args.batch, args.input_len, 1,
                  args.vocab)["encoder_input_tokens"]
  # Random weights seldom end every row early: about the full-length cost.
  jax.block_until_ready(decode.greedy_decode(model, state.params, inputs,
                                             config.max_target_len))
  start = time.perf_counter()
  jax.block_until_ready(decode.greedy_decode(model, state.params, inputs,
                                             config.max_target_len))
  seconds = time.perf_counter() - start
  print(f"greedy decoding to {config.max_target_len} tokens: "
        f"{args.batch / seconds:.0f} examples/s")


if __name__ == "__main__":
  run_script(main)
