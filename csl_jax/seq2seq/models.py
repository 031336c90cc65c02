"""T5-style encoder-decoder Transformer in flax.linen.

Pre-layer-norm (RMSNorm), T5 bucketed relative position bias (one table per
stack, shared by its layers), shared input/output embeddings, no biases.
`Transformer.decode_step` runs the decoder one position at a time over a
key/value cache (flax's "cache" collection, as in the flax WMT example):
each step attends to the cached keys and values of the positions before it,
and the encoder output's keys and values are projected once, on step 0.
"""

import functools
import math
from typing import Any, Optional

import flax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from csl_jax.seq2seq.config import Seq2SeqConfig  # pylint: disable=unused-import

NEG_INF = -1e9


def relative_position_bucket(relative_position, bidirectional: bool = True,
                             num_buckets: int = 32, max_distance: int = 128):
  """T5's bucket of `key - query` positions: exact near, log-spaced far."""
  n = -relative_position
  ret = jnp.zeros_like(n)
  if bidirectional:
    num_buckets //= 2
    ret += (n < 0).astype(jnp.int32) * num_buckets
    n = jnp.abs(n)
  else:
    n = jnp.maximum(n, 0)
  max_exact = num_buckets // 2
  large = max_exact + (
      jnp.log(n.astype(jnp.float32) / max_exact + jnp.finfo(jnp.float32).eps)
      / math.log(max_distance / max_exact)
      * (num_buckets - max_exact)).astype(jnp.int32)
  large = jnp.minimum(large, num_buckets - 1)
  return ret + jnp.where(n < max_exact, n, large)


class RelativePositionBias(nn.Module):
  config: Seq2SeqConfig
  bidirectional: bool

  @nn.compact
  def __call__(self, qlen: int, klen: int, offset=0):
    """[1, heads, qlen, klen]; queries at positions offset + 0..qlen-1."""
    cfg = self.config
    relative = (jnp.arange(klen)[None, :]
                - (jnp.arange(qlen)[:, None] + offset))
    buckets = relative_position_bucket(relative, self.bidirectional,
                                       cfg.num_buckets, cfg.max_distance)
    table = self.param("rel_embedding", nn.initializers.normal(0.1),
                       (cfg.num_buckets, cfg.num_heads))
    return jnp.transpose(table[buckets], (2, 0, 1))[None]  # [1, h, q, k]


class RMSNorm(nn.Module):
  @nn.compact
  def __call__(self, x):
    scale = self.param("scale", nn.initializers.ones, (x.shape[-1],))
    return x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * scale


@flax.struct.dataclass
class Step:
  """One decoding position: `index` (traced) of `length` (static)."""
  index: Any
  length: int = flax.struct.field(pytree_node=False)
  cross: bool = flax.struct.field(pytree_node=False, default=False)


class Attention(nn.Module):
  config: Seq2SeqConfig

  @nn.compact
  def __call__(self, x, memory, mask, bias, deterministic: bool,
               step: Optional["Step"] = None):
    """With `step` (one decoding position): self-attention appends x's key
    and value to the cache and attends to positions <= step.index; cross
    attention (step.cross) projects the memory on the first step only."""
    cfg = self.config
    shape = (cfg.num_heads, cfg.head_dim)
    q = nn.DenseGeneral(shape, use_bias=False, name="query")(x)
    key = nn.DenseGeneral(shape, use_bias=False, name="key")
    value = nn.DenseGeneral(shape, use_bias=False, name="value")
    if step is None:
      k, v = key(memory), value(memory)
    elif step.cross:
      k = self.variable("cache", "cached_key", key, memory).value
      v = self.variable("cache", "cached_value", value, memory).value
    else:
      k, v = key(memory), value(memory)
      full = (x.shape[0], step.length) + shape
      cached_k = self.variable("cache", "cached_key", jnp.zeros, full,
                               k.dtype)
      cached_v = self.variable("cache", "cached_value", jnp.zeros, full,
                               v.dtype)
      at = (0, step.index, 0, 0)
      cached_k.value = jax.lax.dynamic_update_slice(cached_k.value, k, at)
      cached_v.value = jax.lax.dynamic_update_slice(cached_v.value, v, at)
      k, v = cached_k.value, cached_v.value
      mask = (jnp.arange(step.length) <= step.index)[None, None, None, :]
    logits = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(cfg.head_dim)
    if bias is not None:
      logits = logits + bias
    weights = jax.nn.softmax(jnp.where(mask, logits, NEG_INF))
    weights = nn.Dropout(cfg.dropout)(weights, deterministic=deterministic)
    out = jnp.einsum("bhqk,bkhd->bqhd", weights, v)
    return nn.DenseGeneral(cfg.d_model, axis=(-2, -1), use_bias=False,
                           name="out")(out)


class Mlp(nn.Module):
  config: Seq2SeqConfig

  @nn.compact
  def __call__(self, x, deterministic: bool):
    cfg = self.config
    h = nn.relu(nn.Dense(cfg.d_ff, use_bias=False, name="wi")(x))
    h = nn.Dropout(cfg.dropout)(h, deterministic=deterministic)
    return nn.Dense(cfg.d_model, use_bias=False, name="wo")(h)


class Layer(nn.Module):
  """Self-attention, cross-attention (decoder only), MLP; pre-norm."""
  config: Seq2SeqConfig
  cross: bool

  @nn.compact
  def __call__(self, x, mask, bias, memory, memory_mask, deterministic,
               step=None):
    drop = nn.Dropout(self.config.dropout)
    h = RMSNorm(name="self_norm")(x)
    x = x + drop(Attention(self.config, name="self_attention")(
        h, h, mask, bias, deterministic, step), deterministic=deterministic)
    if self.cross:
      h = RMSNorm(name="cross_norm")(x)
      x = x + drop(Attention(self.config, name="cross_attention")(
          h, memory, memory_mask, None, deterministic,
          step and step.replace(cross=True)), deterministic=deterministic)
    h = RMSNorm(name="mlp_norm")(x)
    return x + drop(Mlp(self.config, name="mlp")(h, deterministic),
                    deterministic=deterministic)


def sinusoids(length: int, d_model: int) -> np.ndarray:
  """[length, d_model]: sin of position / 10000^(2i/d), then the cos."""
  half = d_model // 2
  angle = (np.arange(length)[:, None]
           / 10000.0 ** (np.arange(half)[None, :] * 2.0 / d_model))
  out = np.zeros((length, d_model), np.float32)
  out[:, :half], out[:, half:2 * half] = np.sin(angle), np.cos(angle)
  return out


class Stack(nn.Module):
  """Encoder (cross=False) or decoder (cross=True) layers + final norm."""
  config: Seq2SeqConfig
  embed: nn.Module
  cross: bool

  @nn.compact
  def __call__(self, tokens, mask, memory=None, memory_mask=None,
               deterministic=True, step=None):
    """With `step`, tokens [batch, 1] sit at position step.index of
    step.length (decoding with the cache)."""
    cfg = self.config
    drop = nn.Dropout(cfg.dropout)
    length = tokens.shape[1]
    offset, keys = (0, length) if step is None else (step.index, step.length)
    x = self.embed(tokens)
    if cfg.absolute_positions:
      x = x + jax.lax.dynamic_slice_in_dim(
          jnp.asarray(sinusoids(keys, cfg.d_model)), offset, length)[None]
    x = drop(x, deterministic=deterministic)
    bias = RelativePositionBias(cfg, not self.cross, name="relpos")(
        length, keys, offset)
    for i in range(cfg.num_layers):
      x = Layer(cfg, self.cross, name=f"layer_{i}")(
          x, mask, bias, memory, memory_mask, deterministic, step)
    return drop(RMSNorm(name="final_norm")(x), deterministic=deterministic)


class Transformer(nn.Module):
  """Token ids in, logits out; id 0 is padding (and the decoder's BOS)."""
  config: Seq2SeqConfig

  def setup(self):
    cfg = self.config
    self.embed = nn.Embed(cfg.vocab_size, cfg.d_model,
                          embedding_init=nn.initializers.normal(1.0))
    self.encoder = Stack(cfg, self.embed, cross=False)
    self.decoder = Stack(cfg, self.embed, cross=True)

  def encode(self, inputs, deterministic: bool = True):
    mask = (inputs > 0)[:, None, None, :]
    return self.encoder(inputs, mask, deterministic=deterministic)

  def decode(self, encoded, inputs, decoder_inputs,
             deterministic: bool = True):
    length = decoder_inputs.shape[1]
    causal = jnp.tril(jnp.ones((length, length), bool))[None, None]
    x = self.decoder(decoder_inputs, causal, encoded,
                     (inputs > 0)[:, None, None, :], deterministic)
    # Tied output layer, rescaled as in T5 1.0.
    return self.embed.attend(x) / math.sqrt(self.config.d_model)

  def decode_step(self, encoded, inputs, tokens, index, length: int):
    """Logits [batch, 1, vocab] of the position after `tokens` [batch, 1]
    (at position `index` of `length`), updating the "cache" collection:
    apply with mutable=["cache"], an empty cache at index 0."""
    step = Step(index, length)
    x = self.decoder(tokens, None, encoded, (inputs > 0)[:, None, None, :],
                     True, step)
    return self.embed.attend(x) / math.sqrt(self.config.d_model)

  def __call__(self, inputs, decoder_inputs, deterministic: bool = True):
    encoded = self.encode(inputs, deterministic)
    return self.decode(encoded, inputs, decoder_inputs, deterministic)


# One module per config: jitted steps take `model.apply` as a static argument
# (a field of the train state), and modules compare by identity, so a fresh
# one would recompile them for every run of a process.
@functools.lru_cache(maxsize=None)
def transformer(config: Seq2SeqConfig) -> Transformer:
  return Transformer(config)


def init_params(config: Seq2SeqConfig, rng, batch: int = 1,
                input_len: Optional[int] = None,
                target_len: Optional[int] = None):
  model = transformer(config)
  return model, _jitted_init(config, batch, input_len or config.max_input_len,
                             target_len or config.max_target_len)(rng)


# Compiled once per shape: op by op, an init costs seconds on a CPU, and a
# process inits for every run and every checkpoint it loads.
@functools.lru_cache(maxsize=None)
def _jitted_init(config: Seq2SeqConfig, batch: int, input_len: int,
                 target_len: int):
  model = transformer(config)

  def init(rng):
    inputs = jnp.ones((batch, input_len), jnp.int32)
    targets = jnp.ones((batch, target_len), jnp.int32)
    return model.init(rng, inputs, targets)["params"]

  return jax.jit(init)
