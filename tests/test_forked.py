"""Shares of work in forked children and the parent."""

import os

import pytest

from csl_jax.induction import forked

_SEEN = []  # written by whoever computes a share


def _square_all(share):
  _SEEN.append(os.getpid())
  return [x * x for x in share]


def test_results_in_share_order_and_the_parent_takes_the_first():
  _SEEN.clear()
  shares = [[1, 2], [3], [], [4, 5, 6]]
  assert forked.fork_map(_square_all, shares) == [[1, 4], [9], [],
                                                  [16, 25, 36]]
  # Only the first share was computed in this process.
  assert _SEEN == [os.getpid()]
  assert forked.fork_map(_square_all, [[7]]) == [[49]]
  assert forked.fork_map(_square_all, []) == []


def test_a_large_result_comes_back_whole():
  # More than a pipe's buffer: the child blocks until the parent reads.
  big = list(range(200_000))
  assert forked.fork_map(lambda s: s, [[], big])[1] == big


def _fail_in_child(share):
  if share == "child":
    raise ValueError("bad share")
  return share


def _die_in_child(share):
  if share == "child":
    os._exit(3)  # pylint: disable=protected-access
  return share


def test_a_child_error_or_death_is_raised_with_its_cause():
  with pytest.raises(RuntimeError, match="ValueError: bad share"):
    forked.fork_map(_fail_in_child, ["parent", "child"])
  with pytest.raises(RuntimeError, match="died"):
    forked.fork_map(_die_in_child, ["parent", "child"])


def test_a_parent_error_stops_and_reaps_the_children(monkeypatch):
  pids = []
  fork = os.fork

  def recorded_fork():
    pid = fork()
    if pid:
      pids.append(pid)
    return pid

  monkeypatch.setattr(forked.os, "fork", recorded_fork)

  def fail_in_parent(share):
    if share == "parent":
      raise KeyError("parent")
    return share

  with pytest.raises(KeyError):
    forked.fork_map(fail_in_parent, ["parent", "child", "child"])
  assert len(pids) == 2
  for pid in pids:  # reaped: no longer our children
    with pytest.raises(ChildProcessError):
      os.waitpid(pid, os.WNOHANG)
