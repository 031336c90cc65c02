"""A fresh install's first CSL run: numba kernels compile in a side process
while the induction runs.

numba compiles one kernel at a time in a process, so on a first run every
stage paid its own compile one after the other (BENCHMARKS "Issue 17 →
COGS fit, peak memory per stage, and the first run again"). Every kernel
is `cache=True`: what the side process compiles, the stages load from disk.
The side process takes kernels off the induction's chain and those it
meets late, then the parser's and the sampler's. With a warm cache
nothing is started.

  python -m csl_jax.compile_ahead [--beside_search]   (`start` runs it
                                                    beside a search)
"""

import contextlib
import os
import subprocess
import sys
import time
from typing import Optional


def _index(kernel) -> Optional[str]:
  """The path of a cached kernel's on-disk index (numba's)."""
  cache = getattr(kernel, "_cache", None)
  return getattr(getattr(cache, "_cache_file", None), "_index_path", None)


def _cold() -> bool:
  """Whether the parser's main kernel has no compiled code on disk yet."""
  from csl_jax.model import viterbi  # pylint: disable=g-import-not-at-top
  index = _index(viterbi._chart)  # pylint: disable=protected-access
  return bool(index) and not os.path.exists(index)


def _wait_for(kernel, timeout: float = 60.0) -> None:
  """Until another process has saved `kernel`'s compiled code (or
  `timeout` seconds)."""
  index = _index(kernel)
  deadline = time.monotonic() + timeout
  while index and not os.path.exists(index) and time.monotonic() < deadline:
    time.sleep(0.05)


_MARK = ".ahead"  # beside a kernel's index: the side process is compiling it


def _marks(kernels):
  return [index + _MARK for index in map(_index, kernels) if index]


def _unmark(marks) -> None:
  for mark in marks:
    try:
      os.remove(mark)
    except OSError:
      pass


@contextlib.contextmanager
def _compiling(*kernels):
  """Marks `kernels` as being compiled by this (side) process."""
  marks = _marks(kernels)
  for mark in marks:
    try:  # best effort: without it the stages compile what they need
      with open(mark, "w", encoding="utf-8"):
        pass
    except OSError:
      pass
  try:
    yield
  finally:
    _unmark(marks)


def _side_kernels():
  """The kernels the stages call that the side process compiles."""
  # pylint: disable=g-import-not-at-top,protected-access
  from csl_jax.cky import qcfg_kernel
  from csl_jax.induction import prune
  from csl_jax.induction import unify_kernel
  from csl_jax.model import viterbi
  from csl_jax.sampling import sample_kernel
  return (unify_kernel.unify_partners, qcfg_kernel.forest_batch,
          prune.roots_alive, qcfg_kernel.source_chart, viterbi._chart,
          viterbi._hypotheses, sample_kernel.sample_batch)


def _load_after_side(kernel, side: subprocess.Popen,
                     timeout: float = 120.0) -> None:
  """This process loads `kernel` from disk, on its first call, only after
  the side process has finished compiling it, if it is doing so: the
  search needs the pruning forests at about the time the side process
  finishes them, and compiling them here too cost CPU time in some first
  runs (BENCHMARKS "Issue 17 → Fewer numba compiles")."""
  cache = getattr(kernel, "_cache", None)
  index = _index(kernel)
  if cache is None or not index:
    return
  load = cache.load_overload

  def load_overload(sig, target_context):
    deadline = time.monotonic() + timeout
    while (os.path.exists(index + _MARK) and not os.path.exists(index)
           and side.poll() is None and time.monotonic() < deadline):
      time.sleep(0.02)
    return load(sig, target_context)

  cache.load_overload = load_overload


def start() -> Optional[subprocess.Popen]:
  """Starts the side process when the cache is cold; None otherwise."""
  if not _cold():
    return None
  side = subprocess.Popen(
      [sys.executable, "-m", __name__, _BESIDE_SEARCH],
      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
      stderr=subprocess.DEVNULL)
  for kernel in _side_kernels():
    _load_after_side(kernel, side)
  return side


_BESIDE_SEARCH = "--beside_search"


def main(beside_search: bool = False) -> None:
  """Runs each kernel once on tiny inputs, through the stages' own classes
  (the same argument types). The order is the first run's measured
  timeline (BENCHMARKS "Issue 17 → The first run within 2×"): the search
  compiles derivability (with the CKY chart), subset queries, UNIFY and
  occurrence counts one after the other from its first step; the side
  process takes UNIFY off that chain, then the pruning forests once the
  search has the chart compiled (compiling it here as well would be the
  same work twice), then the parser's and the sampler's kernels, which the
  fit leaves time for. `beside_search`: wait for the search's chart rather
  than compile it."""
  # pylint: disable=g-import-not-at-top
  from csl_jax.cky import qcfg_kernel
  from csl_jax.induction import prune
  from csl_jax.induction import unifier
  from csl_jax.sampling import sampler
  from csl_jax.testing import models
  # pylint: enable=g-import-not-at-top
  _unmark(_marks(_side_kernels()))  # left by a killed side process
  rules = models.TOY_RULES
  (unify, forests, roots_alive, source_chart, chart, hypotheses,
   sample_batch) = _side_kernels()
  with _compiling(unify):
    unifier.GrammarUnifier(rules, unifier.RuleCodes()).unify(0, [1, 2])
  if beside_search:  # it compiles the chart first thing
    _wait_for(qcfg_kernel.pair_chart)
  with _compiling(forests, roots_alive):
    prune.prune_and_cover(rules, [(["walk", "twice"], ["W", "W"])], 2,
                          lambda rule: 1.0)
  model = models.random_model(rules, 0, 2)
  with _compiling(source_chart, chart, hypotheses):
    model.parse(["walk twice and run", "run"])
  with _compiling(sample_batch):
    sampler.sample(model, 50, sampler.SampleConfig(max_depth=3))


if __name__ == "__main__":
  main(_BESIDE_SEARCH in sys.argv[1:])
