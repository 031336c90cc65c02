"""`SampleConfig`: the sampler's settings, apart from the sampler so that
parsing a command line or a gin file does not load the Numba kernels."""

import dataclasses
import math
import numbers

import gin
import numpy as np

from csl_jax.errors import InputError


INTERSECT_MODES = ("exact", "local")


# A round's kernel seed is seed * sampler.ROUND_SEED_MULTIPLIER + round, an
# int64 in the kernel: larger seeds overflowed it (a numba TypingError
# traceback).
MAX_SEED = 2**43


@gin.configurable
@dataclasses.dataclass(frozen=True)
class SampleConfig:
  temperature: float = 1.0  # math.inf: uniform p(r | s)
  depth_bias: float = 0.0  # delta, added to rules with many NTs
  depth_bias_min_nts: int = 1  # the bias goes to rules with more NTs
  max_depth: int = 20  # at this depth only rules without NTs
  max_len: int = 512  # longer samples are dropped (copies can blow up)
  max_nodes: int = 4096
  dedup: bool = False
  max_attempts_factor: int = 20
  seed: int = 0
  chunk: int = 50_000
  intersect: bool = True  # with an output CFG: intersect, else reject
  # How an intersected derivation is drawn (`intersection`): "exact", the
  # model conditioned on a derivation the output CFG annotates; "local",
  # as the authors' release samples: each node draws among the rules that
  # can give its category, in proportion to p(r | c), without weighing
  # what their subtrees can complete to.
  intersect_mode: str = "exact"

  def __post_init__(self):
    self.validate()

  def validate(self) -> None:
    """Raises InputError for values that would give degenerate samples
    (T <= 0 or NaN: one rule always wins) or no samples at all."""
    def bad(name, rule):
      raise InputError(f"SampleConfig.{name} (--{name} where a flag exists) "
                       f"must be {rule}, got {getattr(self, name)!r}")

    def is_int(v):
      return isinstance(v, numbers.Integral) and not isinstance(v, bool)

    def is_real(v):
      return isinstance(v, numbers.Real) and not isinstance(v, bool)

    t = self.temperature
    if not is_real(t) or math.isnan(t) or t <= 0:
      bad("temperature", "a number > 0 (inf: uniform p(r | s))")
    if not is_real(self.depth_bias) or not math.isfinite(self.depth_bias):
      bad("depth_bias", "a finite number")
    if not is_int(self.depth_bias_min_nts) or self.depth_bias_min_nts < 0:
      bad("depth_bias_min_nts", "an integer >= 0")
    for name in ("max_depth", "max_len", "max_nodes", "max_attempts_factor",
                 "chunk"):
      if not is_int(getattr(self, name)) or getattr(self, name) < 1:
        bad(name, "an integer >= 1")
    if not is_int(self.seed) or not 0 <= self.seed < MAX_SEED:
      bad("seed", f"an integer >= 0 and < 2^{MAX_SEED.bit_length() - 1}")
    for name in ("dedup", "intersect"):
      if not isinstance(getattr(self, name), (bool, np.bool_)):
        bad(name, "True or False")
    if self.intersect_mode not in INTERSECT_MODES:
      bad("intersect_mode", " or ".join(repr(m) for m in INTERSECT_MODES))


# Typed placeholders for the intersection arrays when sampling without it.
