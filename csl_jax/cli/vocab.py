"""`csl-jax vocab`: a SentencePiece model trained on TSV files (both columns).

Use it with the tasks: CSL_JAX_VOCAB=sentencepiece CSL_JAX_SPM=OUT.model.
`--model_type word` gives one piece per whitespace token, which suits
SCAN-like languages with a few dozen words.
"""


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
  import tasks  # pylint: disable=g-import-not-at-top
  tasks.vocab.train_vocabulary(args.tsv, args.out, args.vocab_size,
                               model_type=args.model_type)
  return 0
