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

from csl_jax.errors import run_script
from csl_jax.methods.pcfg_bt import method as pcfg_bt
from csl_jax.seq2seq import decode
from csl_jax.seq2seq import train as train_lib


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
  # The reverse model, its word vocabulary and the programs, read as the
  # backtranslate stage reads them.
  # pylint: disable=protected-access
  directory = os.path.join(args.model, "model")
  model, params = train_lib.load_params(directory)
  config = model.config
  vocabulary = pcfg_bt._vocabulary("word", directory)
  programs = pcfg_bt._read_programs(args.programs)[:args.num]
  # pylint: enable=protected-access
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
  run_script(main)
