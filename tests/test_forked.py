"""Shares of work in forked children and the parent.

Each case runs in a fresh interpreter (spawned): a pytest worker may have
JAX's threads running, and forking those is what the search avoids
(`search._fork_is_safe`)."""

import multiprocessing
import os

import pytest

from csl_jax.induction import forked

_SEEN = []  # written by whoever computes a share


def _square_all(share):
  _SEEN.append(os.getpid())
  return [x * x for x in share]


def _identity(share):
  return share


def _misbehave(share):
  """A share that raises or dies as it says; any other is returned."""
  if share == "raise":
    raise ValueError("bad share")
  if share == "die":
    os._exit(3)  # pylint: disable=protected-access
  if share == "raise in parent":
    raise KeyError(share)
  return share


def _in_fresh_process(case):
  with multiprocessing.get_context("spawn").Pool(1) as pool:
    pool.apply(case)


def _results_in_share_order():
  shares = [[1, 2], [3], [], [4, 5, 6]]
  assert forked.fork_map(_square_all, shares) == [[1, 4], [9], [],
                                                  [16, 25, 36]]
  assert _SEEN == [os.getpid()]  # only the first share computed here
  assert forked.fork_map(_square_all, [[7]]) == [[49]]
  assert not forked.fork_map(_square_all, [])
  # More than a pipe's buffer: the child blocks until the parent reads.
  big = list(range(200_000))
  assert forked.fork_map(_identity, [[], big])[1] == big


def _errors_are_raised():
  with pytest.raises(RuntimeError, match="ValueError: bad share"):
    forked.fork_map(_misbehave, ["parent", "raise"])
  with pytest.raises(RuntimeError, match="died"):
    forked.fork_map(_misbehave, ["parent", "die"])
  pids = []
  fork = os.fork

  def recorded_fork():
    pid = fork()
    if pid:
      pids.append(pid)
    return pid

  forked.os.fork = recorded_fork
  try:
    with pytest.raises(KeyError):
      forked.fork_map(_misbehave, ["raise in parent", "child", "child"])
  finally:
    forked.os.fork = fork
  assert len(pids) == 2
  for pid in pids:  # stopped and reaped: no longer our children
    with pytest.raises(ChildProcessError):
      os.waitpid(pid, os.WNOHANG)


def test_results_in_share_order_and_the_parent_takes_the_first():
  _in_fresh_process(_results_in_share_order)


def test_errors_and_deaths_are_raised_and_children_reaped():
  _in_fresh_process(_errors_are_raised)
