"""Decoding a trained model's inputs in data order vs longest first.

`decode.predict_ids` batches inputs longest first, so a batch's loop stops
when its own outputs are done rather than when a random batch's longest
output is. This decodes the same inputs both ways (greedy and beam search,
through the same compiled decoder, after one batch has compiled it), checks
that the outputs are the same, and prints the times.

  python3 benchmarks/bench_decode_order.py \
    --model RUN/cells/gen/original/seed_0/train \
    --vocab RUN/vocab/gen/spm.model --tsv ../shared/data/cogs/gen.tsv --num 6000
"""

import argparse
import time

import jax.numpy as jnp
import numpy as np

from csl_jax.errors import run_script
from csl_jax.seq2seq import decode
from csl_jax.seq2seq import train as train_lib
from tasks import vocab as vocab_lib


def data_order(model, params, inputs, input_len, target_len, batch_size,
               beam_size):
  """Batches in the order given (what `evaluate` did before)."""
  rows = decode.batch_rows(batch_size)
  out = []
  for start in range(0, len(inputs), batch_size):
    chunk = inputs[start:start + batch_size]
    batch = np.zeros((rows, input_len), np.int32)
    for j, ids in enumerate(chunk):
      batch[j, :len(ids)] = ids
    out += decode.strip_eos(decode.predict(
        model, params, jnp.asarray(batch), target_len,
        beam_size))[:len(chunk)]
  return out


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--model", required=True,
                      help="a trained model's directory (train.train's)")
  parser.add_argument("--vocab", required=True, help="its SentencePiece model")
  parser.add_argument("--tsv", required=True, help="inputs in column 1")
  parser.add_argument("--num", type=int, default=6000)
  parser.add_argument("--batch_size", type=int, default=64)
  parser.add_argument("--beams", type=int, nargs="+", default=[1, 4])
  args = parser.parse_args()
  config, _ = train_lib.load_config(args.model)
  model, params = train_lib.load_params(args.model)
  vocabulary = vocab_lib.get_vocabulary("sentencepiece", args.vocab)
  with open(args.tsv, encoding="utf-8") as f:
    texts = [line.split("\t")[0] for line in f][:args.num]
  inputs = [list(vocabulary.encode(t))[:config.max_input_len - 1]
            + [decode.EOS_ID] for t in texts]
  for beam in args.beams:
    decode.predict_ids(model, params, inputs[:1], config.max_input_len,
                       config.max_target_len, args.batch_size, beam)
    start = time.time()
    want = data_order(model, params, inputs, config.max_input_len,
                      config.max_target_len, args.batch_size, beam)
    plain = time.time() - start
    start = time.time()
    got = decode.predict_ids(model, params, inputs, config.max_input_len,
                             config.max_target_len, args.batch_size, beam)
    ordered = time.time() - start
    print(f"beam {beam}: {len(inputs)} inputs, data order {plain:.1f} s, "
          f"longest first {ordered:.1f} s = "
          f"{plain / ordered:.2f}x, same outputs: {got == want}", flush=True)


if __name__ == "__main__":
  run_script(main)
