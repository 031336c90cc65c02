"""Greedy and beam-search decoding, and exact-match evaluation.

By default each step runs the decoder on one position over a key/value cache
(`models.Transformer.decode_step`); with `cache=False` each step recomputes
the decoder over the whole fixed-length prefix (causal masking makes the
not-yet-written tail harmless): the same outputs, kept as the plain
reference and for the speed comparison (BENCHMARKS.md, issue 13).
"""

import functools
import os
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import jax
import jax.numpy as jnp
import numpy as np

from csl_jax import progress as progress_lib
from csl_jax.errors import InputError
from csl_jax.files import atomic_write_text
from csl_jax.seq2seq import input_pipeline
from csl_jax.seq2seq import models

EOS_ID = 1


def _shift_right(tokens):
  return jnp.pad(tokens, ((0, 0), (1, 0)))[:, :-1]  # BOS is id 0.


def _step_log_probs(model, params, encoded, inputs, outputs, i):
  logits = model.apply({"params": params}, encoded, inputs,
                       _shift_right(outputs), method=models.Transformer.decode)
  return jax.nn.log_softmax(logits[:, i].astype(jnp.float32))


def _cached_log_probs(model, params, encoded, inputs, cache, tokens, i,
                      max_len):
  """log p(next | cached prefix, tokens [batch] at position i) and the
  updated cache; `cache` None at position 0 (it is created there)."""
  variables = {"params": params}
  if cache is not None:
    variables["cache"] = cache
  logits, mutated = model.apply(
      variables, encoded, inputs, tokens[:, None], i, max_len,
      method=models.Transformer.decode_step, mutable=["cache"])
  return (jax.nn.log_softmax(logits[:, 0].astype(jnp.float32)),
          mutated["cache"])


@functools.partial(jax.jit, static_argnums=(0, 3))
def greedy_decode_cached(model, params, inputs, max_len: int):
  """`greedy_decode` over the key/value cache."""
  encoded = model.apply({"params": params}, inputs,
                        method=models.Transformer.encode)
  batch = inputs.shape[0]
  log_p, cache = _cached_log_probs(model, params, encoded, inputs, None,
                                   jnp.zeros((batch,), jnp.int32), 0, max_len)
  token = jnp.argmax(log_p, -1).astype(jnp.int32)
  outputs = jnp.zeros((batch, max_len), jnp.int32).at[:, 0].set(token)

  def cond(state):
    i, _, done, _ = state
    return (i < max_len) & ~jnp.all(done)

  def body(state):
    i, outputs, done, cache = state
    log_p, cache = _cached_log_probs(model, params, encoded, inputs, cache,
                                     outputs[:, i - 1], i, max_len)
    token = jnp.where(done, 0, jnp.argmax(log_p, -1)).astype(jnp.int32)
    return (i + 1, outputs.at[:, i].set(token), done | (token == EOS_ID),
            cache)

  return jax.lax.while_loop(cond, body,
                            (1, outputs, token == EOS_ID, cache))[1]


@functools.partial(jax.jit, static_argnums=(0, 3))
def greedy_decode(model, params, inputs, max_len: int):
  """[batch, max_len] argmax tokens; after EOS, padding (0). No cache."""
  encoded = model.apply({"params": params}, inputs,
                        method=models.Transformer.encode)
  batch = inputs.shape[0]

  def cond(state):
    i, _, done = state
    return (i < max_len) & ~jnp.all(done)

  def body(state):
    i, outputs, done = state
    log_p = _step_log_probs(model, params, encoded, inputs, outputs, i)
    token = jnp.where(done, 0, jnp.argmax(log_p, -1)).astype(jnp.int32)
    return i + 1, outputs.at[:, i].set(token), done | (token == EOS_ID)

  state = (0, jnp.zeros((batch, max_len), jnp.int32),
           jnp.zeros((batch,), bool))
  return jax.lax.while_loop(cond, body, state)[1]


def beam_candidates(scores, log_p, done):
  """Scores of every (beam, token) extension: [batch, beams * vocab].

  A finished beam extends only with padding, at no cost, so it competes
  with the live beams under its final score.
  """
  vocab = log_p.shape[-1]
  frozen = jnp.where(jnp.arange(vocab) == 0, 0.0, models.NEG_INF)
  log_p = jnp.where(done[..., None], frozen, log_p)
  return (scores[..., None] + log_p).reshape(scores.shape[0], -1)


def _advance_beams(i, log_p, outputs, scores, done):
  """Keeps the k best extensions at position i; returns the new state and
  which old beam each new one extends ([batch, k])."""
  batch, k = scores.shape
  cand = beam_candidates(scores, log_p.reshape(batch, k, -1), done)
  scores, index = jax.lax.top_k(cand, k)
  beam, token = index // log_p.shape[-1], index % log_p.shape[-1]
  outputs = jnp.take_along_axis(outputs, beam[..., None], 1)
  done = jnp.take_along_axis(done, beam, 1)
  token = jnp.where(done, 0, token)
  return (outputs.at[:, :, i].set(token), scores,
          done | (token == EOS_ID)), beam


def _best(outputs, scores, done):
  """Each row's best finished beam, else its best beam: a beam cut at
  max_len without EOS scores higher than one that ended (no length
  penalty: every token lowers the score), but is no output."""
  # top_k sorts best first: the first finished beam is the best finished.
  pick = jnp.where(done.any(1), jnp.argmax(done, 1), 0)
  rows = jnp.arange(outputs.shape[0])
  return outputs[rows, pick], scores[rows, pick]


def _start_beams(batch, k, max_len):
  # Only beam 0 is live at first, so the k start beams are not duplicates.
  scores = jnp.tile(jnp.array([0.0] + [models.NEG_INF] * (k - 1)), (batch, 1))
  return (jnp.zeros((batch, k, max_len), jnp.int32), scores,
          jnp.zeros((batch, k), bool))


def _encode_for_beams(model, params, inputs, k):
  """Each input row and its encoder output repeated for its k beams
  ([batch * k, ...]): the encoder runs once per input, not per beam."""
  encoded = model.apply({"params": params}, inputs,
                        method=models.Transformer.encode)
  return jnp.repeat(inputs, k, axis=0), jnp.repeat(encoded, k, axis=0)


def _reorder_beams(cache, rows):
  """The self-attention cache rows of the beams each new beam extends. The
  cross-attention cache (the encoder output's keys and values) is the same
  for every beam of an input, so it stays where it is."""
  def take(path, a):
    if any(getattr(key, "key", None) == "cross_attention" for key in path):
      return a
    return a[rows]
  return jax.tree_util.tree_map_with_path(take, cache)


@functools.partial(jax.jit, static_argnums=(0, 3, 4))
def beam_search_cached(model, params, inputs, max_len: int, beam_size: int):
  """`beam_search` over the key/value cache: each step's new beams take the
  cache rows of the beams they extend."""
  batch, k = inputs.shape[0], beam_size
  flat_inputs, encoded = _encode_for_beams(model, params, inputs, k)

  def step(i, state, cache, tokens):
    log_p, cache = _cached_log_probs(model, params, encoded, flat_inputs,
                                     cache, tokens, i, max_len)
    state, beam = _advance_beams(i, log_p, *state)
    rows = (beam + k * jnp.arange(batch)[:, None]).reshape(-1)
    return state, _reorder_beams(cache, rows)

  state, cache = step(0, _start_beams(batch, k, max_len), None,
                      jnp.zeros((batch * k,), jnp.int32))

  # Once every beam is done the state no longer changes (a finished beam
  # extends only with padding, at no cost), so the loop stops there.
  def cond(carry):
    i, (_, _, done), _ = carry
    return (i < max_len) & ~jnp.all(done)

  def body(carry):
    i, state, cache = carry
    state, cache = step(i, state, cache, state[0][:, :, i - 1].reshape(-1))
    return i + 1, state, cache

  _, state, _ = jax.lax.while_loop(cond, body, (1, state, cache))
  return _best(*state)


@functools.partial(jax.jit, static_argnums=(0, 3, 4))
def beam_search(model, params, inputs, max_len: int, beam_size: int):
  """Best of `beam_size` beams by total log-probability (no length penalty),
  a finished one (EOS) first.

  Returns ([batch, max_len] tokens, [batch] log-probabilities). No cache.
  """
  batch, k = inputs.shape[0], beam_size
  flat_inputs, encoded = _encode_for_beams(model, params, inputs, k)

  def body(i, state):
    log_p = _step_log_probs(model, params, encoded, flat_inputs,
                            state[0].reshape(batch * k, max_len), i)
    return _advance_beams(i, log_p, *state)[0]

  return _best(*jax.lax.fori_loop(0, max_len, body,
                                  _start_beams(batch, k, max_len)))


def strip_eos(tokens: np.ndarray) -> List[List[int]]:
  """Each row's ids before its first EOS (or padding)."""
  rows = []
  for row in np.asarray(tokens).tolist():
    end = next((j for j, t in enumerate(row) if t in (0, EOS_ID)), len(row))
    rows.append(row[:end])
  return rows


def predict(model, params, inputs, max_len: int, beam_size: int = 1,
            cache: bool = True):
  """[batch, max_len] tokens: greedy (beam_size 1) or the best beam."""
  if beam_size <= 1:
    greedy = greedy_decode_cached if cache else greedy_decode
    return np.asarray(greedy(model, params, inputs, max_len))
  beam = beam_search_cached if cache else beam_search
  return np.asarray(beam(model, params, inputs, max_len, beam_size)[0])


def batch_rows(batch_size: int) -> int:
  """Rows of every decoding batch: batch_size, the last, partial, batch and
  a small split padded to it (as T5X's infer does), so one compiled decoder
  serves every split and call of a model (BENCHMARKS.md "Issue 10 → Test
  suite"); rounded up to divide over the local devices."""
  rows = max(batch_size, 1)
  return rows + (-rows % jax.local_device_count())


def predict_ids(model, params, inputs: Sequence[Sequence[int]],
                max_input_len: int, max_target_len: int, batch_size: int = 64,
                beam_size: int = 1, progress: bool = False,
                desc: str = "decode") -> List[List[int]]:
  """Decoded ids (before EOS) of every input's ids, in input order;
  with `progress`, a bar (a line per tenth of the batches in a log file)
  named `desc`.

  Batches take the inputs longest first, so each holds inputs of similar
  length and its loop stops when its own outputs are done instead of when
  the longest output of a random batch is; a batch's padding rows copy its
  last input, so they finish with it. A row's outputs do not depend on the
  other rows of its batch (a test compares each with the numpy twin's).
  """
  if batch_size < 1:
    raise InputError(f"decoding batch size must be >= 1, got {batch_size}")
  order = sorted(range(len(inputs)), key=lambda i: -len(inputs[i]))
  rows = batch_rows(batch_size)
  out: List[List[int]] = [[] for _ in inputs]
  for start in progress_lib.progress(range(0, len(order), batch_size),
                                     disable=not progress, desc=desc,
                                     unit="batch"):
    chunk = order[start:start + batch_size]
    batch = np.zeros((rows, max_input_len), np.int32)
    for j in range(rows):
      ids = inputs[chunk[min(j, len(chunk) - 1)]]
      batch[j, :len(ids)] = ids
    tokens = strip_eos(predict(model, params, jnp.asarray(batch),
                               max_target_len, beam_size))
    for i, ids in zip(chunk, tokens):
      out[i] = ids
  return out


def translate(model, params, vocabulary, texts: Sequence[str],
              max_input_len: int, max_target_len: int, batch_size: int = 64,
              beam_size: int = 1, progress: bool = False
              ) -> Tuple[List[str], int]:
  """Decodes raw texts (e.g. backtranslation: sampled programs into
  utterances), tokenized as the tasks do (`append_eos_after_trim`). Returns
  the decoded texts and how many inputs were cut to max_input_len."""
  inputs = [list(vocabulary.encode(text)) for text in texts]
  cut = sum(len(ids) > max_input_len - 1 for ids in inputs)
  inputs = [ids[:max_input_len - 1] + [EOS_ID] for ids in inputs]
  tokens = predict_ids(model, params, inputs, max_input_len, max_target_len,
                       batch_size, beam_size, progress)
  return [vocabulary.decode(ids) for ids in tokens], cut


def evaluate(model, params, task_name: str, split: str,
             feature_lengths: Dict[str, int], batch_size: int = 64,
             beam_size: int = 1, examples=None, progress: bool = False,
             desc: str = "decode"
             ) -> Tuple[List[Tuple[str, str, str]], Dict[str, Any]]:
  """Decodes a split; returns (input, target, prediction) rows, metrics.

  Metrics are the task's own metric functions over its postprocessed text.
  `examples`: the split's `split_examples`, where the caller read them.
  """
  if examples is None:
    examples = split_examples(task_name, split, feature_lengths)
  predicted = predict_ids(model, params, [ex["inputs"] for ex in examples],
                          feature_lengths["inputs"],
                          feature_lengths["targets"], batch_size, beam_size,
                          progress, desc)
  return score_predictions(task_name, examples, predicted)


def decode_to_dir(out_dir: str, model, params, task_name: str, split: str,
                  feature_lengths: Dict[str, int], batch_size: int = 64,
                  beam_size: int = 1) -> Dict[str, Any]:
  """`csl-jax decode`'s work: decodes a split (`evaluate`), writes
  out_dir/predictions.tsv (input, target, prediction) and returns the
  summary: `too_long` (`input_pipeline.warn_if_too_long`), the task's
  metrics, split and beam_size."""
  too_long = input_pipeline.warn_if_too_long(task_name, split,
                                             feature_lengths)
  rows, metrics = evaluate(model, params, task_name, split, feature_lengths,
                           batch_size, beam_size)
  text = "".join("\t".join(r) + "\n" for r in rows)
  atomic_write_text(os.path.join(out_dir, "predictions.tsv"), text)
  return {"too_long": too_long, **metrics, "split": split,
          "beam_size": beam_size}


def split_dataset(task_name: str, split: str,
                  feature_lengths: Mapping[str, int]):
  """A split's tokenized examples as a tf.data dataset, in data order
  (SeqIO), one epoch."""
  import seqio  # pylint: disable=g-import-not-at-top
  task = seqio.get_mixture_or_task(task_name)
  with input_pipeline.without_autograph():
    return task.get_dataset(sequence_length=dict(feature_lengths),
                            split=split, shuffle=False, num_epochs=1)


def split_examples(task_name: str, split: str,
                   feature_lengths: Dict[str, int]) -> List[Dict[str, Any]]:
  """A split's tokenized examples, in data order (SeqIO)."""
  return list(split_dataset(task_name, split,
                            feature_lengths).as_numpy_iterator())


def score_predictions(task_name: str, examples: Sequence[Dict[str, Any]],
                      predicted: Sequence[Sequence[int]]
                      ) -> Tuple[List[Tuple[str, str, str]], Dict[str, Any]]:
  """(input, target, prediction) rows and the task's metrics of predicted
  ids (before EOS), one per example of `split_examples`."""
  import seqio  # pylint: disable=g-import-not-at-top
  if len(predicted) != len(examples):
    raise ValueError(f"{task_name}: {len(predicted)} predictions for "
                     f"{len(examples)} examples")
  task = seqio.get_mixture_or_task(task_name)
  vocab = task.output_features["targets"].vocabulary
  rows, targets, predictions = [], [], []
  for ex, ids in zip(examples, predicted, strict=True):
    prediction = task.postprocess_fn(vocab.decode(list(ids)), example=ex,
                                     is_target=False)
    target = task.postprocess_fn(ex["targets_pretokenized"], example=ex,
                                 is_target=True)
    source = ex["inputs_pretokenized"]
    source = source.decode() if isinstance(source, bytes) else source
    rows.append((source, target, prediction))
    targets.append(target)
    predictions.append(prediction)
  metrics = {"num_examples": len(rows)}
  for fn in task.predict_metric_fns or task.metric_fns:
    metrics.update(fn(targets, predictions))
  return rows, metrics
