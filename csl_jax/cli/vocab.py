"""`csl-jax vocab`: a SentencePiece model trained on TSV files (both columns).

Use it with the tasks: CSL_JAX_VOCAB=sentencepiece CSL_JAX_SPM=OUT.model.
`--model_type word` gives one piece per whitespace token, which suits
SCAN-like languages with a few dozen words.
"""

import os

from absl import logging

from csl_jax.errors import InputError
from csl_jax.files import atomic_write_json


def add_parser(subparsers) -> None:
  p = subparsers.add_parser("vocab", help="train a SentencePiece vocabulary "
                            "on input<TAB>output files")
  p.add_argument("--tsv", action="append", required=True,
                 help="a TSV file (repeatable)")
  p.add_argument("--out", required=True,
                 help="output prefix: writes OUT.model and OUT.json")
  p.add_argument("--vocab_size", type=int, default=1000,
                 help="an upper bound for small corpora")
  p.add_argument("--model_type", default="unigram",
                 choices=("unigram", "bpe", "word", "char"))


def main(args) -> int:
  # pylint: disable=g-import-not-at-top
  import tasks
  from csl_jax.data import tsv
  # pylint: enable=g-import-not-at-top
  if args.vocab_size < 1:
    raise InputError(f"--vocab_size must be >= 1, got {args.vocab_size}")
  for path in args.tsv:  # missing, a directory, a malformed line, bad
    tsv.read_tsv(path)  # UTF-8 or an empty file: named, before training
  if args.out.endswith(("/", os.sep)):  # a prefix, not a directory
    raise InputError("--out is a prefix (writes PREFIX.model and "
                     "PREFIX.json), not a directory", args.out)
  parent = os.path.dirname(os.path.abspath(args.out))
  try:
    os.makedirs(parent, exist_ok=True)
  except OSError as e:  # e.g. a file where a directory of the prefix goes
    raise InputError(f"cannot create the directory of --out "
                     f"({e.strerror.lower()})", parent) from None
  try:
    path = tasks.train_sentencepiece(args.tsv, args.out, args.vocab_size,
                                     model_type=args.model_type)
  except RuntimeError as e:  # SentencePiece's own message is clear.
    raise InputError(f"sentencepiece: {e}") from None
  except tasks.vocab.tf.errors.OpError as e:  # the model file's write
    raise InputError(f"cannot write the model ({e.message})",
                     args.out + ".model") from None
  vocabulary = tasks.vocab.get_vocabulary("sentencepiece", path)
  record = {"model": path, "vocab_size": vocabulary.vocab_size,
            "model_type": args.model_type, "tsv": args.tsv}
  atomic_write_json(args.out + ".json", record)
  logging.info("wrote %s (%d pieces)", path, vocabulary.vocab_size)
  return 0
