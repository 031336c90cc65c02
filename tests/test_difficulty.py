"""Example difficulty (csl_jax/difficulty): k-means on points whose clusters
are known, scores counted by hand, quantile / mix / max subsets (Zhou et al.
2023 §5.1; acceptance Z8), and the `csl-jax difficulty` command."""

import json
import os
import re

import numpy as np
import pytest

from csl_jax.cli import main as cli
from csl_jax.data import tsv
from csl_jax.difficulty import kmeans as kmeans_lib
from csl_jax.difficulty import scores
from csl_jax.difficulty import subsets
from csl_jax.errors import InputError


def test_kmeans_finds_three_separated_clusters():
  centers = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
  offsets = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
  x = np.concatenate([c + offsets for c in centers])
  got, assign, inertia = kmeans_lib.kmeans(x, 3, n_init=5, seed=0)
  # Each cluster: its 4 points, its center, squared distances 4 x 1.
  assert inertia == pytest.approx(12.0)
  assert sorted(map(tuple, np.round(got, 6))) == sorted(map(tuple, centers))
  assert [len(set(assign[i:i + 4])) for i in (0, 4, 8)] == [1, 1, 1]
  # More clusters than distinct points: capped.
  assert len(kmeans_lib.kmeans(np.ones((5, 2)), 3, n_init=1)[0]) == 1


PAIRS = [("walk", "W"), ("walk twice", "W W"), ("jump", "J"),
         ("jump and walk", "J W"), ("walk and jump twice", "W J J"),
         ("look", "L"), ("look twice", "L L"), ("look and walk", "L W")]


def test_prototype_k_means_says_its_progress_in_a_log_file(monkeypatch,
                                                          caplog):
  """COGS's k-means ran 15-50 s without a word: now a line per
  initialization (a tenth of them), with the time left and the best
  inertia so far."""
  from csl_jax import progress  # pylint: disable=g-import-not-at-top
  monkeypatch.setenv(progress.ENV, "0")  # as in a log file
  with caplog.at_level("INFO"):
    scores.score("prototype", PAIRS, k=2)
  lines = [r.getMessage() for r in caplog.records
           if r.getMessage().startswith("k-means:")]
  assert [line.split(",")[0] for line in lines] == [
      f"k-means: {i}/10 init" for i in range(1, 11)]
  assert ", ETA " in lines[0] and "ETA" not in lines[-1]
  assert all(re.search(r" \(inertia=[\d.e+-]+\)$", line) for line in lines)


def test_complexity_scores_by_hand():
  assert scores.length(PAIRS).tolist() == [1, 2, 1, 3, 4, 1, 2, 3]
  # Primitives (Eq. 1): walk, jump, look.
  assert scores.primitives(PAIRS).tolist() == [1, 1, 1, 2, 2, 1, 1, 2]


def test_prototype_distance_is_far_for_the_odd_one_out():
  pairs = [("walk twice", "W W")] * 6 + [("look around right thrice", "X")]
  distance, figures = scores.prototype(pairs, k=1, n_init=2)
  assert figures["k"] == 1
  assert np.argmax(distance) == 6
  assert np.allclose(distance[:6], distance[0])
  # Identical inputs, one cluster each: distance 0.
  distance, _ = scores.prototype(pairs, k=2, n_init=2)
  assert np.allclose(distance, 0.0)


def test_prototype_says_when_k_is_capped(caplog):
  pairs = [("walk twice", "W W")] * 6 + [("look around right thrice", "X")]
  _, figures = scores.prototype(pairs, k=100, n_init=1)
  assert figures["k"] == 2
  assert ("k = 2 clusters, not 100: there are only 2 distinct input "
          "vectors") in caplog.text


def test_quantiles_are_disjoint_ordered_quarters_and_mix_is_half_half():
  score = np.random.default_rng(0).integers(0, 5, 103).astype(float)
  parts = subsets.quantiles(score, 4, seed=1)
  assert sorted(np.concatenate(parts).tolist()) == list(range(103))
  assert sorted(len(p) for p in parts) == [25, 26, 26, 26]
  for easier, harder in zip(parts, parts[1:]):
    assert score[easier].max() <= score[harder].min()
  mixed = subsets.mix(parts[0], parts[-1], seed=1)
  assert len(mixed) == len(parts[0])
  assert len(set(mixed) & set(parts[0])) == len(parts[0]) // 2
  assert len(set(mixed) & set(parts[-1])) == len(parts[0]) - \
      len(parts[0]) // 2


def test_quantile_boundaries_inside_equal_scores_are_said(tmp_path, caplog):
  """Lengths 1, 1, 1, 2, 2, 3, 3, 4 in quarters of 2: every boundary
  falls inside a run of equal scores (1, 2, 3), split by the tie-break;
  scores all equal (as prototype scores of data with no more distinct
  inputs than clusters) make the whole split a random one: said."""
  data = tmp_path / "data"
  data.mkdir()
  tsv.write_tsv(data / "train.tsv", PAIRS)
  summary = subsets.write(str(tmp_path / "out"), str(data), "length")
  assert summary["tied_boundaries"] == ["q0|q1", "q1|q2", "q2|q3"]
  assert "q0 and q1 both hold examples of score 1 (3 of them)" in caplog.text
  caplog.clear()
  tsv.write_tsv(data / "train.tsv", [(x, "W") for x in "abcdefgh"])
  summary = subsets.write(str(tmp_path / "same"), str(data), "length")
  assert summary["tied_boundaries"] == ["q0|q1", "q1|q2", "q2|q3"]
  assert "all 8 scores are 1: the quantiles and the mix are a seeded " \
      "random split" in caplog.text
  assert "both hold" not in caplog.text
  # Scores that part at every boundary: nothing to say.
  caplog.clear()
  tsv.write_tsv(data / "train.tsv", [(" ".join("w" * n), "W")
                                     for n in (1, 1, 2, 2, 3, 3, 4, 4)])
  assert subsets.write(str(tmp_path / "apart"), str(data),
                       "length")["tied_boundaries"] == []
  assert "difficulty:" not in caplog.text


def test_cli_writes_dataset_directories(tmp_path, capsys):
  data = tmp_path / "data"
  data.mkdir()
  tsv.write_tsv(data / "train.tsv", PAIRS)
  tsv.write_tsv(data / "test.tsv", [("run twice", "R R")])
  out = tmp_path / "out"
  assert cli.main(["difficulty", "--data_dir", str(data), "--out", str(out),
                   "--score", "length", "--max_score", "2"]) == 0
  summary = json.load(open(out / "summary.json"))
  assert summary["command"].startswith("csl-jax difficulty --data_dir")
  assert (out / "provenance.json").exists() and (out / "config.gin").exists()
  assert {k: v["size"] for k, v in summary["subsets"].items()} == {
      "q0": 2, "q1": 2, "q2": 2, "q3": 2, "mix": 2, "max_2": 5}
  # The hardest: length 4 and one of the two of length 3 (a seeded tie).
  hardest = [e.input for e in tsv.read_tsv(out / "q3" / "train.tsv")]
  assert "walk and jump twice" in hardest
  assert len({"jump and walk", "look and walk"} & set(hardest)) == 1
  assert [e.input for e in tsv.read_tsv(out / "max_2" / "train.tsv")] == [
      "walk", "walk twice", "jump", "look", "look twice"]
  for name in summary["subsets"]:
    assert (out / name / "test.tsv").read_text() == "run twice\tR R\n"
  assert subsets.read_scores(str(out)).tolist() == [1, 2, 1, 3, 4, 1, 2, 3]
  # Bad input: one line naming the directory, exit 2.
  capsys.readouterr()
  assert cli.main(["difficulty", "--data_dir", str(tmp_path / "none"),
                   "--out", str(out)]) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1 and err[0].endswith(
      f"{tmp_path / 'none'}: no such data directory")
  (tmp_path / "empty").mkdir()
  assert cli.main(["difficulty", "--data_dir", str(tmp_path / "empty"),
                   "--out", str(out)]) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1 and "empty" in err[0] and "no train.tsv" in err[0]


def test_learning_difficulty_by_hand(tmp_path):
  # Five evaluations; patience 2. Rows: examples A, B, C, D.
  evals = {100: [1, 0, 0, 1], 200: [1, 1, 0, 1], 300: [1, 0, 0, 0],
           400: [1, 1, 0, 0], 500: [1, 1, 0, 0]}
  runs = []
  for r, shift in enumerate((0, 1)):
    run = tmp_path / f"run{r}" / "learning"
    run.mkdir(parents=True)
    for step, right in evals.items():
      right = np.array(right, bool)
      if shift:  # the second seed learns A only from 300 on
        right[0] = step >= 300
      np.save(run / f"step_{step:08d}.npy", right)
    runs.append(str(run.parent))
  values, figures = scores.learning(runs, patience=2)
  # A: 100 and 300; B: right at 400 and 500 (200 alone is no streak);
  # C: never, the last step; D: 100 and 200 in a row.
  assert values.tolist() == [200.0, 400.0, 500.0, 100.0]
  assert figures == {"runs": 2, "patience": 2}
  with pytest.raises(Exception, match="track_train_every"):
    scores.learning([str(tmp_path)])
  with pytest.raises(InputError, match="needs the trained runs"):
    scores.score("learning", [("a", "b")])  # no --runs
  # A step file of another size: named, not a numpy traceback.
  np.save(tmp_path / "run1" / "learning" / "step_00000600.npy",
          np.ones(3, bool))
  with pytest.raises(InputError, match=r"step_00000600\.npy: \(3,\) "
                     r"tracked examples"):
    scores.learning(runs, patience=2)
  with pytest.raises(InputError, match="k .* must be >= 1"):
    scores.score("prototype", [("a", "b")], k=0)
  # A step file that is not an array (here, a pickle): named, one line.
  bad = tmp_path / "run1" / "learning" / "step_00000600.npy"
  np.save(bad, np.array([{"a": 1}], dtype=object), allow_pickle=True)
  with pytest.raises(InputError, match=r"step_00000600\.npy: not a saved "
                     r"array"):
    scores.learning(runs, patience=2)


def test_learning_difficulty_with_pinned_examples(tmp_path):
  # The runs tracked all 8 training pairs in file order (12 evaluations,
  # patience 10: an example right from step s <= 300 on scores s, the
  # others the last step). The hardest (index 4) is pinned: the quantiles
  # hold the other 7, each with its own score.
  data = tmp_path / "data"
  data.mkdir()
  tsv.write_tsv(data / "train.tsv", PAIRS)
  run = tmp_path / "run" / "learning"
  run.mkdir(parents=True)
  learned_at = [100, 200, 100, 300, 1100, 100, 200, 300]
  for step in range(100, 1300, 100):
    np.save(run / f"step_{step:08d}.npy",
            np.array([step >= s for s in learned_at]))
  pin = tmp_path / "pin.tsv"
  tsv.write_tsv(pin, [PAIRS[4]])
  out = tmp_path / "out"
  summary = subsets.write(str(out), str(data), "learning", num=2,
                          runs=[str(run.parent)], pin=str(pin))
  assert summary["num_pinned"] == 1
  rows = [line.split("\t") for line in
          (out / "scores.tsv").read_text(encoding="utf-8").splitlines()]
  assert [(r[0], float(r[2])) for r in rows] == [
      (x, float(s)) for i, ((x, _), s) in enumerate(zip(PAIRS, learned_at))
      if i != 4]
  assert summary["subsets"]["q1"]["score_max"] == 300.0


def test_pinned_examples_are_in_every_subset_and_out_of_the_quantiles(
    tmp_path, capsys):
  data = tmp_path / "data"
  data.mkdir()
  tsv.write_tsv(data / "train.tsv", PAIRS)
  pin = tmp_path / "pin.tsv"
  # The hardest example (length 4), pinned: the 7 others make the quantiles.
  tsv.write_tsv(pin, [("walk and jump twice", "W J J")])
  out = tmp_path / "out"
  summary = subsets.write(str(out), str(data), "length", pin=str(pin))
  assert summary["num_pinned"] == 1 and summary["num_train"] == 8
  sizes = {k: v["size"] for k, v in summary["subsets"].items()}
  assert sizes == {"q0": 3, "q1": 3, "q2": 3, "q3": 2, "mix": 3}
  unpinned = []
  for name in sizes:
    rows = [e.input for e in tsv.read_tsv(out / name / "train.tsv")]
    assert rows[-1] == "walk and jump twice"
    if name.startswith("q"):
      unpinned += rows[:-1]
  assert sorted(unpinned) == sorted(x for x, _ in PAIRS
                                    if x != "walk and jump twice")
  tsv.write_tsv(pin, [("walk", "W"), ("fly", "F")])
  capsys.readouterr()
  assert cli.main(["difficulty", "--data_dir", str(data), "--out",
                   str(out), "--score", "length", "--pin", str(pin)]) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1 and "pin.tsv:2" in err[0]
