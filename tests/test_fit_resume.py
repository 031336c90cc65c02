"""`model.train.fit` checkpoints: exact resume, and no stale resume.

A kill is simulated by snapshotting, in `on_step(k)`, the checkpoint file as
it is then (written after step k - 1, or absent): that is what a run killed
during step k leaves behind. Resuming from it must end with the parameters
and history of the uninterrupted run, bit for bit.
"""

import dataclasses
import os
import signal

import numpy as np
import pytest

from csl_jax import stop_request
from csl_jax.model import train
from csl_jax.qcfg.rules import parse_rules
from csl_jax.testing import toy_language

RULES = parse_rules(toy_language.GRAMMAR)
PAIRS = [(x.split(), y.split()) for x, y in toy_language.sentences()]
# Three equal-shape batches (one compile); 2 restarts for 4 steps, so the
# first pass mean of the single-model loop (step 6) includes a restart
# step's loss; converges after some 40 steps.
CONFIG = train.FitConfig(num_states=2, learning_rate=0.1, batch_size=26,
                         num_restarts=2, restart_steps=4, patience=3,
                         tolerance=1e-2, num_steps=1000, checkpoint_every=1)
MAX_NTS = 2


def _fit(directory, config=CONFIG, pairs=PAIRS, on_step=None):
  os.makedirs(directory, exist_ok=True)
  return train.fit(RULES, pairs, config, MAX_NTS,
                   os.path.join(directory, "ckpt.msgpack"), on_step)


def _assert_same(a, b):
  (params_a, history_a, _), (params_b, history_b, _) = a, b
  assert set(params_a) == set(params_b)
  for k in params_a:
    x, y = np.asarray(params_a[k]), np.asarray(params_b[k])
    assert x.dtype == y.dtype and np.array_equal(x, y), k
  assert history_a == history_b


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
  """The reference run, with the checkpoint file as of each step's start."""
  directory = str(tmp_path_factory.mktemp("uninterrupted"))
  path = os.path.join(directory, "ckpt.msgpack")
  snapshots = {}

  def on_step(step, loss):
    del loss
    if os.path.exists(path):
      with open(path, "rb") as f:
        snapshots[step] = f.read()
    else:
      snapshots[step] = None

  result = _fit(directory, on_step=on_step)
  with open(path, "rb") as f:
    snapshots["converged"] = f.read()
  return directory, result, snapshots


def test_reference_run_converges_after_the_restarts(uninterrupted):
  _, (_, history, data), snapshots = uninterrupted
  assert len(data.batches) == 3
  final = len(history)
  assert CONFIG.restart_steps + 3 * CONFIG.patience < final < 200
  assert [s for s, _ in history] == list(range(1, final + 1))
  # Nothing is checkpointed during the restarts.
  assert all(snapshots[k] is None
             for k in range(1, CONFIG.restart_steps + 2))


@pytest.mark.parametrize("kill", ["restarts", "first_pass", "middle",
                                  "within_patience", "last_step",
                                  "converged"])
def test_killed_run_resumes_exactly(uninterrupted, tmp_path, kill):
  _, reference, snapshots = uninterrupted
  final = len(reference[1])
  step = {"restarts": 3,  # no checkpoint yet: starts again
          "first_pass": CONFIG.restart_steps + 3,  # after the 1st pass mean
          "middle": final // 2,
          "within_patience": final - 2 * 3 + 1,  # inside the last 3 passes
          "last_step": final,  # checkpoint of final - 1
          "converged": "converged"}[kill]  # the finished run's
  snapshot = snapshots[step]
  if snapshot is not None:
    (tmp_path / "ckpt.msgpack").write_bytes(snapshot)
  steps = []
  resumed = _fit(str(tmp_path), on_step=lambda s, _: steps.append(s))
  _assert_same(resumed, reference)
  # It went on from the checkpoint, not from scratch.
  start = {"restarts": 0, "converged": final}.get(kill)
  start = step - 1 if start is None else start
  assert steps == list(range(start + 1, final + 1))


def test_a_run_killed_in_its_restarts_says_it_starts_again(uninterrupted,
                                                          tmp_path, caplog):
  """Killed during the restarts (never checkpointed), the pipeline's rerun
  said "resuming an interrupted run", then trained from step 0: it now says
  so, and ends as the uninterrupted run."""
  # pylint: disable=g-import-not-at-top
  from csl_jax.methods import base
  from csl_jax.pipeline import cache
  # pylint: enable=g-import-not-at-top
  _, reference, _ = uninterrupted
  d = str(tmp_path / "fit")
  kill, results = [True], []

  def run(directory):
    def on_step(step, loss):
      del loss
      if kill[0] and step == CONFIG.restart_steps - 1:
        raise KeyboardInterrupt  # the process dies here
    results.append(_fit(directory, on_step=on_step))
    return {}

  stage = base.Stage("fit", [], {}, run)
  with pytest.raises(KeyboardInterrupt):
    cache.run_stage(stage, d)
  kill[0] = False
  with caplog.at_level("INFO"):
    cache.run_stage(stage, d)
  said = [r.getMessage() for r in caplog.records]
  assert not [m for m in said if "resum" in m]
  assert (f"fit: starting at step 0, no checkpoint at "
          f"{os.path.join(d, 'ckpt.msgpack')} (the restarts, steps "
          f"1-{CONFIG.restart_steps}, write none: a run stopped in them "
          f"starts again)") in said
  _assert_same(results[0], reference)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_checkpoints_the_step_reached(uninterrupted,
                                                       tmp_path, signum,
                                                       python_sigint):  # pylint: disable=unused-argument
  """A newcomer's SIGTERM in `fit` exited without a word, resuming from
  the last periodic checkpoint: now the step reached is saved first, and
  the rerun ends as the uninterrupted run does, bit for bit."""
  _, reference, _ = uninterrupted
  at = len(reference[1]) // 2
  config = dataclasses.replace(CONFIG, checkpoint_every=1000)

  def on_step(step, loss):
    del loss
    if step == at:
      os.kill(os.getpid(), signum)

  with pytest.raises((KeyboardInterrupt, SystemExit)) as stopped:
    _fit(str(tmp_path), config, on_step=on_step)
  if signum == signal.SIGINT:
    assert str(stopped.value) == (f"fit stopped at step {at} (checkpointed);"
                                  " the same command resumes there")
  else:
    assert stopped.value.code == stop_request.EXIT_CODE
  assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
  steps = []
  _assert_same(_fit(str(tmp_path), config,
                    on_step=lambda s, _: steps.append(s)), reference)
  assert steps[0] == at + 1


def test_bookkeeping_fields_do_not_block_resuming(uninterrupted, tmp_path):
  _, reference, snapshots = uninterrupted
  (tmp_path / "ckpt.msgpack").write_bytes(snapshots["converged"])
  steps = []
  config = dataclasses.replace(CONFIG, checkpoint_every=7, max_unary=3)
  _assert_same(_fit(str(tmp_path), config, on_step=lambda s, _:
                    steps.append(s)), reference)
  assert not steps


@pytest.mark.parametrize("change", ["data", "counts", "learning_rate",
                                    "seed"])
def test_other_data_or_config_starts_afresh(uninterrupted, tmp_path,
                                            change):
  _, reference, snapshots = uninterrupted
  config, pairs = CONFIG, PAIRS
  if change == "data":
    pairs = PAIRS[:-5]
  elif change == "counts":
    pairs = PAIRS + PAIRS[:3]
  elif change == "learning_rate":
    config = dataclasses.replace(CONFIG, learning_rate=0.2)
  else:
    config = dataclasses.replace(CONFIG, seed=1)
  fresh = _fit(str(tmp_path / "fresh"), config, pairs)
  # The old directory holds the converged checkpoint of CONFIG on PAIRS.
  stale = tmp_path / "stale"
  stale.mkdir()
  (stale / "ckpt.msgpack").write_bytes(snapshots["converged"])
  rerun = _fit(str(stale), config, pairs)
  _assert_same(rerun, fresh)
  assert rerun[1] != reference[1]
  # The stale checkpoint was overwritten: the same settings now resume.
  assert ((stale / "ckpt.msgpack").read_bytes() ==
          (tmp_path / "fresh" / "ckpt.msgpack").read_bytes())


def test_initial_optimizer_state_is_optaxs_own():
  import jax  # pylint: disable=g-import-not-at-top
  import optax  # pylint: disable=g-import-not-at-top
  params = train.init_params(5, 3, 2, 0.5, 0, num_shapes=2)
  optimizer = optax.adam(0.1)
  ours, theirs = (train._init_state(optimizer, params),  # pylint: disable=protected-access
                  optimizer.init(params))
  assert (jax.tree_util.tree_structure(ours)
          == jax.tree_util.tree_structure(theirs))
  for a, b in zip(jax.tree_util.tree_leaves(ours),
                  jax.tree_util.tree_leaves(theirs)):
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_array_equal(a, np.asarray(b))


@pytest.mark.parametrize("torn", [b"\x81\xa3", b"not msgpack at all"])
def test_a_torn_checkpoint_starts_afresh(uninterrupted, tmp_path, torn):
  # Cut short (a full disk) or another tool's bytes: a fit from nothing,
  # not a msgpack traceback.
  _, reference, _ = uninterrupted
  (tmp_path / "ckpt.msgpack").write_bytes(torn)
  _assert_same(_fit(str(tmp_path)), reference)
