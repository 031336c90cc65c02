"""The seq2seq model's and trainer's settings (gin: `seq2seq.*`).

Apart from `models.py` and `train.py` so that a command can register the
gin configurables without importing JAX, Flax and TensorFlow (the
pipeline's `augment` binds them for pcfg_bt's reverse model).
"""

import dataclasses
from typing import Dict, Optional

import gin

from csl_jax import configs
from csl_jax.errors import InputError
from csl_jax.seq2seq import curriculum


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
    # d_model 0 divided by zero deep in the model, a traceback; a dropout
    # of 1 or more trains on nothing.
    configs.check_ranges(
        self, vocab_size=configs.NON_NEGATIVE, d_model=configs.AT_LEAST_ONE,
        d_ff=configs.AT_LEAST_ONE, num_layers=configs.AT_LEAST_ONE,
        max_input_len=configs.AT_LEAST_ONE,
        max_target_len=configs.AT_LEAST_ONE,
        dropout=(lambda v: 0 <= v < 1, "in [0, 1)"))
    # The decoder's buckets are one-directional: num_buckets // 2 exact
    # ones, then log-spaced up to max_distance, which must lie beyond them
    # (at or below, T5's formula divides by log(1) = 0: bucket ids turn
    # into garbage, silently).
    if self.num_buckets < 4 or self.max_distance <= self.num_buckets // 2:
      raise InputError(
          f"seq2seq.Seq2SeqConfig.max_distance {self.max_distance} with "
          f"num_buckets {self.num_buckets}: need num_buckets >= 4 and "
          f"max_distance > num_buckets // 2 (the decoder's exact buckets)")
    # Heads split d_model: a remainder would be dropped (d_model 30 over 4
    # heads attended in 28), silently.
    if self.num_heads < 1 or self.d_model % self.num_heads:
      raise InputError(
          f"seq2seq.Seq2SeqConfig.d_model {self.d_model} is not a multiple "
          f"of num_heads {self.num_heads}")


@gin.configurable(module="seq2seq")
@dataclasses.dataclass(frozen=True)
class TrainConfig:
  batch_size: int = 64
  num_steps: int = 2000
  learning_rate: float = 1e-3
  warmup_steps: int = 100
  weight_decay: float = 0.01
  # The rate schedule: "cosine", linear warm-up to `learning_rate` then
  # cosine decay to a tenth of it at `num_steps`; or "noam" (Vaswani et al.
  # 2017; Zhou et al. 2023 App. B.1), `learning_rate` * d_model^-0.5 *
  # min(t^-0.5, t * warmup_steps^-1.5) at step t = 1, 2, ...: there
  # `learning_rate` is the scale factor (Zhou et al.'s 2.0 peaks at ~1.8e-3
  # with d_model 256 and 5,000 warm-up steps) and d_model the model's.
  schedule: str = "cosine"
  # Gradients clipped to this global norm before Adam (0: not clipped).
  grad_clip: float = 0.0
  adam_b2: float = 0.999  # Adam's second-moment decay (b1 is 0.9)
  seed: int = 0
  log_every: int = 50
  checkpoint_every: int = 500
  eval_split: Optional[str] = None  # Loss on it at each checkpoint.
  # Batches of similar target length, trimmed to multiples of this width
  # (0: every batch padded to the full lengths). SCAN's targets vary from
  # 1 to 48 tokens, so padding every batch to 48 wastes most of the compute.
  bucket_width: int = 16
  # Repetition curriculum (csl_jax/seq2seq/curriculum.py): "none",
  # "example" or "primitive"; the available fraction of the training
  # examples grows from `curriculum_start` to all at `curriculum_end` of
  # the steps. "uniform": the curricula's sampler with every example
  # available, the control to compare them with.
  curriculum: str = "none"
  curriculum_start: float = 0.2
  curriculum_end: float = 0.8
  # Every this many steps, decode the training split (greedy) and write
  # which examples came out right to OUT/learning/step_<n>.npy: the
  # learning-based difficulty (csl_jax/difficulty/scores.py). 0: never.
  track_train_every: int = 0

  def __post_init__(self):
    configs.check_types(self)
    # A negative rate trained uphill, without a word (0 keeps the initial
    # parameters: a test of init_from uses it).
    configs.check_ranges(self, learning_rate=configs.NON_NEGATIVE_FINITE,
                         weight_decay=configs.NON_NEGATIVE_FINITE,
                         grad_clip=configs.NON_NEGATIVE_FINITE,
                         adam_b2=(lambda v: 0 <= v < 1, "in [0, 1)"))
    if self.schedule not in SCHEDULES:
      raise InputError(f"seq2seq.TrainConfig.schedule: {self.schedule!r}; "
                       f"one of {', '.join(SCHEDULES)}")
    if self.curriculum not in CURRICULA:
      raise InputError(f"seq2seq.TrainConfig.curriculum: "
                       f"{self.curriculum!r}; one of {', '.join(CURRICULA)}")
    if not 0 < self.curriculum_start <= 1 or not 0 < self.curriculum_end <= 1:
      raise InputError("seq2seq.TrainConfig.curriculum_start and "
                       "curriculum_end must be in (0, 1]")
    for name in ("batch_size", "num_steps", "log_every", "checkpoint_every"):
      if getattr(self, name) < 1:
        raise InputError(f"seq2seq.TrainConfig.{name}: "
                         f"{getattr(self, name)}; must be at least 1")
    for name in ("warmup_steps", "bucket_width", "track_train_every"):
      if getattr(self, name) < 0:
        raise InputError(f"seq2seq.TrainConfig.{name}: "
                         f"{getattr(self, name)}; must not be negative")


CURRICULA = curriculum.KINDS
SCHEDULES = ("cosine", "noam")
# The optimizer's settings as every run trained before they were options:
# at these values they are left out of `train_key`, so those runs keep
# their keys.
OPTIMIZER_BEFORE = {"schedule": "cosine", "grad_clip": 0.0,
                    "adam_b2": 0.999}
# Not part of what a run is: they do not change the parameters.
BOOKKEEPING_FIELDS = ("log_every", "checkpoint_every", "eval_split",
                      "track_train_every")


def train_key(config: TrainConfig) -> dict:
  """The settings that determine a run's parameters (runs and experiment
  cells are keyed on them). The curriculum's appear only when it is on,
  the optimizer's options (`OPTIMIZER_BEFORE`) only when set otherwise, so
  runs from before them keep their keys."""
  key = {k: v for k, v in dataclasses.asdict(config).items()
         if k not in BOOKKEEPING_FIELDS}
  if config.curriculum in ("none", "uniform"):  # no schedule to key
    for name in ("curriculum_start", "curriculum_end"):
      del key[name]
  if config.curriculum == "none":
    del key["curriculum"]
  for name, before in OPTIMIZER_BEFORE.items():
    if key[name] == before:
      del key[name]
  return key


# What beam search returns, for the keys of cached decodings: 2, the best
# finished beam of the final k (session 33); before, the top beam even when
# cut at max_len. Greedy decoding (beam 1) did not change: its keys stay.
BEAM_SEARCH_VERSION = 2


def decode_key(beam_size: int) -> Dict[str, int]:
  """The decoding settings a cached output depends on."""
  if beam_size == 1:
    return {"beam_size": 1}
  return {"beam_size": beam_size, "beam_search": BEAM_SEARCH_VERSION}
