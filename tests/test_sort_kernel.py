"""`sort_kernel.stable_argsort` against its twin and numpy."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from csl_jax import sort_kernel
from csl_jax import sort_kernel_reference


def test_ties_keep_their_order():
  keys = np.array([3, 1, 3, 0, 1, 3], np.int64)
  # By hand: 0 (at 3), the 1s (at 1, 4), the 3s (at 0, 2, 5).
  assert sort_kernel.stable_argsort(keys).tolist() == [3, 1, 4, 0, 2, 5]
  assert sort_kernel_reference.stable_argsort(keys.tolist()) == [
      3, 1, 4, 0, 2, 5]


def test_empty_and_one():
  assert sort_kernel.stable_argsort(np.zeros(0, np.int64)).tolist() == []
  assert sort_kernel.stable_argsort(np.array([7], np.int64)).tolist() == [0]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-5, 5) | st.integers(-2**62, 2**62),
                max_size=70))
def test_twin_and_numpy(keys):
  got = sort_kernel.stable_argsort(np.array(keys, np.int64)).tolist()
  assert got == sort_kernel_reference.stable_argsort(keys)
  assert got == np.argsort(np.array(keys, np.int64), kind="stable").tolist()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-5, 5), max_size=30), st.integers(-6, 6))
def test_lower_bound_twin_and_numpy(values, value):
  values = sorted(values)
  got = sort_kernel.lower_bound(np.array(values, np.int64), value)
  assert got == sort_kernel_reference.lower_bound(values, value)
  assert got == np.searchsorted(np.array(values, np.int64), value)
