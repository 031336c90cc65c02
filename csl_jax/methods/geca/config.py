"""Settings of GECA (Andreas, 2020), named after the authors' release flags."""

import dataclasses
from typing import Optional, Tuple

import gin

WEIGHTINGS = ("official", "uniform")


@gin.configurable(module="geca")
@dataclasses.dataclass(frozen=True)
class GECAConfig:
  """What GECA extracts, links and generates.

  Attributes:
    wug_size: tokens per fragment span, at most (release `--wug_size`).
    wug_count: spans per fragment, at most (`--wug_count`; the paper's
      "k gaps" is wug_count = k + 1).
    wug_limit: only n-grams seen at most this often (over all training inputs
      and outputs) may be fragment spans (`--wug_limit`); None: no limit.
    window: None: the environment is the whole template (paper §4, §5);
      k >= 0: the k tokens on each side of every hole (paper Eq. 3, §6).
    max_len: skip pairs whose joint sequence (input, separator, output) has
      at least this many tokens (`--max_comp_len`); None: no bound.
    dedup: drop duplicate training pairs first (`--dedup`; the release's
      default is off and its SCAN script turns it on, as gin/geca/scan.gin).
    holdout: the release's SCAN loader shuffles the training file (numpy
      seed `seed`) and sets its first `holdout` lines aside as validation
      (640 = n_batch * 10); 0: use every training pair.
    variants: fills drawn per target template (`--variants`).
    n_sample: stop after this many accepted pairs (`--n_sample`); None: all.
    weighting: "official": a fill is drawn in proportion to the number of
      distinct donor templates that offer it (the release's list with
      duplicates); "uniform": each distinct candidate fill once.
    output_only: language-model mode: sequences are the outputs alone
      (`--output_only`).
    seed: seeds the hold-out shuffle, the target order and the fill draws.
    memory_limit_gb: stop cleanly, with an estimate, when the index would
      need more than this (the local index; with num_shards > 1 the
      partitions are written to work_dir and read memory-mapped).
    preview: generated pairs listed with the substituted fragment marked.
  """
  wug_size: int = 4
  wug_count: int = 2
  wug_limit: Optional[int] = None
  window: Optional[int] = None
  max_len: Optional[int] = None
  dedup: bool = True
  holdout: int = 0
  variants: int = 2
  n_sample: Optional[int] = 1000
  weighting: str = "official"
  output_only: bool = False
  seed: int = 0
  memory_limit_gb: float = 8.0
  preview: int = 20
  num_shards: int = 1
  runner: Optional[str] = None
  pipeline_args: Tuple[str, ...] = ()
  work_dir: Optional[str] = None

  def __post_init__(self):
    # pylint: disable=g-import-not-at-top
    from csl_jax import configs
    from csl_jax.errors import InputError
    # pylint: enable=g-import-not-at-top
    configs.check_types(self)  # `wug_size = '4'` fails here, not in a kernel
    if self.wug_size < 1 or self.wug_count < 1:
      raise InputError("GECA wug_size and wug_count must be >= 1")
    if self.wug_count > 8:
      raise InputError("GECA wug_count must be <= 8")
    if self.window is not None and self.window < 0:
      raise InputError("GECA window must be None or >= 0")
    if self.variants < 1:
      raise InputError("GECA variants must be >= 1")
    if self.n_sample is not None and self.n_sample < 0:
      raise InputError("GECA n_sample must be None or >= 0")
    if self.weighting not in WEIGHTINGS:
      raise InputError(f"GECA weighting must be one of {WEIGHTINGS}, got "
                       f"{self.weighting!r}")
    if self.holdout < 0:
      raise InputError("GECA holdout must be >= 0")
    if not self.memory_limit_gb > 0:  # NaN too: it would turn the guard off
      raise InputError(f"GECA memory_limit_gb must be > 0, got "
                       f"{self.memory_limit_gb}")
    if self.num_shards < 1:
      raise InputError("GECA num_shards must be >= 1")
    if self.runner and self.num_shards < 2:
      raise InputError("GECA runner needs num_shards > 1: the index runs on "
                       "Beam one hash partition per key")
    object.__setattr__(self, "pipeline_args", tuple(self.pipeline_args))
