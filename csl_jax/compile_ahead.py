"""A fresh install's first CSL run: the parser's and the sampler's numba
kernels compile in a side process while the induction runs.

numba compiles one kernel at a time in a process, so on a first run the
parse and sample stages spent ~13 s compiling after the induction and the
fit (BENCHMARKS "Issue 17 → COGS fit, peak memory per stage, and the first
run again"). Every kernel is `cache=True`: what the side process compiles,
the stages load from disk. With a warm cache nothing is started.

  python -m csl_jax.compile_ahead   (what `start` runs)
"""

import os
import subprocess
import sys
from typing import Optional


def _cold() -> bool:
  """Whether the parser's main kernel has no compiled code on disk yet."""
  from csl_jax.model import viterbi  # pylint: disable=g-import-not-at-top
  cache = getattr(viterbi.parse_kernel, "_cache", None)
  index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
  return bool(index) and not os.path.exists(index)


def start() -> Optional[subprocess.Popen]:
  """Starts the side process when the cache is cold; None otherwise."""
  if not _cold():
    return None
  return subprocess.Popen(
      [sys.executable, "-m", __name__], stdin=subprocess.DEVNULL,
      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main() -> None:
  """Parses, samples and builds pruning forests with a tiny model: the
  same kernels, the same argument types as the CSL stages."""
  from csl_jax.induction import prune  # pylint: disable=g-import-not-at-top
  from csl_jax.sampling import sampler  # pylint: disable=g-import-not-at-top
  from csl_jax.testing import models  # pylint: disable=g-import-not-at-top
  model = models.random_model(models.TOY_RULES, 0, 2)
  model.parse(["walk twice and run", "run"])
  sampler.sample(model, 50, sampler.SampleConfig(max_depth=3))
  # The induction's pruning forests (and the fit's), which the induction
  # reaches last.
  prune.prune_and_cover(models.TOY_RULES, [(["walk", "twice"], ["W", "W"])],
                        2, lambda rule: 1.0)


if __name__ == "__main__":
  main()
