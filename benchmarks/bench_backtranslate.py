"""Backtranslation's decoding speed: a trained reverse model over programs.

Decodes the first --num lines of a programs file (pcfg_bt's
`programs/programs.txt`, one program a line) with the reverse model the
pipeline trained, as the backtranslate stage does (`decode.translate`, beam
--beam), writes the utterances to --out, one a line, and prints programs/s.
Run it from two checkouts (e.g. `PYTHONPATH=WORKTREE`) alternately and
`cmp` the two --out files to compare code versions on the same model.

  python3 benchmarks/bench_backtranslate.py \
    --model RUN/pcfg_bt_reverse_model --programs RUN/pcfg_bt/programs/programs.txt \
    --num 2000 --out /tmp/bt.txt
"""

import argparse
import os
import time

from csl_jax.seq2seq import decode
from csl_jax.seq2seq import train as train_lib
from tasks import vocab as vocab_lib


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--model", required=True,
                      help="the reverse model's stage directory (model/, "
                      "spm.model)")
  parser.add_argument("--programs", required=True)
  parser.add_argument("--num", type=int, default=2000)
  parser.add_argument("--beam", type=int, default=4)
  parser.add_argument("--batch_size", type=int, default=64)
  parser.add_argument("--out", required=True)
  args = parser.parse_args()
  directory = os.path.join(args.model, "model")
  config, _ = train_lib.load_config(directory)
  model, params = train_lib.load_params(directory)
  vocabulary = vocab_lib.get_vocabulary(
      "sentencepiece", os.path.join(args.model, "spm.model"))
  with open(args.programs, encoding="utf-8") as f:
    programs = [line.rstrip("\n") for line in f][:args.num]
  decode.translate(model, params, vocabulary, programs[:1],
                   config.max_input_len, config.max_target_len,
                   args.batch_size, args.beam)  # compiles
  start = time.time()
  texts, cut = decode.translate(model, params, vocabulary, programs,
                                config.max_input_len, config.max_target_len,
                                args.batch_size, args.beam)
  seconds = time.time() - start
  with open(args.out, "w", encoding="utf-8") as f:
    f.writelines(t + "\n" for t in texts)
  print(f"{len(programs)} programs ({cut} cut), beam {args.beam}: "
        f"{seconds:.1f} s, {len(programs) / seconds:.1f} programs/s",
        flush=True)


if __name__ == "__main__":
  main()
