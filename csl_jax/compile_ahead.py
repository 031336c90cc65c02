"""A fresh install's first CSL run: numba kernels compile in a side process
while the induction runs.

numba compiles one kernel at a time in a process, so on a first run every
stage paid its own compile one after the other (BENCHMARKS "Issue 17 →
COGS fit, peak memory per stage, and the first run again"). Every kernel
is `cache=True`: what the side process compiles, the stages load from disk.
The side process takes kernels off the induction's chain and those it
meets late, then the parser's and the sampler's. With a warm cache
nothing is started.

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
  """Runs each kernel once on tiny inputs, through the stages' own classes
  (the same argument types). The order is the first run's measured
  timeline (BENCHMARKS "Issue 17 → The first run within 2×"): the search
  compiles derivability (with the CKY chart), subset queries, UNIFY and
  occurrence counts one after the other from its first step; the side
  process takes UNIFY off that chain, then superset queries, then the
  pruning forests once the search has the chart compiled (compiling it
  here as well would be the same work twice), then the parser's and the
  sampler's kernels, which the fit leaves time for."""
  # pylint: disable=g-import-not-at-top
  from csl_jax.induction import prune
  from csl_jax.induction import terminal_index
  from csl_jax.induction import unifier
  from csl_jax.sampling import sampler
  from csl_jax.testing import models
  # pylint: enable=g-import-not-at-top
  rules = models.TOY_RULES
  unifier.GrammarUnifier(rules, unifier.RuleCodes()).unify(0, [1, 2])
  index = terminal_index.TerminalIndex(rules, terminal_index.TermIds())
  index.supersets(rules[2:])
  prune.prune_and_cover(rules, [(["walk", "twice"], ["W", "W"])], 2,
                        lambda rule: 1.0)
  model = models.random_model(rules, 0, 2)
  model.parse(["walk twice and run", "run"])
  sampler.sample(model, 50, sampler.SampleConfig(max_depth=3))


if __name__ == "__main__":
  main()
