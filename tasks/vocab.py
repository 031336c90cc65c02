"""The tasks' vocabulary: UTF-8 bytes (offline) or a SentencePiece model.

The choice, by precedence: explicit arguments to `get_vocabulary`, gin
bindings of it in effect when it is called, then the environment variables
CSL_JAX_VOCAB (byte|sentencepiece), CSL_JAX_SPM (model path, local or
gs://) and CSL_JAX_EXTRA_IDS; the default is bytes.

T5X requires the task's vocabularies to equal the model's. Bind the model's
to this function (`VOCABULARY = @tasks.vocab.get_vocabulary()`) and choose
it with the environment variables (or gin bindings parsed before
`import tasks`), so registration and model resolve the same arguments;
equal arguments give the very same cached object.
"""

import functools
import io
import os
from typing import Any, Dict, Iterable, Optional, Sequence, Tuple, Union

from absl import logging
import gin
import seqio
import tensorflow as tf

from csl_jax.errors import InputError
from csl_jax.files import atomic_write_json

BYTE = "byte"
SENTENCEPIECE = "sentencepiece"
KINDS = (BYTE, SENTENCEPIECE)
# SentencePiece model types a vocabulary is trained with.
MODEL_TYPES = ("unigram", "bpe", "word", "char")

ENV_VOCAB = "CSL_JAX_VOCAB"
ENV_SPM = "CSL_JAX_SPM"
ENV_EXTRA_IDS = "CSL_JAX_EXTRA_IDS"

# T5's public SentencePiece model, sentinels included: T5X's T5 1.0 and 1.1
# gin files use it with extra_ids=0.
T5_SPM = "gs://t5-data/vocabs/cc_all.32000.100extra/sentencepiece.model"


@functools.lru_cache(maxsize=None)
def _make(kind: str, path: Optional[str], extra_ids: int):
  if kind == BYTE:
    return seqio.ByteVocabulary(extra_ids=extra_ids)
  return seqio.SentencePieceVocabulary(path, extra_ids=extra_ids)


# Interactive mode lets importlib.reload re-register the configurable.
with gin.config.interactive_mode():

  @gin.configurable(module="tasks.vocab")
  def get_vocabulary(kind: Optional[str] = None,
                     sentencepiece_model: Optional[str] = None,
                     extra_ids: Optional[int] = None) -> seqio.Vocabulary:
    """Returns the (cached) vocabulary; None arguments come from the env."""
    kind = kind or os.environ.get(ENV_VOCAB) or BYTE
    if kind not in KINDS:
      raise ValueError(f"vocabulary kind {kind!r}: expected one of {KINDS} "
                       f"(argument or ${ENV_VOCAB})")
    if extra_ids is None:
      text = os.environ.get(ENV_EXTRA_IDS) or "0"
      try:
        extra_ids = int(text)
      except ValueError:
        raise ValueError(f"${ENV_EXTRA_IDS}={text!r} is not an integer")
    if extra_ids < 0:
      raise ValueError(f"extra_ids (argument or ${ENV_EXTRA_IDS}) must be "
                       f">= 0, got {extra_ids}")
    if kind == BYTE:
      return _make(BYTE, None, extra_ids)
    path = sentencepiece_model or os.environ.get(ENV_SPM)
    if not path:
      raise ValueError(
          f"sentencepiece vocabulary needs a model path (argument or "
          f"${ENV_SPM}), e.g. {T5_SPM}")
    # Remote paths are checked when first read, so no network here.
    if "://" not in path and not tf.io.gfile.exists(path):
      raise ValueError(f"{path}: no such SentencePiece model")
    return _make(SENTENCEPIECE, path, extra_ids)


_SPM_MAX_SENTENCE_LENGTH = 4192  # SentencePiece's default, in bytes


def _tsv_fields(tsv_paths: Iterable[str]):
  for path in tsv_paths:
    with tf.io.gfile.GFile(path, "r") as f:
      for number, line in enumerate(f):
        if not number:
          line = line.lstrip("\ufeff")  # a UTF-8 BOM is not a character
        for field in line.rstrip("\r\n").split("\t")[:2]:
          if field.strip():
            yield field


def train_sentencepiece(tsv_paths: Union[str, Iterable[str]],
                        model_prefix: str, vocab_size: int,
                        **trainer_options) -> str:
  """Trains a SentencePiece model on both columns of `input<TAB>output` files.

  Args:
    tsv_paths: a path or paths (local or gs://).
    model_prefix: writes `model_prefix + ".model"` (local or gs://).
    vocab_size: a soft limit (small corpora may give fewer pieces).
    **trainer_options: override the SentencePieceTrainer options below.

  Returns:
    The model's path, for `get_vocabulary("sentencepiece", path)`.
  """
  import sentencepiece as spm  # pylint: disable=g-import-not-at-top

  if isinstance(tsv_paths, (str, os.PathLike)):
    tsv_paths = [tsv_paths]
  tsv_paths = [os.fspath(p) for p in tsv_paths]
  # seqio assumes pad=0, eos=1, unk=2 and no bos; identity normalization
  # keeps decoded programs byte-identical to the data.
  # SentencePiece skips a sentence longer than max_sentence_length bytes
  # (default 4,192) without a word: a long line's words would be left out
  # of the vocabulary (unknown at training and decoding). Longest field:
  # the bound, set only where needed (the option is written into the model,
  # and experiments key their cells by its bytes).
  longest = max((len(f.encode("utf-8")) for f in _tsv_fields(tsv_paths)),
                default=0)
  options = dict(model_type="unigram", character_coverage=1.0,
                 hard_vocab_limit=False, pad_id=0, eos_id=1, unk_id=2,
                 bos_id=-1, normalization_rule_name="identity",
                 minloglevel=2)
  if longest > _SPM_MAX_SENTENCE_LENGTH:
    options["max_sentence_length"] = longest
  options.update(trainer_options)
  model = io.BytesIO()
  spm.SentencePieceTrainer.train(sentence_iterator=_tsv_fields(tsv_paths),
                                 model_writer=model, vocab_size=vocab_size,
                                 **options)
  path = os.fspath(model_prefix) + ".model"
  with tf.io.gfile.GFile(path, "wb") as f:
    f.write(model.getvalue())
  return path


def train_vocabulary(tsv_paths: Sequence[str], out: str,
                     vocab_size: int = 1000,
                     model_type: str = "unigram") -> Dict[str, Any]:
  """`csl-jax vocab`: a SentencePiece model trained on both columns of
  `tsv_paths`, written as OUT.model, and its record as OUT.json.

  Each file is read as every command reads a TSV first, so a bad one is an
  InputError naming it before training. Returns the record (model path,
  vocab_size, model_type, tsv)."""
  from csl_jax.data import tsv  # pylint: disable=g-import-not-at-top
  if vocab_size < 1:
    raise InputError(f"--vocab_size must be >= 1, got {vocab_size}")
  for path in tsv_paths:  # missing, a directory, a malformed line, bad
    tsv.read_tsv(path)  # UTF-8 or an empty file: named, before training
  if out.endswith(("/", os.sep)):  # a prefix, not a directory
    raise InputError("--out is a prefix (writes PREFIX.model and "
                     "PREFIX.json), not a directory", out)
  parent = os.path.dirname(os.path.abspath(out))
  try:
    os.makedirs(parent, exist_ok=True)
  except OSError as e:  # e.g. a file where a directory of the prefix goes
    raise InputError(f"cannot create the directory of --out "
                     f"({e.strerror.lower()})", parent) from None
  try:
    path = train_sentencepiece(tsv_paths, out, vocab_size,
                               model_type=model_type)
  except RuntimeError as e:  # SentencePiece's own message is clear.
    raise InputError(f"sentencepiece: {e}") from None
  except tf.errors.OpError as e:  # the model file's write
    raise InputError(f"cannot write the model ({e.message})",
                     out + ".model") from None
  vocabulary = get_vocabulary(SENTENCEPIECE, path)
  record = {"model": path, "vocab_size": vocabulary.vocab_size,
            "model_type": model_type, "tsv": tsv_paths}
  atomic_write_json(out + ".json", record)
  logging.info("wrote %s (%d pieces)", path, vocabulary.vocab_size)
  return record


def train_word_vocabulary(tsv_paths: Iterable[str], model_prefix: str,
                          model_type: str = "word") -> Tuple[str, int]:
  """A SentencePiece model with one piece per whitespace token of the files
  (both columns; + pad, EOS, unk; `vocab_size` is a soft limit), for
  `get_vocabulary("sentencepiece", path)`. Returns its path and the number
  of distinct tokens."""
  from csl_jax.data import tsv  # pylint: disable=g-import-not-at-top
  tsv_paths = list(tsv_paths)
  tokens = set()
  for path in tsv_paths:
    for ex in tsv.read_tsv(path):
      tokens.update(ex.input.split())
      tokens.update(ex.output.split())
  path = train_sentencepiece(tsv_paths, model_prefix, len(tokens) + 8,
                             model_type=model_type,
                             max_sentencepiece_length=64)
  return path, len(tokens)
