"""The shared exact match (csl_jax/evaluation.py), the CSL breakdown in
percentages, and the shared TensorBoard writer (csl_jax/summaries.py)."""

import math
import os

import pytest

from csl_jax import evaluation
from csl_jax.errors import InputError
from csl_jax.model.evaluation import Prediction, breakdown
from csl_jax.summaries import TensorBoardWriter


def test_normalize_and_exact_match():
  assert evaluation.normalize(b" A \t B\n") == "A B"
  got = evaluation.exact_match(["A  B", "C", b"D"], ["A B", "C D", "D "])
  assert got == {"exact_match": pytest.approx(200 / 3)}
  assert not evaluation.matches("A", None)
  with pytest.raises(ValueError):
    evaluation.exact_match(["a"], [])


def test_breakdown_is_in_percent_and_folds_whitespace():
  csl = [Prediction("a", "X  Y", "X Y"), Prediction("b", None, "Z"),
         Prediction("c", "W", "V"), Prediction("d", "U", "U")]
  other = [Prediction(p.input, "Z", None) for p in csl]
  out = breakdown(csl, other)
  assert out["coverage"] == 75.0
  assert out["accuracy"] == 50.0
  assert out["accuracy_on_covered"] == pytest.approx(200 / 3)
  assert out["other_accuracy"] == 25.0
  assert out["other_accuracy_on_not_covered"] == 100.0
  assert out["ensemble_accuracy"] == 75.0
  # The same number as the SeqIO metric on the ensemble's outputs.
  ensemble = [p.prediction or q.prediction for p, q in zip(csl, other)]
  assert evaluation.exact_match([p.target for p in csl], ensemble)[
      "exact_match"] == out["ensemble_accuracy"]


def test_other_predictions_in_decodes_column_order_are_read_as_such(
    tmp_path):
  """`decode` writes input, target, prediction; `parse` input, prediction,
  target. `evaluate --other` with a decode file scored its target as the
  prediction (100 %, silently): now the order is told by which column
  holds these targets."""
  from csl_jax.model import evaluation as model_evaluation  # pylint: disable=g-import-not-at-top
  csl = [Prediction("a", "X", "X"), Prediction("b", None, "Y"),
         Prediction("c", None, "Z")]
  rows = [("a", "X", "Q"), ("b", "Y", "Y"), ("c", "Z", "")]  # decode's
  path = tmp_path / "decode.tsv"
  path.write_text("".join("\t".join(r) + "\n" for r in rows),
                  encoding="utf-8")
  other = model_evaluation.read_predictions(str(path))
  out = breakdown(csl, other)
  assert out["other_accuracy"] == pytest.approx(100 / 3)  # b only
  assert out["other_accuracy_on_not_covered"] == 50.0
  assert out["ensemble_accuracy"] == pytest.approx(200 / 3)  # a, b
  # The same predictions in parse's order: the same scores.
  flipped = [Prediction(i, p or None, t) for i, t, p in rows]
  assert breakdown(csl, flipped) == out
  # Targets in neither column: not the same examples.
  wrong = [Prediction("a", "X", "X"), Prediction("b", "V", "W"),
           Prediction("c", "Z", "Z")]
  with pytest.raises(InputError, match="not the same examples") as e:
    breakdown(csl, wrong)
  assert e.value.line == 2


def test_disabled_writer_is_a_no_op():
  writer = TensorBoardWriter(None)
  assert not writer.enabled
  writer.scalar("a", 1.0, 1)
  writer.scalars({"b": 2.0}, 1, "train")
  writer.close()


def test_writer_writes_event_files(tmp_path):
  from csl_jax.experiments import plots  # pylint: disable=g-import-not-at-top
  directory = str(tmp_path / "tb")
  writer = TensorBoardWriter(directory)
  assert writer.enabled
  writer.scalar("train/loss", 1.0, 1)
  writer.scalars({"loss": 0.5, "accuracy": 0.9}, 2, prefix="eval")
  writer.scalars({"loss": 0.25}, 3, prefix="eval")
  writer.close()
  writer.close()  # Idempotent.
  assert any(f.startswith("events.") for f in os.listdir(directory))
  assert plots.read_scalars(directory, "train/loss") == [(1, 1.0)]
  assert plots.read_scalars(directory, "eval/loss") == [(2, 0.5), (3, 0.25)]
  assert plots.read_scalars(directory, "eval/accuracy") == [
      (2, pytest.approx(0.9))]
  # A file cut short by a kill: the whole records before the cut.
  (name,) = [f for f in os.listdir(directory) if f.startswith("events.")]
  with open(os.path.join(directory, name), "rb") as f:
    data = f.read()
  cut = tmp_path / "cut"
  cut.mkdir()
  (cut / name).write_bytes(data[:-5])
  assert plots.read_scalars(str(cut), "eval/loss") == [(2, 0.5)]


def test_single_scalars_reach_the_file_without_a_close(tmp_path,
                                                       monkeypatch):
  """A fit writes one scalar at a time and may be killed before it closes
  its writer: scalars older than FLUSH_SECONDS are on disk already."""
  from csl_jax import summaries  # pylint: disable=g-import-not-at-top
  from csl_jax.experiments import plots  # pylint: disable=g-import-not-at-top
  clock = [1000.0]
  monkeypatch.setattr(summaries.time, "time", lambda: clock[0])
  directory = str(tmp_path / "tb")
  writer = TensorBoardWriter(directory)
  for step in range(1, 4):  # 3 s apart: flushed at 6 s, not before
    clock[0] += 3.0
    writer.scalar("train/loss", float(step), step)
  assert plots.read_scalars(directory, "train/loss") == [(1, 1.0), (2, 2.0)]
  writer.close()
  assert len(plots.read_scalars(directory, "train/loss")) == 3


def test_a_resumed_writer_drops_the_steps_a_kill_lost(tmp_path,
                                                      monkeypatch):
  """Killed at step 8 after a checkpoint at 5, resumed from 5: TensorBoard
  drops the first process's steps 6-8 (trained again) and keeps 1-5."""
  from tensorboard.backend.event_processing import event_accumulator  # pylint: disable=g-import-not-at-top
  from csl_jax import summaries  # pylint: disable=g-import-not-at-top
  clock = [1000.0]  # the second process's file is named a minute later
  monkeypatch.setattr(summaries.time, "time", lambda: clock[0])
  directory = str(tmp_path / "tb")
  first = TensorBoardWriter(directory)
  for step in range(1, 9):
    first.scalar("train/loss", 1.0, step)
  first.close()
  clock[0] += 60.0
  second = TensorBoardWriter(directory, start_step=5)
  for step in range(6, 11):
    second.scalar("train/loss", 2.0, step)
  second.close()
  acc = event_accumulator.EventAccumulator(directory)
  acc.Reload()
  got = [(e.step, e.value) for e in acc.Scalars("train/loss")]
  assert got == [(s, 1.0) for s in range(1, 6)] + [
      (s, 2.0) for s in range(6, 11)]


def test_bleu_by_hand():
  ref = "the cat sat on the mat"
  assert evaluation.bleu([ref], [ref]) == {"bleu": pytest.approx(100.0)}
  # 5 of 5 unigrams, 3 of 4 bigrams, 2 of 3 trigrams, 1 of 2 4-grams match;
  # 5 tokens for 6: brevity penalty exp(1 - 6/5).
  want = 100 * (1 * 3 / 4 * 2 / 3 * 1 / 2) ** 0.25 * math.exp(1 - 6 / 5)
  got = evaluation.bleu([ref], ["the cat sat on mat"])["bleu"]
  assert got == pytest.approx(want) and round(got, 2) == 57.89
  # Clipping: "the" counts once; no bigram matches, so 0 without smoothing.
  assert evaluation.bleu(["the cat"], ["the the the the"]) == {"bleu": 0.0}
  # Corpus level: counts add over sentences before the precisions.
  pair = evaluation.bleu([ref, "a b c d"], ["the cat sat on mat", "a b c d"])
  want = 100 * (9 / 9 * 6 / 7 * 4 / 5 * 2 / 3) ** 0.25 * math.exp(1 - 10 / 9)
  assert pair["bleu"] == pytest.approx(want)
  with pytest.raises(ValueError):
    evaluation.bleu(["a"], [])
