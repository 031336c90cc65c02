"""The first run's side process (csl_jax/compile_ahead.py)."""

import os
import threading
import time
import types

from csl_jax import compile_ahead
from csl_jax.cky import qcfg_kernel
from csl_jax.induction import prune
from csl_jax.induction import unify_kernel
from csl_jax.induction.search import InductionConfig, Inducer
from csl_jax.qcfg.rules import parse_rules
from csl_jax.sampling import sampler
from csl_jax.testing import models
from csl_jax.testing import toy_language


def test_main_compiles_and_then_nothing_is_started():
  compile_ahead.main()  # the parser's, sampler's and pruning's kernels
  assert not compile_ahead._cold()  # pylint: disable=protected-access
  assert compile_ahead.start() is None


def test_an_induction_meets_no_other_signature_of_the_kernels_ahead():
  # What the side process compiles is only loaded by the induction if the
  # argument types are the same: a new signature would compile again.
  compile_ahead.main()
  kernels = [unify_kernel.unify_partners, qcfg_kernel.forest_batch,
             prune.roots_alive]
  assert set(kernels) < set(compile_ahead._side_kernels())  # pylint: disable=protected-access
  before = [set(k.signatures) for k in kernels]
  pairs = [(x.split(), y.split()) for x, y in toy_language.sentences()]
  Inducer(pairs, InductionConfig(
      max_nts=2, terminal_cost=4, nonterminal_cost=1, source_given_target=0,
      target_given_source=100, num_partitions=4, max_steps=5,
      num_workers=1)).run()
  assert [set(k.signatures) for k in kernels] == before


def test_a_parse_and_a_sample_meet_no_other_signature_of_the_kernels_ahead():
  compile_ahead.main()
  kernels = compile_ahead._side_kernels()  # pylint: disable=protected-access
  before = [set(k.signatures) for k in kernels]
  assert all(before)  # main compiled every one
  rules = parse_rules("NT_1 after NT_2 ### NT_2 NT_1\nNT_1 left ### L NT_1\n"
                      "jump ### J\nwalk ### W\nNT_1 ### NT_1 NT_1\n")
  model = models.random_model(rules, seed=3, num_states=3)
  assert model.parse(["jump left after walk", "walk"])[1].parsed
  sampler.sample(model, 20, sampler.SampleConfig(max_depth=4))
  assert [set(k.signatures) for k in kernels] == before


class _FakeKernel:
  """What `_wait_for` and `_load_after_side` use of a numba dispatcher: its
  cache's index path and `load_overload`, which reports whether the index
  was there when it was called."""

  def __init__(self, path):
    self._cache = types.SimpleNamespace(
        _cache_file=types.SimpleNamespace(_index_path=path),
        load_overload=lambda sig, ctx: os.path.exists(path))


class _FakeSide:
  """A side process that exits after `seconds`."""

  def __init__(self, seconds):
    self.end = time.monotonic() + seconds

  def poll(self):
    return 0 if time.monotonic() >= self.end else None


def _first_load(kernel, side, after=None):
  """(seconds the first load took, whether it found the index), running
  `after` 0.3 s into it."""
  compile_ahead._load_after_side(kernel, side)  # pylint: disable=protected-access
  timer = threading.Timer(0.3, after) if after else None
  if timer:
    timer.start()
  start = time.monotonic()
  found = kernel._cache.load_overload("sig", None)  # pylint: disable=protected-access
  waited = time.monotonic() - start
  if timer:
    timer.join()
  return waited, found


def test_first_load_waits_for_the_side_process_compiling_it(tmp_path):
  path = str(tmp_path / "kernel.nbi")
  kernel = _FakeKernel(path)
  with compile_ahead._compiling(kernel):  # pylint: disable=protected-access
    assert os.path.exists(path + ".ahead")
    waited, found = _first_load(kernel, _FakeSide(60),
                                lambda: open(path, "w").close())
  assert not os.path.exists(path + ".ahead")
  assert 0.25 <= waited < 5 and found


def test_first_load_does_not_wait_for_what_the_side_is_not_compiling(
    tmp_path):
  waited, found = _first_load(_FakeKernel(str(tmp_path / "k.nbi")),
                              _FakeSide(60))
  assert waited < 0.25 and not found  # it compiles the kernel itself


def test_first_load_stops_waiting_when_the_side_process_exits(tmp_path):
  kernel = _FakeKernel(str(tmp_path / "k.nbi"))
  with compile_ahead._compiling(kernel):  # pylint: disable=protected-access
    waited, found = _first_load(kernel, _FakeSide(0.3))
  assert 0.25 <= waited < 5 and not found


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
