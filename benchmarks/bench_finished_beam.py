"""How often returning the best finished beam (90232ef, session 33) changes
a trained model's beam-search outputs.

Decodes the same inputs twice with the same model: with today's beam search
(`decode._best`: the best beam that ended with EOS, else the best beam) and
with the pick made before that commit (the top beam even where it was cut
at max_len without EOS). Reports how many outputs differ and how many are
empty (`pcfg_bt` leaves those out of its candidates) both ways; with a TSV's
references, exact match and BLEU; `--scan` also counts the outputs that are
SCAN commands whose actions are the input (a reverse model's
backtranslation, `csl_jax.data.scan.interpret`).

  python3 benchmarks/bench_finished_beam.py --model RUN/pcfg_bt_reverse_model/model \
    --spm RUN/pcfg_bt_reverse_model/spm.model --tsv ../shared/data/scan/length/test.tsv \
    --source 1 --beam 4 --scan [--out RESULT.json]
  # or a file of inputs, one per line (no references), e.g. sampled programs:
  python3 benchmarks/bench_finished_beam.py ... --inputs RUN/pcfg_bt/programs/programs.txt
"""

import argparse
import time

import jax

from csl_jax import evaluation
from csl_jax.data import scan
from csl_jax.data.tsv import read_tsv
from csl_jax.errors import InputError
from csl_jax.errors import run_script
from csl_jax.files import atomic_write_json
from csl_jax.seq2seq import decode
from csl_jax.seq2seq import train as train_lib
from tasks import vocab as vocab_lib


def _top_beam(outputs, scores, done):
  """The pick before 90232ef: the highest-scoring beam, finished or not."""
  del done
  return outputs[:, 0], scores[:, 0]


def decode_both(model, params, vocabulary, texts, batch, beam):
  """[(today's outputs, seconds), (the top-beam outputs, seconds)]; leaves
  `decode._best` patched (the caller restores it)."""
  cfg = model.config
  result = []
  for pick in (decode._best, _top_beam):  # pylint: disable=protected-access
    decode._best = pick  # pylint: disable=protected-access
    jax.clear_caches()  # the jitted beam search traces `_best` anew
    start = time.time()
    outputs, _ = decode.translate(model, params, vocabulary, texts,
                                  cfg.max_input_len, cfg.max_target_len,
                                  batch, beam)
    result.append((outputs, time.time() - start))
  return result


def _right(command: str, actions: str) -> bool:
  try:
    return scan.interpret(command) == actions
  except InputError:
    return False


def main() -> None:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--model", required=True, help="a trained model directory")
  p.add_argument("--spm", help="its SentencePiece model (default: bytes)")
  source = p.add_mutually_exclusive_group(required=True)
  source.add_argument("--tsv", help="input<TAB>output rows")
  source.add_argument("--inputs", help="one input per line, no references")
  p.add_argument("--source", type=int, choices=(0, 1), default=0,
                 help="the column decoded; the other is the reference")
  p.add_argument("--beam", type=int, default=4)
  p.add_argument("--batch", type=int, default=64)
  p.add_argument("--scan", action="store_true",
                 help="count outputs whose SCAN actions are the input")
  p.add_argument("--out", help="JSON of the figures")
  args = p.parse_args()
  if args.beam < 2:
    p.error("--beam must be >= 2: greedy decoding has one beam")
  if args.tsv:
    rows = read_tsv(args.tsv)
    sources = [r[args.source] for r in rows]
    references = [r[1 - args.source] for r in rows]
  else:
    with open(args.inputs, encoding="utf-8") as f:
      sources = [line.rstrip("\n") for line in f if line.strip()]
    references = None
  model, params = train_lib.load_params(args.model)
  vocabulary = (vocab_lib.get_vocabulary("sentencepiece", args.spm)
                if args.spm else vocab_lib.get_vocabulary(vocab_lib.BYTE))
  best = decode._best  # pylint: disable=protected-access
  try:
    (now, now_s), (before, before_s) = decode_both(
        model, params, vocabulary, sources, args.batch, args.beam)
  finally:
    decode._best = best  # pylint: disable=protected-access
  changed = [i for i, (a, b) in enumerate(zip(now, before)) if a != b]
  result = {"model": args.model, "data": args.tsv or args.inputs,
            "beam": args.beam, "n": len(sources), "changed": len(changed),
            "seconds": {"finished_first": round(now_s, 1),
                        "top_beam": round(before_s, 1)}}
  for name, outputs in (("finished_first", now), ("top_beam", before)):
    result[name] = {"empty": sum(not o.strip() for o in outputs)}
    if references is not None:
      result[name].update(evaluation.exact_match(references, outputs))
      result[name].update(evaluation.bleu(references, outputs))
    if args.scan:
      result[name]["scan_right"] = 100.0 * sum(
          _right(o, s) for o, s in zip(outputs, sources)) / max(len(sources),
                                                                1)
  result["examples_changed"] = [
      {"input": sources[i], "finished_first": now[i], "top_beam": before[i]}
      for i in changed[:5]]
  print(f"{len(changed):,} of {len(sources):,} outputs differ (beam "
        f"{args.beam})")
  columns = [c for c in ("empty", "exact_match", "bleu", "scan_right")
             if c in result["top_beam"]]
  print("| pick | " + " | ".join(columns) + " |")
  print("|---|" + "---|" * len(columns))
  for name in ("finished_first", "top_beam"):
    print(f"| {name} | " + " | ".join(
        f"{result[name][c]:.2f}" if c != "empty" else str(result[name][c])
        for c in columns) + " |")
  if args.out:
    atomic_write_json(args.out, result)


if __name__ == "__main__":
  run_script(main)
