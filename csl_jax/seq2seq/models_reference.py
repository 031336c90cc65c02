"""Numpy twin of `models.py`: the same Transformer, one obvious step at a time.

Numpy only (float64), so that tests compare the flax model against code that
shares nothing with it. `relative_position_bucket` and `sinusoids` mirror
the functions of the same names; `forward` mirrors `Transformer.__call__`
(deterministic), reading the flax parameter tree.
"""

import math
from typing import Any, Mapping

import numpy as np


def relative_position_bucket(relative_position: int,
                             bidirectional: bool = True,
                             num_buckets: int = 32,
                             max_distance: int = 128) -> int:
  """T5's `_relative_position_bucket`, one int at a time."""
  ret, n = 0, -relative_position
  if bidirectional:
    num_buckets //= 2
    ret += num_buckets if n < 0 else 0
    n = abs(n)
  else:
    n = max(n, 0)
  max_exact = num_buckets // 2
  if n < max_exact:
    return ret + n
  large = max_exact + int(math.log(n / max_exact) /
                          math.log(max_distance / max_exact) *
                          (num_buckets - max_exact))
  return ret + min(large, num_buckets - 1)


def sinusoids(length: int, d_model: int) -> np.ndarray:
  """Sinusoidal position embeddings, one number at a time."""
  pe = np.zeros((length, d_model))
  for pos in range(length):
    for i in range(d_model // 2):
      angle = pos / 10000 ** (2 * i / d_model)
      pe[pos, i], pe[pos, d_model // 2 + i] = math.sin(angle), math.cos(angle)
  return pe


def _to_numpy(tree: Any) -> Any:
  """A (possibly frozen) parameter dict as nested dicts of float64 arrays."""
  if isinstance(tree, Mapping):
    return {k: _to_numpy(v) for k, v in tree.items()}
  return np.asarray(tree, np.float64)


def _rms(x, scale):
  return x / np.sqrt(np.mean(x * x, -1, keepdims=True) + 1e-6) * scale


def _attention(p, x, memory, mask, bias):
  q = np.einsum("bqd,dhk->bqhk", x, p["query"]["kernel"])
  k = np.einsum("bqd,dhk->bqhk", memory, p["key"]["kernel"])
  v = np.einsum("bqd,dhk->bqhk", memory, p["value"]["kernel"])
  logits = np.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(q.shape[-1])
  logits = np.where(mask, logits + bias, -1e9)
  w = np.exp(logits - logits.max(-1, keepdims=True))
  w /= w.sum(-1, keepdims=True)
  out = np.einsum("bhqk,bkhd->bqhd", w, v)
  return np.einsum("bqhd,hdm->bqm", out, p["out"]["kernel"])


def _stack(p, cfg, x, mask, bidirectional, memory=None, memory_mask=None):
  length = x.shape[1]
  buckets = np.array([[relative_position_bucket(k - q, bidirectional,
                                                cfg.num_buckets,
                                                cfg.max_distance)
                       for k in range(length)] for q in range(length)])
  bias = p["relpos"]["rel_embedding"][buckets].transpose(2, 0, 1)[None]
  for i in range(cfg.num_layers):
    lp = p[f"layer_{i}"]
    h = _rms(x, lp["self_norm"]["scale"])
    x = x + _attention(lp["self_attention"], h, h, mask, bias)
    if memory is not None:
      h = _rms(x, lp["cross_norm"]["scale"])
      x = x + _attention(lp["cross_attention"], h, memory, memory_mask, 0.0)
    h = _rms(x, lp["mlp_norm"]["scale"])
    x = x + np.maximum(h @ lp["mlp"]["wi"]["kernel"], 0) @ (
        lp["mlp"]["wo"]["kernel"])
  return _rms(x, p["final_norm"]["scale"])


def forward(params, cfg, inputs, decoder_inputs) -> np.ndarray:
  """[batch, target length, vocab] logits of `Transformer(cfg)`."""
  p = _to_numpy(params)
  emb = p["embed"]["embedding"]

  def embed(tokens):
    x = emb[tokens]
    if cfg.absolute_positions:
      x = x + sinusoids(tokens.shape[1], cfg.d_model)[None]
    return x

  in_mask = (inputs > 0)[:, None, None, :]
  encoded = _stack(p["encoder"], cfg, embed(inputs), in_mask, True)
  length = decoder_inputs.shape[1]
  causal = np.tril(np.ones((length, length), bool))[None, None]
  x = _stack(p["decoder"], cfg, embed(decoder_inputs), causal, False,
             encoded, in_mask)
  return x @ emb.T / math.sqrt(cfg.d_model)
