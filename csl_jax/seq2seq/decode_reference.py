"""Numpy twin of `decode.py`: greedy decoding and beam search, recomputing
the whole forward pass (`models_reference.forward`) at every step.

Beam search keeps plain Python lists of hypotheses. Numpy only.
"""

from typing import Tuple

import numpy as np

from csl_jax.seq2seq import models_reference

# Same id as `decode.EOS_ID`; not imported, so the twin shares no code (or
# jax import) with what it checks.
EOS_ID = 1


def _log_softmax(x):
  x = x - x.max(-1, keepdims=True)
  return x - np.log(np.exp(x).sum(-1, keepdims=True))


def step_log_probs(params, cfg, inputs, outputs, i) -> np.ndarray:
  """One decoding step: log p(token at i | outputs[:i]), full recompute."""
  shifted = np.pad(outputs, ((0, 0), (1, 0)))[:, :-1]  # BOS is id 0.
  return _log_softmax(
      models_reference.forward(params, cfg, inputs, shifted)[:, i])


def greedy_decode(params, cfg, inputs, max_len: int) -> np.ndarray:
  """[batch, max_len] argmax tokens; after EOS, padding (0)."""
  outputs = np.zeros((len(inputs), max_len), np.int64)
  done = np.zeros(len(inputs), bool)
  for i in range(max_len):
    token = np.where(done, 0, step_log_probs(params, cfg, inputs, outputs,
                                             i).argmax(-1))
    outputs[:, i] = token
    done |= token == EOS_ID
  return outputs


def _beam_one(params, cfg, row, max_len, k):
  """(tokens, log-probability) of the best of k beams for one input, a
  finished one first."""
  beams = [((), 0.0, False)]
  for i in range(max_len):
    candidates = []
    for tokens, score, done in beams:
      if done:
        candidates.append((tokens + (0,), score, True))
        continue
      outputs = np.array([list(tokens) + [0] * (max_len - i)])
      log_p = step_log_probs(params, cfg, row[None], outputs, i)[0]
      candidates += [(tokens + (t,), score + log_p[t], t == EOS_ID)
                     for t in range(cfg.vocab_size)]
    beams = sorted(candidates, key=lambda c: -c[1])[:k]
  finished = [b for b in beams if b[2]]  # a beam that ended, if any
  return (finished or beams)[0][:2]


def beam_search(params, cfg, inputs, max_len: int,
                beam_size: int) -> Tuple[np.ndarray, np.ndarray]:
  """([batch, max_len] tokens, [batch] log-probabilities) of the best beam."""
  best = [_beam_one(params, cfg, row, max_len, beam_size) for row in inputs]
  return (np.array([t for t, _ in best], np.int64).reshape(len(inputs),
                                                            max_len),
          np.array([s for _, s in best], np.float64))
