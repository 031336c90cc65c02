"""Tests for choosing a run's checkpoint on a dev set
(csl_jax/seq2seq/model_selection.py): GOODDEV's rows, the exact match of
ids, the best-so-far kept across a restart. The trainer's side:
tests/test_seq2seq.py (`trained` has a dev set)."""

import json

import numpy as np
import pytest

from csl_jax.errors import InputError
from csl_jax.seq2seq import model_selection as ms


def test_gooddev_rows_a_seeded_tenth():
  rows = ms.gooddev_rows(7706, 0.1, 0)  # SCAN addprim_jump's test set
  assert len(rows) == 771 and len(set(rows.tolist())) == 771
  assert rows.tolist() == sorted(rows.tolist())
  assert 0 <= rows[0] and rows[-1] < 7706
  np.testing.assert_array_equal(rows, ms.gooddev_rows(7706, 0.1, 0))
  assert rows.tolist() != ms.gooddev_rows(7706, 0.1, 1).tolist()
  assert ms.gooddev_rows(10, 0.1, 0).size == 1
  assert ms.gooddev_rows(3, 0.9, 0).size == 2  # one row left to report on
  assert ms.dev_rows({"part": "dev", "fraction": None}, 4) == [0, 1, 2, 3]
  assert ms.dev_rows({"part": "test", "fraction": 0.5, "seed": 0}, 4) == \
      ms.gooddev_rows(4, 0.5, 0).tolist()
  for bad in (0.0, 1.0, -0.1):
    with pytest.raises(InputError, match="fraction"):
      ms.gooddev_rows(100, bad, 0)
  with pytest.raises(InputError, match="at least 2"):
    ms.gooddev_rows(1, 0.1, 0)


def test_exact_match_of_ids_cut_at_eos():
  assert ms.before_eos([5, 6, 1, 0, 0]) == [5, 6]
  assert ms.before_eos(np.array([5, 6])) == [5, 6]
  assert ms.exact_match([[5, 6], [7], []], [[5, 6], [7, 7], []]) == \
      pytest.approx(200 / 3)
  assert ms.exact_match([], []) == 0.0
  with pytest.raises(ValueError):
    ms.exact_match([[1]], [])
  a = ms.dev_digest([[3, 1]], [[4, 1]])
  assert a == ms.dev_digest([np.array([3, 1])], [np.array([4, 1])])
  assert a != ms.dev_digest([[3, 1]], [[4, 4, 1]])
  assert a != ms.dev_digest([[3, 1], [4, 1]], [])  # not just concatenated


def _params(v):
  return {"enc": {"w": np.full((2, 3), v, np.float32)},
          "b": np.array([v], np.float32)}


def test_selector_keeps_the_best_later_on_ties_and_survives_a_restart(
    tmp_path):
  scores = iter([20.0, 50.0, 50.0, 10.0])
  sel = ms.Selector(str(tmp_path), lambda p: next(scores), "d1")
  for step in (1, 2, 3, 4):
    sel(_params(float(step)), step)
  assert sel.summary() == {"selected_step": 3, "dev_accuracy": 50.0,
                           "dev_history": [[1, 20.0], [2, 50.0], [3, 50.0],
                                           [4, 10.0]]}
  got = ms.load_selected(str(tmp_path), _params(0.0))
  np.testing.assert_array_equal(got["enc"]["w"], np.full((2, 3), 3.0))
  assert got["b"].dtype == np.float32
  # A new process resuming at step 2 forgets the scores it will redo,
  # keeps the best file as it is, and needs no score for step 2.
  again = ms.Selector(str(tmp_path), lambda p: 0.0, "d1")
  assert (again.best_step, again.best_score) == (3, 50.0)
  assert not again.resume(2)
  assert again.history == [[1, 20.0], [2, 50.0]]
  # Killed between a checkpoint and its score: resuming there scores it.
  with open(tmp_path / ms.HISTORY_FILE, "w") as f:
    json.dump({"history": [[1, 20.0]]}, f)
  assert ms.Selector(str(tmp_path), lambda p: 0.0, "d1").resume(2)
  with pytest.raises(InputError, match="another dev set"):
    ms.Selector(str(tmp_path), lambda p: 0.0, "d2")
  with pytest.raises(InputError, match="another model"):
    ms.load_selected(str(tmp_path), {"b": np.zeros(1, np.float32)})
  with pytest.raises(InputError, match="no selected checkpoint"):
    ms.load_selected(str(tmp_path / "none"), _params(0.0))
