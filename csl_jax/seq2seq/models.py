"""T5-style encoder-decoder Transformer in flax.linen.

Pre-layer-norm (RMSNorm), T5 bucketed relative position bias (one table per
stack, shared by its layers), shared input/output embeddings, no biases.
Decoding recomputes the whole decoder prefix each step (no cache): simple
and cheap enough for the short outputs of SCAN-like tasks.
"""

import dataclasses
import functools
import math
from typing import Optional

import flax.linen as nn
import gin
import jax
import jax.numpy as jnp
import numpy as np

from csl_jax import configs

NEG_INF = -1e9


@gin.configurable(module="seq2seq")
@dataclasses.dataclass(frozen=True)
class Seq2SeqConfig:
  """Model sizes; vocab_size 0 means "take it from the task vocabulary"."""
  vocab_size: int = 0
  d_model: int = 128
  num_heads: int = 4
  d_ff: int = 512
  num_layers: int = 2  # Encoder and decoder each.
  dropout: float = 0.1
  num_buckets: int = 32
  max_distance: int = 128
  max_input_len: int = 64
  max_target_len: int = 64
  # Sinusoidal absolute positions added to the embeddings (Vaswani et al.,
  # 2017) on top of the relative bias. T5 has none; they help where the
  # output length must be counted out (SCAN's `around ... thrice`).
  absolute_positions: bool = False

  @property
  def head_dim(self) -> int:
    return self.d_model // self.num_heads

  def __post_init__(self):
    configs.check_types(self)


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
  def __call__(self, qlen: int, klen: int):
    cfg = self.config
    relative = jnp.arange(klen)[None, :] - jnp.arange(qlen)[:, None]
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


class Attention(nn.Module):
  config: Seq2SeqConfig

  @nn.compact
  def __call__(self, x, memory, mask, bias, deterministic: bool):
    cfg = self.config
    shape = (cfg.num_heads, cfg.head_dim)
    q = nn.DenseGeneral(shape, use_bias=False, name="query")(x)
    k = nn.DenseGeneral(shape, use_bias=False, name="key")(memory)
    v = nn.DenseGeneral(shape, use_bias=False, name="value")(memory)
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
  def __call__(self, x, mask, bias, memory, memory_mask, deterministic):
    drop = nn.Dropout(self.config.dropout)
    h = RMSNorm(name="self_norm")(x)
    x = x + drop(Attention(self.config, name="self_attention")(
        h, h, mask, bias, deterministic), deterministic=deterministic)
    if self.cross:
      h = RMSNorm(name="cross_norm")(x)
      x = x + drop(Attention(self.config, name="cross_attention")(
          h, memory, memory_mask, None, deterministic),
                   deterministic=deterministic)
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
               deterministic=True):
    cfg = self.config
    drop = nn.Dropout(cfg.dropout)
    length = tokens.shape[1]
    x = self.embed(tokens)
    if cfg.absolute_positions:
      x = x + sinusoids(length, cfg.d_model)[None]
    x = drop(x, deterministic=deterministic)
    bias = RelativePositionBias(cfg, not self.cross, name="relpos")(
        length, length)
    for i in range(cfg.num_layers):
      x = Layer(cfg, self.cross, name=f"layer_{i}")(
          x, mask, bias, memory, memory_mask, deterministic)
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
