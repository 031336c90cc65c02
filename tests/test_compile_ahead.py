"""The first run's side process (csl_jax/compile_ahead.py)."""

import threading
import time
import types

from csl_jax import compile_ahead
from csl_jax.cky import qcfg_kernel
from csl_jax.induction import terminal_index_kernel
from csl_jax.induction import unify_kernel
from csl_jax.induction.search import InductionConfig, Inducer
from csl_jax.testing import toy_language


def test_main_compiles_and_then_nothing_is_started():
  compile_ahead.main()  # the parser's, sampler's and pruning's kernels
  assert not compile_ahead._cold()  # pylint: disable=protected-access
  assert compile_ahead.start() is None


def test_an_induction_meets_no_other_signature_of_the_kernels_ahead():
  # What the side process compiles is only loaded by the induction if the
  # argument types are the same: a new signature would compile again.
  compile_ahead.main()
  kernels = [unify_kernel.unify_partners, terminal_index_kernel.supersets,
             qcfg_kernel.forest_batch]
  before = [set(k.signatures) for k in kernels]
  pairs = [(x.split(), y.split()) for x, y in toy_language.sentences()]
  Inducer(pairs, InductionConfig(
      max_nts=2, terminal_cost=4, nonterminal_cost=1, source_given_target=0,
      target_given_source=100, num_partitions=4, max_steps=5,
      num_workers=1)).run()
  assert [set(k.signatures) for k in kernels] == before


class _FakeKernel:
  """What `_wait_for` reads of a numba dispatcher: its cache index path."""

  def __init__(self, path):
    self._cache = types.SimpleNamespace(
        _cache_file=types.SimpleNamespace(_index_path=path))


def test_wait_for_returns_once_the_index_is_written(tmp_path):
  path = str(tmp_path / "kernel.nbi")
  timer = threading.Timer(0.3, lambda: open(path, "w").close())
  timer.start()
  start = time.monotonic()
  compile_ahead._wait_for(_FakeKernel(path), timeout=10)  # pylint: disable=protected-access
  waited = time.monotonic() - start
  timer.join()
  assert 0.25 <= waited < 5


def test_wait_for_gives_up_after_its_timeout(tmp_path):
  start = time.monotonic()
  compile_ahead._wait_for(_FakeKernel(str(tmp_path / "never.nbi")),  # pylint: disable=protected-access
                          timeout=0.3)
  assert 0.25 <= time.monotonic() - start < 5
