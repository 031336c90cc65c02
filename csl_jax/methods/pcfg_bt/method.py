"""PCFG sampling of programs + backtranslation (Yao & Koller) as a method.

Stages under `RUN/pcfg_bt/`:
  programs/        the PCFG over the output CFG (`distribution`: train =
                   fractional counts over the parses of the training
                   outputs, uniform = 1/k, test = counts on the run's test
                   outputs, an oracle) and up to `num_samples` distinct
                   sampled programs: `programs.txt`, `pcfg.json`, and
                   the PCFG's probabilities, `pcfg_probs.json`.
  reverse_model/   the Flax seq2seq trained output -> input on the run's
                   training pairs (SeqIO task NAME_reversed).
  reverse_eval/    with an eval part: the reverse model's exact match and
                   BLEU there (Y&K's Table 8), `scores.json`; in
                   RUN/pcfg_bt_reverse_eval/, beside the reverse model
                   and, as it, done once for the variants.
  backtranslate/   each program decoded into an utterance (beam
                   `beam_size`): `candidates.tsv` (utterance<TAB>program).
  statistics/      with an eval part: Y&K's Table 5 of the training set
                   without and with the pairs, and the eval outputs'
                   perplexity under the PCFG (`statistics.json`).
With `reverse_model = "t5x"` the reverse model is T5 (Y&K's), trained and
decoded by T5X on the SeqIO tasks NAME_reversed and NAME_<m>_programs
(`gin/t5x/*_reversed.gin`, `gin/t5x/backtranslate.gin`): there is no
reverse_model stage, and `backtranslate` reads t5x.infer's predictions
(`t5x_predictions`), waiting (`errors.Pending`, saying what to run) until
they exist.
Importing this module is cheap; TF/JAX/Numba load when a stage runs.
"""

import contextlib
import dataclasses
import hashlib
import json
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from absl import logging
import gin

from csl_jax import configs
from csl_jax.errors import InputError
from csl_jax.methods import base
from csl_jax.seq2seq.config import decode_key

DISTRIBUTIONS = ("train", "uniform", "test")
REVERSE_VOCABULARIES = ("tasks", "word")
REVERSE_MODELS = ("flax", "t5x")
T5X_INFER_DIR = "t5x_infer"  # RUN/<m>/<this>: t5x.infer's output, default
WORD_SPM_PREFIX = "spm"  # the word model: <reverse model stage>/spm.model
WORD_SPM = WORD_SPM_PREFIX + ".model"
REVERSE_MODEL_DIR = "pcfg_bt_reverse_model"  # RUN/<this>, shared by variants
REVERSE_EVAL_DIR = "pcfg_bt_reverse_eval"  # likewise its scores
# The programs stage's PCFG, which the statistics stage reads (rather than
# estimate it again: inside-outside over COGS gen's outputs for P_test).
# P_uniform's and P_test's statistics estimate P_train too (its support is
# the set every row's perplexity is compared over: ~10 s on COGS).
PROBS_FILE = "pcfg_probs.json"
# In the programs stage's key: 2 since it writes PROBS_FILE (a stage made
# before has none; its programs come out the same bytes).
PROGRAMS_VERSION = 2


@gin.configurable(module="pcfg_bt")
@dataclasses.dataclass(frozen=True)
class PCFGBTConfig:
  """Settings (Y&K App. B.2: 10k SCAN, 30k GeoQuery, 21k COGS programs).

  Attributes:
    grammar: the output CFG (`tasks/<dataset>/<file>.cfg` or a path).
    distribution: train, uniform or test (the test one is an oracle upper
      bound: it reads the run's test outputs).
    num_samples: distinct programs to sample at most.
    max_consecutive_duplicates: stop after this many draws in a row gave
      nothing new (all of a finite language is then likely drawn).
    max_depth: derivations deeper than this are rejected (a uniform PCFG
      can be inconsistent: expected size infinite); None: no bound.
    seed: the sampling seed.
    known_tokens_only: uniform only: 1/k over the productions whose
      terminals all occur in the training outputs (and whose categories
      still derive a program), so no program holds a token the reverse
      model never saw (`tasks/geoquery/funql.cfg` allows m0 ... m9, the
      GeoQuery data has m0 and m1). False: over every production (Y&K's
      P_uniform). train and test give unseen productions 0 either way.
    uniform_factored: uniform only: uniform in Y&K's factorization of
      each category into `X -> XNonterm | XTerm` (half to the productions
      that may recurse, half to the others; `pcfg.uniform`), as their
      GeoQuery grammar has it; a grammar supercritical under plain 1/k
      weights (FunQL) is subcritical so (gin/pcfg_bt/geoquery.gin).
    beam_size: backtranslation beam (the paper: 4; 1 is greedy).
    decode_batch_size: programs decoded per batch.
    reverse_vocabulary: the reverse model's vocabulary: "tasks" (the tasks'
      vocabulary, `tasks.vocab.get_vocabulary`: bytes unless set), or
      "word" (a SentencePiece model with one piece per token of the run's
      training pairs, beside the reverse model: programs of hundreds of
      bytes are a few dozen words).
    reverse_max_input_len, reverse_max_target_len: the reverse model's
      lengths (program in, utterance out); 0: the `seq2seq.Seq2SeqConfig`
      binding's. An experiment binds Seq2SeqConfig for its forward model,
      whose lengths are the other way round.
    reverse_num_steps: the reverse model's training steps; 0: the
      `seq2seq.TrainConfig` binding's (an experiment's forward budget,
      which may leave the reverse model undertrained: BENCHMARKS "Issue 13
      → The reverse model's budget").
    reverse_seed: the reverse model's training seed (initialization and
      data order); None: the `seq2seq.TrainConfig` binding's. An experiment
      lists `PCFGBTConfig.reverse_seed` in `synthetic_seed_params` to train
      one reverse model per seed, so that the seeds' spread includes the
      reverse model's (BENCHMARKS "Issue 13 → One reverse model per seed").
    reverse_absolute_positions: whether the reverse model adds sinusoidal
      absolute positions; None: the `seq2seq.Seq2SeqConfig` binding's. A
      forward model writing long outputs wants them, a reverse model
      reading programs longer than any it trained on does not: it would
      meet positions it never saw (BENCHMARKS "Issue 13 → The reverse
      model's positions").
    reverse_num_buckets, reverse_max_distance: the reverse model's relative
      position buckets (T5's bias); 0: the `seq2seq.Seq2SeqConfig`
      binding's. Distances longer than any training program reads fall in
      buckets its training never reached unless these are small enough
      (BENCHMARKS "Issue 13 → The reverse model's buckets").
    reverse_model: "flax", the project's seq2seq (here, or in a bundle),
      the reverse_* and `seq2seq.*` settings above; or "t5x", T5 trained
      and decoded by T5X elsewhere (README "Backtranslation with T5X"; the
      reverse_* settings and beam_size are then T5X's gin's to set).
    t5x_predictions: with "t5x": t5x.infer's output for the task
      NAME_<m>_programs, a file, a glob or a directory (local); "": the
      directory RUN/<m>/t5x_infer.
  """
  grammar: str = ""
  distribution: str = "uniform"
  num_samples: int = 10_000
  max_consecutive_duplicates: int = 100_000
  max_depth: Optional[int] = 64
  seed: int = 0
  known_tokens_only: bool = False
  uniform_factored: bool = False
  beam_size: int = 4
  decode_batch_size: int = 64
  reverse_vocabulary: str = "tasks"
  reverse_max_input_len: int = 0
  reverse_max_target_len: int = 0
  reverse_num_steps: int = 0
  reverse_seed: Optional[int] = None
  reverse_absolute_positions: Optional[bool] = None
  reverse_num_buckets: int = 0
  reverse_max_distance: int = 0
  reverse_model: str = "flax"
  t5x_predictions: str = ""

  def __post_init__(self):
    configs.check_types(self)
    if self.reverse_num_steps < 0:
      raise InputError(f"pcfg_bt reverse_num_steps {self.reverse_num_steps}"
                       ": 0 (the TrainConfig's) or more")
    for name in ("num_samples", "max_consecutive_duplicates", "beam_size",
                 "decode_batch_size"):
      if getattr(self, name) < 1:
        raise InputError(f"pcfg_bt {name} must be >= 1, got "
                         f"{getattr(self, name)}")
    if self.max_depth is not None and self.max_depth < 1:
      raise InputError(f"pcfg_bt max_depth must be >= 1 or None, got "
                       f"{self.max_depth}")
    for name in ("reverse_max_input_len", "reverse_max_target_len",
                 "reverse_num_buckets", "reverse_max_distance"):
      if getattr(self, name) < 0:
        raise InputError(f"pcfg_bt {name} must be >= 0 (0: the "
                         f"Seq2SeqConfig's), got {getattr(self, name)}")
    for name in ("seed", "reverse_seed"):
      if (getattr(self, name) or 0) < 0:
        raise InputError(f"pcfg_bt {name} must be >= 0, got "
                         f"{getattr(self, name)}")
    if self.distribution not in DISTRIBUTIONS:
      raise InputError(f"pcfg_bt distribution {self.distribution!r}: one of "
                       f"{', '.join(DISTRIBUTIONS)}")
    if self.reverse_model not in REVERSE_MODELS:
      raise InputError(f"pcfg_bt reverse_model {self.reverse_model!r}: one "
                       f"of {', '.join(REVERSE_MODELS)}")
    if self.reverse_vocabulary not in REVERSE_VOCABULARIES:
      raise InputError(f"pcfg_bt reverse_vocabulary "
                       f"{self.reverse_vocabulary!r}: one of "
                       f"{', '.join(REVERSE_VOCABULARIES)}")


def _outputs(path: str) -> List[str]:
  from csl_jax.data.tsv import read_tsv  # pylint: disable=g-import-not-at-top
  return [y for _, y in read_tsv(path)]


def sample_programs(out_dir: str, grammar: str, train: str,
                    test: Optional[str], config: PCFGBTConfig
                    ) -> Dict[str, Any]:
  """The `programs` stage: estimate the PCFG, sample distinct programs."""
  # pylint: disable=g-import-not-at-top
  import numpy as np
  from csl_jax.files import atomic_write_json, atomic_write_text
  from csl_jax.pcfg import pcfg as pcfg_lib
  from csl_jax.qcfg.output_cfg import load_output_cfg
  # pylint: enable=g-import-not-at-top
  cfg = load_output_cfg(grammar)
  train_outputs = _outputs(train)
  pcfg, info = _estimate(cfg, grammar, train, train_outputs, test, config)
  try:
    programs, stats = pcfg_lib.sample_unique(
        pcfg, config.num_samples, seed=config.seed,
        max_consecutive_duplicates=config.max_consecutive_duplicates,
        max_depth=config.max_depth)
  except InputError as e:
    raise InputError(f"{grammar}: {e}") from None
  os.makedirs(out_dir, exist_ok=True)
  path = os.path.join(out_dir, "programs.txt")
  atomic_write_text(path, "".join(p + "\n" for p in programs))
  atomic_write_json(os.path.join(out_dir, PROBS_FILE),
                    {"name": pcfg.name, "probs": pcfg.probs.tolist()})
  seen = set(train_outputs)
  summary = {
      "distribution": config.distribution,
      "oracle": config.distribution == "test",
      "criticality": float(pcfg_lib.criticality(pcfg)),
      "num_programs": len(programs),
      "new_programs": sum(p not in seen for p in programs),
      "average_length": float(np.mean([len(p.split()) for p in programs])
                              if programs else 0.0),
      "estimate": info, "sampling": stats, "programs": path}
  atomic_write_json(os.path.join(out_dir, "pcfg.json"), summary)
  return summary


def _estimate(cfg, grammar: str, train: str, train_outputs: Sequence[str],
              test: Optional[str], config: PCFGBTConfig):
  """(the PCFG of `config.distribution` over `cfg`, its estimate's info)."""
  from csl_jax.pcfg import pcfg as pcfg_lib  # pylint: disable=g-import-not-at-top
  info: Dict[str, Any] = {}
  if config.distribution == "uniform":
    try:
      pcfg = pcfg_lib.uniform(
          cfg, {t for y in train_outputs for t in y.split()}
          if config.known_tokens_only else None,
          factored=config.uniform_factored)
    except InputError as e:
      raise InputError(f"{grammar}: {e} (known_tokens_only: the tokens of "
                       f"the outputs of {train})") from None
    info = {"productions_used": int((pcfg.probs > 0).sum()),
            "productions": len(cfg.productions)}
  else:
    source = train if config.distribution == "train" else test
    outputs = train_outputs if source == train else _outputs(source)
    try:
      pcfg, info = pcfg_lib.estimate(cfg, outputs, config.distribution)
    except InputError as e:
      raise InputError(f"{grammar}: {e} ({source})") from None
    if info["num_unparsed"]:
      logging.warning(
          "pcfg_bt: %d of %d outputs of %s do not parse with %s and are not "
          "counted, e.g. %r", info["num_unparsed"], len(outputs), source,
          grammar, info["unparsed"][0])
  return pcfg, info


def statistics(out_dir: str, grammar: str, train: str, evaluate: str,
               probs: str, candidates: str) -> Dict[str, Any]:
  """The `statistics` stage: Y&K's Table 5 (average length, test bigram
  and instance coverage, input and output side) of the training set with
  and without the backtranslated pairs against the `evaluate` part, and
  their Table 6 reading through the PCFG (the programs stage's, `probs`):
  the per-token perplexity of that part's outputs under it."""
  # pylint: disable=g-import-not-at-top
  import numpy as np
  from csl_jax.data import overlap
  from csl_jax.data.tsv import read_tsv
  from csl_jax.files import atomic_write_json, read_json
  from csl_jax.pcfg import pcfg as pcfg_lib
  from csl_jax.qcfg.output_cfg import load_output_cfg
  # pylint: enable=g-import-not-at-top
  original = read_tsv(train)
  added = read_tsv(candidates, allow_empty=True)
  target = read_tsv(evaluate)
  cfg = load_output_cfg(grammar)
  record = read_json(probs)
  pcfg = pcfg_lib.PCFG(cfg, np.asarray(record["probs"], np.float64),
                       record["name"])
  summary: Dict[str, Any] = {"part": os.path.basename(evaluate)[:-4],
                             "candidates_from": "backtranslate"}
  for side, i in (("input", 0), ("output", 1)):
    base_side = [e[i] for e in original]
    summary[side] = {
        "original": overlap.table5(base_side, [e[i] for e in target]),
        "augmented": overlap.table5(base_side + [e[i] for e in added],
                                    [e[i] for e in target])}
  summary["perplexity"] = _perplexities(pcfg, cfg, [y for _, y in target],
                                        [y for _, y in original],
                                        f"{grammar} on {train}")
  os.makedirs(out_dir, exist_ok=True)
  atomic_write_json(os.path.join(out_dir, "statistics.json"), summary)
  return summary


def _perplexities(pcfg, cfg, outputs: List[str], train_outputs: List[str],
                  where: str = "the training outputs") -> Dict[str, Any]:
  """The per-token perplexity of `outputs` under `pcfg`, three ways:
  `value` over all of them (None, i.e. infinite, when one has p = 0: as
  P_train gives every output with a rule unseen in training); `scored`
  over those this PCFG gives p > 0; `common` over those P_train (estimated
  from `train_outputs`) gives p > 0, the outputs every distribution
  scores, so the one set on which rows compare (`outputs` 0 and a
  warning naming `where` when no training output parses)."""
  # pylint: disable=g-import-not-at-top
  import math
  from csl_jax.pcfg import pcfg as pcfg_lib
  # pylint: enable=g-import-not-at-top
  scored = pcfg_lib.log_probs(pcfg, outputs)
  if pcfg.name == "train":
    by_train = scored
  else:  # once more, for P_uniform's and P_test's rows: not kept on disk
    try:
      train_pcfg, _ = pcfg_lib.estimate(cfg, train_outputs, "train")
      by_train = pcfg_lib.log_probs(train_pcfg, outputs)
    except InputError as e:  # P_uniform needs none of them to parse
      logging.warning("%s: %s: no P_train, so no perplexity over the "
                      "outputs it scores", where, e)
      by_train = {y: -math.inf for y in outputs}

  def over(ys):
    return {"value": pcfg_lib.perplexity(pcfg, ys, scored) if ys else None,
            "outputs": len(ys)}

  finite = [y for y in outputs if scored[y] > -math.inf]
  common = [y for y in finite if by_train[y] > -math.inf]
  return {"value": (over(outputs)["value"] if len(finite) == len(outputs)
                    else None),
          "zero_probability": len(outputs) - len(finite), "of": len(outputs),
          "scored": over(finite), "common": over(common)}


def _read_programs(path: str) -> List[str]:
  """The `programs` stage's programs.txt, one program a line."""
  with open(path, encoding="utf-8") as f:
    return [line.rstrip("\n") for line in f if line.strip()]


def _vocabulary(kind: str, model_dir: str):
  """The reverse model's vocabulary: kind "word", the word model beside
  `model_dir`; "tasks", the tasks'."""
  import tasks  # pylint: disable=g-import-not-at-top
  if kind == "word":
    return tasks.vocab.get_vocabulary(
        "sentencepiece", os.path.join(os.path.dirname(model_dir), WORD_SPM))
  return tasks.vocab.get_vocabulary()


def _vocabulary_key(kind: str) -> Dict[str, Any]:
  """What identifies the reverse model's vocabulary, for the stage keys:
  the reverse model and its decoding depend on it. A word model is made
  from the run's training pairs (an input of those stages already); the
  tasks' comes from arguments, gin or the environment."""
  # pylint: disable=g-import-not-at-top
  import tasks
  import tensorflow as tf
  # pylint: enable=g-import-not-at-top
  if kind == "word":
    return {"type": "word"}
  vocab = tasks.vocab.get_vocabulary()
  key = {"type": type(vocab).__name__, "vocab_size": vocab.vocab_size}
  path = getattr(vocab, "sentencepiece_model_file", None)
  if path:
    with tf.io.gfile.GFile(path, "rb") as f:
      key["sentencepiece_sha256"] = hashlib.sha256(f.read()).hexdigest()
  return key


@contextlib.contextmanager
def _registered(data_dir: str, splits, **kwargs):
  """The run's data as a SeqIO dataset (NAME, NAME_reversed, ...) for the
  duration of the block; yields the registered names."""
  import tasks  # pylint: disable=g-import-not-at-top
  digest = hashlib.sha256(os.path.abspath(data_dir).encode()).hexdigest()
  name = f"pcfg_bt_{digest[:12]}"
  try:
    yield tasks.register_dataset(name, data_dir, splits=splits, **kwargs)
  finally:
    tasks.unregister_dataset(name)


def train_reverse_model(out_dir: str, data_dir: str, model_config,
                        train_config, vocabulary: str = "tasks"
                        ) -> Dict[str, Any]:
  """The `reverse_model` stage: output -> input on the run's training pairs
  (NAME_reversed), with the tasks' vocabulary or (`vocabulary` "word") a
  word model of those pairs, `out_dir/WORD_SPM`."""
  # pylint: disable=g-import-not-at-top
  import tasks
  from csl_jax.seq2seq import train as train_lib
  # pylint: enable=g-import-not-at-top
  if vocabulary == "word":
    tasks.vocab.train_word_vocabulary(
        [os.path.join(data_dir, "train.tsv")],
        os.path.join(out_dir, WORD_SPM_PREFIX))
  model_dir = os.path.join(out_dir, "model")
  with _registered(data_dir, ("train",),
                   vocabulary=_vocabulary(vocabulary, model_dir)) as names:
    metrics = train_lib.train(model_dir, names.reversed, model_config,
                              train_config, desc="pcfg_bt reverse model")
  return {"model": model_dir, "steps": metrics["steps"],
          "first_loss": metrics.get("first_loss"),
          "final_loss": metrics.get("mean_last_loss")}


def score_reverse_model(out_dir: str, model_dir: str, data_dir: str,
                        eval_part: str, config: PCFGBTConfig
                        ) -> Dict[str, Any]:
  """The `reverse_eval` stage: the reverse model's exact match and BLEU on
  `eval_part` of the run (the backtranslation quality of Y&K Table 8),
  `scores.json`. A stage of its own, beside the reverse model: the
  variants that share the model share its scores."""
  # pylint: disable=g-import-not-at-top
  import tasks
  from csl_jax.files import atomic_write_json
  from csl_jax.seq2seq import decode
  from csl_jax.seq2seq import input_pipeline
  from csl_jax.seq2seq import train as train_lib
  # pylint: enable=g-import-not-at-top
  model, params = train_lib.load_params(model_dir)
  cfg = model.config
  vocabulary = _vocabulary(config.reverse_vocabulary, model_dir)
  with _registered(data_dir, (eval_part,), vocabulary=vocabulary,
                   metric_fns=(tasks.metrics.exact_match,
                               tasks.metrics.bleu)) as names:
    lengths = input_pipeline.lengths(cfg.max_input_len, cfg.max_target_len)
    examples = decode.split_examples(names.reversed, eval_part, lengths)
    logging.info("reverse_eval: scoring the reverse model on the %s part "
                 "(%d examples, beam %d; --gin.pcfg_bt.PCFGBT.eval_part=None "
                 "skips it)", eval_part, len(examples), config.beam_size)
    _, scores = decode.evaluate(
        model, params, names.reversed, eval_part, lengths,
        batch_size=config.decode_batch_size, beam_size=config.beam_size,
        examples=examples, progress=True)
  summary = {"part": eval_part, **scores}
  os.makedirs(out_dir, exist_ok=True)
  atomic_write_json(os.path.join(out_dir, "scores.json"), summary)
  return {"eval": summary}


def backtranslate(out_dir: str, programs_path: str, model_dir: str,
                  scores: Optional[str], config: PCFGBTConfig
                  ) -> Dict[str, Any]:
  """The `backtranslate` stage: utterance<TAB>program candidates; with
  `scores` (the reverse_eval stage's `scores.json`), the reverse model's
  exact match and BLEU in its summary too, for the report."""
  # pylint: disable=g-import-not-at-top
  from csl_jax.files import read_json
  from csl_jax.seq2seq import decode
  from csl_jax.seq2seq import train as train_lib
  # pylint: enable=g-import-not-at-top
  programs = _read_programs(programs_path)
  model, params = train_lib.load_params(model_dir)
  cfg = model.config
  vocabulary = _vocabulary(config.reverse_vocabulary, model_dir)
  utterances, _ = decode.translate(
      model, params, vocabulary, programs,
      cfg.max_input_len, cfg.max_target_len, config.decode_batch_size,
      config.beam_size, progress=True)
  cut, unknown = _program_checks(vocabulary, programs, cfg.max_input_len)
  summary = _write_candidates(out_dir, programs, utterances, cut,
                              config.beam_size)
  summary["num_programs_unknown_tokens"] = unknown
  if scores:
    summary["eval"] = read_json(scores)
  return summary


def _program_checks(vocabulary, programs: Sequence[str], max_input_len: int
                    ) -> Tuple[List[bool], int]:
  """(whether each program is longer than the reverse model reads, its ids
  and EOS over `max_input_len`: its utterance renders a prefix; how many
  hold a token the reverse vocabulary does not know, e.g. a grammar's
  constants the training pairs never use: their utterances guess), from
  one encoding of each program."""
  unk = getattr(vocabulary, "unk_id", None)
  cut, unknown = [], 0
  for p in programs:
    ids = list(vocabulary.encode(p))
    cut.append(len(ids) > max_input_len - 1)
    unknown += unk is not None and unk in ids
  return cut, unknown


def _write_candidates(out_dir: str, programs: Sequence[str],
                      utterances: Sequence[str], cut: Sequence[bool],
                      beam_size: int) -> Dict[str, Any]:
  """OUT/candidates.tsv (utterance<TAB>program; empty utterances and those
  of programs cut to the reverse model's input left out: they would pair
  a program with the utterance of its prefix) and the backtranslate
  stage's summary of it."""
  from csl_jax.data.tsv import write_tsv  # pylint: disable=g-import-not-at-top
  empty = sum(not u.strip() for u in utterances)
  pairs = [(u, p) for u, p, c in zip(utterances, programs, cut, strict=True)
           if u.strip() and not c]
  os.makedirs(out_dir, exist_ok=True)
  candidates = os.path.join(out_dir, "candidates.tsv")
  write_tsv(candidates, pairs)
  return {"candidates": candidates, "num_programs": len(programs),
          "num_candidates": len(pairs),
          "num_empty_utterances": empty,
          "num_programs_cut": sum(cut), "beam_size": beam_size,
          "preview": [f"{u}\t{p}" for u, p in pairs[:5]]}


def _sha256_of(paths) -> str:
  h = hashlib.sha256()
  for path in paths:
    with open(path, "rb") as f:
      h.update(hashlib.sha256(f.read()).digest())
  return h.hexdigest()


def backtranslate_bundled(out_dir: str, programs_path: str, data_dir: str,
                          eval_part: Optional[str], config: PCFGBTConfig,
                          model_config, train_config, bundle: str,
                          settings: Mapping[str, Any]) -> Dict[str, Any]:
  """The `backtranslate` stage where the reverse model trains elsewhere
  (`experiment.bundle`, a machine with JAX and no TensorFlow): the reverse
  training pairs and the programs are exported as one bundle cell whose
  decoded programs are the utterances; raises `bundle.Pending` until
  `csl-jax run-bundle` has run it, then writes what `backtranslate` writes
  (the eval part scored from the cell's predictions)."""
  # pylint: disable=g-import-not-at-top
  import tasks
  from csl_jax.seq2seq import arrays
  from csl_jax.seq2seq import bundle as bundle_lib
  from csl_jax.seq2seq import decode
  from csl_jax.seq2seq import input_pipeline
  from csl_jax.seq2seq import train as train_lib
  # pylint: enable=g-import-not-at-top
  os.makedirs(out_dir, exist_ok=True)
  train_tsv = os.path.join(data_dir, "train.tsv")
  if config.reverse_vocabulary == "word":
    tasks.vocab.train_word_vocabulary(
        [train_tsv], os.path.join(out_dir, WORD_SPM_PREFIX))
  vocabulary = _vocabulary(config.reverse_vocabulary,
                           os.path.join(out_dir, "model"))
  programs = _read_programs(programs_path)
  inputs = [os.path.join(data_dir, f"{p}.tsv")
            for p in ("train",) + ((eval_part,) if eval_part else ())]
  key = hashlib.sha256(json.dumps(
      {"settings": settings, "inputs": _sha256_of([programs_path] + inputs)},
      sort_keys=True).encode()).hexdigest()
  # One cell per run and variant (this stage's directory): a changed
  # setting re-exports it in place instead of leaving a stale one behind.
  cell = "pcfg_bt/" + hashlib.sha256(
      os.path.abspath(out_dir).encode()).hexdigest()[:16]
  parts = (eval_part,) if eval_part else ()
  with _registered(data_dir, ("train",) + parts, vocabulary=vocabulary,
                   metric_fns=(tasks.metrics.exact_match,
                               tasks.metrics.bleu)) as names:
    done = bundle_lib.outputs(bundle, cell, key)
    sized = train_lib.sized_for(model_config, names.reversed)
    if done is None:
      width = sized.max_input_len
      rows = []
      for text in programs:
        ids = list(vocabulary.encode(text))
        rows.append(ids[:width - 1] + [decode.EOS_ID])
      program_arrays = {"inputs": arrays.Ragged.from_rows(rows),
                        "targets": arrays.Ragged.from_rows(
                            [[decode.EOS_ID]] * len(rows))}
      bundle_lib.export_cell(
          bundle, cell, key, names.reversed, names.reversed, parts,
          model_config, train_config, config.beam_size,
          config.decode_batch_size, extra_parts={"programs": program_arrays},
          texts=tasks.registry.split_texts)
      raise bundle_lib.Pending(cell)
    scores = None
    if eval_part:
      examples = decode.split_examples(
          names.reversed, eval_part,
          input_pipeline.lengths(sized.max_input_len, sized.max_target_len))
      _, scores = decode.score_predictions(
          names.reversed, examples, done["parts"][eval_part]["ids"])
  decoded = done["parts"]["programs"]["ids"]
  if len(decoded) != len(programs):  # else candidates dropped, unsaid
    raise InputError(
        f"{len(decoded)} decoded programs for the {len(programs)} programs "
        f"of {programs_path}: the cell's outputs are not of these programs "
        f"(remove {bundle_lib.OUTPUTS_FILE} beside it and run `csl-jax "
        f"run-bundle` again)",
        os.path.join(bundle, bundle_lib.CELLS_DIR, cell,
                     bundle_lib.PREDICTIONS_FILE))
  utterances = [vocabulary.decode(ids) for ids in decoded]
  cut, unknown = _program_checks(vocabulary, programs, sized.max_input_len)
  summary = _write_candidates(out_dir, programs, utterances, cut,
                              config.beam_size)
  summary["num_programs_unknown_tokens"] = unknown
  summary.update({
      "bundle_cell": cell,
      # What the reverse_model stage reports where it runs here.
      "reverse_model": {
          "steps": done["train"].get("steps"),
          "first_loss": done["train"].get("first_loss"),
          "final_loss": done["train"].get("mean_last_loss")}})
  if scores is not None:
    summary["eval"] = {"part": eval_part, **scores}
  return summary


def _reverse_gin(data_dir: str) -> str:
  """The T5X config that fine-tunes the run's dataset's reverse model
  (`gin/t5x/<dataset>_reversed.gin`; the dataset from the run's data
  stage), or what to call one for a dataset without it."""
  from csl_jax import gin_defaults  # pylint: disable=g-import-not-at-top
  try:
    with open(os.path.join(data_dir, "summary.json"), encoding="utf-8") as f:
      dataset = json.load(f).get("dataset")
  except (OSError, ValueError):
    dataset = None
  path = f"gin/t5x/{dataset}_reversed.gin"
  if dataset and os.path.isfile(os.path.join(gin_defaults.REPO_ROOT, path)):
    return path
  return ("gin/t5x/<dataset>_reversed.gin (write one for your data as "
          "gin/t5x/scan_reversed.gin is written)")


def backtranslate_t5x(out_dir: str, programs_path: str,
                      prediction_paths: Sequence[str], where: str,
                      workdir: str, data_dir: str) -> Dict[str, Any]:
  """The `backtranslate` stage where T5X is the reverse model: the
  candidates from t5x.infer's predictions for the programs (every program
  must have one, and every prediction a program); raises `Pending`, saying
  what to run, while there are none."""
  # pylint: disable=g-import-not-at-top
  import tasks
  from csl_jax.errors import Pending
  from csl_jax.methods.pcfg_bt import t5x_infer
  # pylint: enable=g-import-not-at-top
  programs = _read_programs(programs_path)
  if not prediction_paths:
    run_dir = os.path.dirname(os.path.abspath(workdir))
    method = os.path.basename(os.path.abspath(workdir))
    name = tasks.registry.task_name(run_dir)
    programs_task = tasks.registry.programs_task_name(run_dir, method)
    raise Pending(os.path.join(workdir, "programs"), how=(
        f"{method}: {len(programs):,} programs wait for a T5X reverse model "
        f"(pcfg_bt reverse_model = 't5x'). With $CSL_JAX_DATA naming {run_dir}"
        f" (or the directory above it), T5X reads the training pairs "
        f"reversed as the task {name}{tasks.registry.REVERSED_SUFFIX} and "
        f"the programs as {programs_task}. From the csl_jax repository, "
        f"REVERSE_DIR the reverse model's directory (yours to name):\n"
        f"  python -m t5x.train --gin_file={_reverse_gin(data_dir)} "
        f"--gin.MIXTURE_OR_TASK_NAME=\\\"{name}"
        f"{tasks.registry.REVERSED_SUFFIX}\\\" "
        f"--gin.MODEL_DIR=\\\"REVERSE_DIR\\\"\n"
        f"  python -m t5x.infer --gin_file=gin/t5x/model_t5_base.gin "
        f"--gin_file=gin/t5x/backtranslate.gin "
        f"--gin.MIXTURE_OR_TASK_NAME=\\\"{programs_task}\\\" "
        f"--gin.CHECKPOINT_PATH=\\\"REVERSE_DIR/checkpoint_1009900\\\" "
        f"--gin.INFER_OUTPUT_DIR=\\\"{where}\\\"\n"
        f"then run this command again: it reads the predictions from "
        f"{where} (README, \"Backtranslation with T5X\")."))
  predictions = t5x_infer.read_predictions(prediction_paths)
  utterances = t5x_infer.utterances_for(programs, predictions, where)
  summary = _write_candidates(out_dir, programs, utterances,
                              [False] * len(programs), None)
  summary["reverse_model"] = {"t5x_predictions": list(prediction_paths)}
  return summary


@gin.configurable(module="pcfg_bt")
class PCFGBT:
  """The pcfg_bt method.

  Attributes:
    config: sampling and decoding settings.
    model_config, train_config: the reverse model's (default: the
      `seq2seq.Seq2SeqConfig()` / `seq2seq.TrainConfig()` gin bindings).
    eval_part: the run's part the `test` distribution counts on and the
      reverse model is scored on (the report's backtranslation quality);
      None: neither.
    bundle: a bundle directory (`experiment.bundle` binds it): the reverse
      model trains and decodes the programs there (`csl-jax run-bundle`),
      not here.
  """
  name = "pcfg_bt"
  # Y&K §4: "we directly concatenate the synthesized data with the
  # original data set" (COGS, SCAN): an experiment's row trains on the
  # union, not a 1:1 mixture (`experiment.mixing` overrides it).
  mixing = "union"
  # What experiment seeds may bind: the programs, and the reverse model.
  seed_params = ("PCFGBTConfig.seed", "PCFGBTConfig.reverse_seed")

  def __init__(self, config: Optional[PCFGBTConfig] = None,
               model_config=None, train_config=None,
               eval_part: Optional[str] = "test",
               bundle: Optional[str] = None):
    self.config = config if config is not None else PCFGBTConfig()
    self.model_config = model_config
    self.train_config = train_config
    self.eval_part = eval_part
    self.bundle = bundle

  def _seq2seq_configs(self):
    from csl_jax.seq2seq import config  # pylint: disable=g-import-not-at-top
    model = self.model_config or config.Seq2SeqConfig()
    changes = {k: v for k, v in (
        ("max_input_len", self.config.reverse_max_input_len),
        ("max_target_len", self.config.reverse_max_target_len),
        ("num_buckets", self.config.reverse_num_buckets),
        ("max_distance", self.config.reverse_max_distance)) if v}
    train = self.train_config or config.TrainConfig()
    if self.config.reverse_num_steps:
      train = dataclasses.replace(train,
                                  num_steps=self.config.reverse_num_steps)
    if self.config.reverse_seed is not None:
      train = dataclasses.replace(train, seed=self.config.reverse_seed)
    if self.config.reverse_absolute_positions is not None:
      changes["absolute_positions"] = self.config.reverse_absolute_positions
    return dataclasses.replace(model, **changes), train

  def stages(self, data: base.RunData, workdir: str) -> List[base.Stage]:
    # pylint: disable=g-import-not-at-top
    from csl_jax import assets
    from csl_jax.methods.pcfg_bt import t5x_infer
    # pylint: enable=g-import-not-at-top
    if not self.config.grammar:
      raise InputError("pcfg_bt needs a CFG of the programs: bind "
                       "pcfg_bt.PCFGBTConfig.grammar to your .cfg (for "
                       "the built-in datasets, gin/pcfg_bt/<dataset>.gin "
                       "binds the project's, e.g. tasks/scan/actions.cfg)")
    grammar = assets.resolve(self.config.grammar)
    train = data.train
    test = None
    if self.config.distribution == "test":
      test = data.splits.get(self.eval_part)
      if not test:
        raise InputError(f"pcfg_bt distribution 'test' needs the run's "
                         f"{self.eval_part!r} part")
    evaluate = data.splits.get(self.eval_part) if self.eval_part else None
    sampling = configs.to_json(self.config)
    sampling["version"] = PROGRAMS_VERSION
    # The programs depend on none of the decoding or reverse_* settings.
    for key in [k for k in sampling if k.startswith("reverse_")] + [
        "beam_size", "decode_batch_size", "grammar", "t5x_predictions"]:
      sampling.pop(key)
    for option in ("known_tokens_only", "uniform_factored"):
      if not sampling[option]:
        sampling.pop(option)  # the key it had before the option
    programs_dir = os.path.join(workdir, "programs")
    # One reverse model for every pcfg_bt variant of the run (P_train's and
    # P_uniform's are the same model): RUN/pcfg_bt_reverse_model.
    model_dir = os.path.join(os.path.dirname(os.path.abspath(workdir)),
                             REVERSE_MODEL_DIR)
    model_config, train_config = self._seq2seq_configs()
    kind = self.config.reverse_vocabulary
    vocabulary = _vocabulary_key(kind)
    programs = base.Stage("programs",
                          [grammar, train] + ([test] if test else []),
                          sampling,
                          lambda d: sample_programs(d, grammar, train, test,
                                                    self.config))
    # Y&K's Tables 5 and 6 against the eval part, after the candidates.
    described = []
    if evaluate:
      pairs = os.path.join(workdir, "backtranslate", "candidates.tsv")
      probs = os.path.join(programs_dir, PROBS_FILE)
      described = [base.Stage(
          "statistics", [grammar, train, evaluate, probs, pairs],
          {"eval_part": self.eval_part, "perplexity": 2},  # 2: 3 ways
          lambda d: statistics(d, grammar, train, evaluate, probs, pairs))]
    if self.config.reverse_model == "t5x":
      # Absolute: the T5X commands it goes into run from the repository.
      where = os.path.abspath(self.config.t5x_predictions or
                              os.path.join(workdir, T5X_INFER_DIR))
      files = t5x_infer.prediction_files(where)
      programs_txt = os.path.join(programs_dir, "programs.txt")
      return [programs, base.Stage(
          "backtranslate", [programs_txt] + files, {"reverse_model": "t5x"},
          lambda d: backtranslate_t5x(d, programs_txt, files, where,
                                      workdir, data.directory))] + described
    if self.bundle:
      settings = {"model": configs.to_json(model_config),
                  "train": configs.to_json(train_config),
                  "vocabulary": vocabulary,
                  **decode_key(self.config.beam_size),
                  "eval_part": self.eval_part if evaluate else None,
                  "trainer": "bundle"}
      return [programs, base.Stage(
          "backtranslate",
          [os.path.join(programs_dir, "programs.txt"), train] + (
              [evaluate] if evaluate else []), settings,
          lambda d: backtranslate_bundled(
              d, os.path.join(programs_dir, "programs.txt"), data.directory,
              self.eval_part if evaluate else None, self.config,
              model_config, train_config, self.bundle, settings))] + described
    model_files = [os.path.join(model_dir, "model", "config.json")] + (
        [os.path.join(model_dir, WORD_SPM)] if kind == "word" else [])
    model_key = {**decode_key(self.config.beam_size),
                 "vocabulary": vocabulary,
                 "model_steps": train_config.num_steps}
    scored = []
    if evaluate:
      eval_dir = os.path.join(os.path.dirname(model_dir), REVERSE_EVAL_DIR)
      scored = [base.Stage(
          "reverse_eval", model_files + [evaluate],
          {**model_key, "eval_part": self.eval_part},
          lambda d: score_reverse_model(
              d, os.path.join(model_dir, "model"), data.directory,
              self.eval_part, self.config),
          directory=eval_dir)]
    scores = os.path.join(eval_dir, "scores.json") if evaluate else None
    return [
        programs,
        base.Stage("reverse_model", [train],
                   {"model": configs.to_json(model_config),
                    "train": configs.to_json(train_config),
                    "vocabulary": vocabulary},
                   lambda d: train_reverse_model(d, data.directory,
                                                 model_config, train_config,
                                                 kind),
                   directory=model_dir),
        *scored,
        base.Stage("backtranslate",
                   [os.path.join(programs_dir, "programs.txt")]
                   + model_files + ([scores] if scores else []),
                   model_key,
                   lambda d: backtranslate(
                       d, os.path.join(programs_dir, "programs.txt"),
                       os.path.join(model_dir, "model"), scores,
                       self.config)),
    ] + described

  def report_rows(self, summaries: Mapping[str, dict]
                  ) -> List[Tuple[str, str]]:
    p, b = summaries["programs"], summaries["backtranslate"]
    m = summaries.get("reverse_model") or b["reverse_model"]  # or bundled
    label = p["distribution"] + (" (oracle)" if p["oracle"] else "")
    rows = [
        ("PCFG distribution / criticality",
         f'{label} / {p["criticality"]:.3f}'),
    ]
    unparsed = p.get("estimate", {}).get("num_unparsed")
    if unparsed:
      rows.append((f'{p["distribution"]} outputs the grammar does not parse '
                   f'(not counted)',
                   f'{unparsed:,} of {p["estimate"]["num_outputs"]:,}, e.g. '
                   f'{p["estimate"]["unparsed"][0]}'))
    used = p.get("estimate", {}).get("productions_used")
    if used is not None and used < p["estimate"]["productions"]:
      rows.append(("PCFG productions over the training outputs' tokens",
                   f'{used} of {p["estimate"]["productions"]}'))
    rows += [
        ("PCFG programs sampled (new to training) / avg length",
         f'{p["num_programs"]:,} ({p["new_programs"]:,}) / '
         f'{p["average_length"]:.2f}'),
        ("PCFG sampling stopped by / rejected over depth",
         f'{_STOPPED_BY.get(p["sampling"].get("stopped_by"), "—")} / '
         f'{p["sampling"].get("rejected", 0):,}'),
    ]
    if "t5x_predictions" in m:
      rows.append(("Reverse model", "T5X (t5x.infer's " + ", ".join(
          os.path.basename(f) for f in m["t5x_predictions"]) + ")"))
    else:
      rows.append(("Reverse model steps / loss",
                   f'{m["steps"]:,} / {m["first_loss"] or 0:.3f} -> '
                   f'{m["final_loss"] or 0:.3f}'))
    if b.get("eval"):
      rows.append((f'Backtranslation exact match / BLEU on '
                   f'{b["eval"]["part"]} (beam {b["beam_size"]})',
                   f'{b["eval"]["exact_match"]:.1f}% / '
                   f'{b["eval"]["bleu"]:.1f} of '
                   f'{b["eval"]["num_examples"]:,}'))
    rows += [
        ("Backtranslated pairs (left out: empty, programs cut to the "
         "reverse model's input)",
         f'{b["num_candidates"]:,} ({b["num_empty_utterances"]:,}, '
         f'{b["num_programs_cut"]:,})'),
    ]
    if "num_programs_unknown_tokens" in b:  # not known of T5X's
      rows.append(("Programs with tokens the reverse model does not know",
                   f'{b["num_programs_unknown_tokens"]:,}'))
    st = summaries.get("statistics")
    if st:
      for side in ("input", "output"):
        o, a = st[side]["original"], st[side]["augmented"]
        rows.append((
            f'Table 5, {side}s: average length / test bigram / instance '
            f'coverage of {st["part"]} (original -> with the pairs)',
            f'{o["average_length"]:.2f} -> {a["average_length"]:.2f} / '
            f'{100 * o["bigram_coverage"]:.1f} -> '
            f'{100 * a["bigram_coverage"]:.1f}% / '
            f'{100 * o["instance_coverage"]:.1f} -> '
            f'{100 * a["instance_coverage"]:.1f}%'))
      px = st["perplexity"]

      def shown(value, outputs=1):  # None: infinite; no outputs: none
        return "—" if not outputs else "∞" if value is None else \
            f"{value:.3f}"
      rows.append((
          f'Per-token perplexity of the {st["part"]} outputs under the PCFG '
          f'(Table 6\'s question asked of the PCFG, not the parser): all / '
          f'those it gives p > 0 / those P_train gives p > 0 (the outputs '
          f'every distribution scores)',
          f'{shown(px["value"], px["of"])} ({px["zero_probability"]:,} of '
          f'{px["of"]:,} with p = 0) / '
          f'{shown(**px["scored"])} ({px["scored"]["outputs"]:,}) / '
          f'{shown(**px["common"])} ({px["common"]["outputs"]:,})'))
    # utterance ▷ program, as GECA's preview (a tab would split the cell).
    rows += [("Backtranslation preview", x.replace("\t", " ▷ "))
             for x in b.get("preview", [])[:3]]
    return rows


# The report's words for `pcfg.sample_unique`'s `stopped_by`.
_STOPPED_BY = {"num": "the number asked",
               "max_attempts": "the attempts allowed",
               "duplicates": "a run of duplicates",
               "rejections": "a run of draws over the depth bound"}

base.add(PCFGBT.name, PCFGBT)
# pcfg_bt_train, pcfg_bt_uniform, pcfg_bt_test: one experiment compares
# P_train, P_uniform and P_test rows (Y&K Tables 1-4).
base.add_variants(PCFGBT, "distribution", DISTRIBUTIONS)
