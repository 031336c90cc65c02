"""The first run's side process (csl_jax/compile_ahead.py)."""

from csl_jax import compile_ahead


def test_main_compiles_and_then_nothing_is_started():
  compile_ahead.main()  # the parser's, sampler's and pruning's kernels
  assert not compile_ahead._cold()  # pylint: disable=protected-access
  assert compile_ahead.start() is None
