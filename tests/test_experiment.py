"""Tests for `csl-jax experiment` (csl_jax/experiments): grid expansion,
cell keys and resume after a kill, the table math, per-category scoring,
the pretrain-then-fine-tune regime (and the trainer's `init_from`), and a
bad gin file's one-line error. Tiny model, tiny grid, tiny data; no network.
"""

import dataclasses
import json
import math
import os
import random

import gin
import pytest

import csl_jax
from csl_jax import provenance
from csl_jax.testing import tf_data

seqio, tf = tf_data.seqio_and_tensorflow()

# pylint: disable=g-import-not-at-top
import jax
from csl_jax.cli import main as cli
from csl_jax.data import tsv
from csl_jax.errors import InputError
from csl_jax.errors import Pending
from csl_jax.experiments import cell as cell_lib
from csl_jax.experiments import grid
from csl_jax.experiments import results
from csl_jax.experiments import runner
from csl_jax.methods import base as method_base
from csl_jax.seq2seq import train as train_lib
from csl_jax.testing import files
from tasks import registry
# pylint: enable=g-import-not-at-top

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _Shuffle:
  """A test method: the training pairs, shuffled by SampleConfig.seed (so
  the cell's seed reaches synthetic sampling), as candidates."""
  name = "shuffle"

  def stages(self, data, workdir):
    del workdir
    seed = gin.query_parameter("SampleConfig.seed") if _bound_seed() else 0

    def run(directory):
      pairs = tsv.read_tsv(data.train)
      random.Random(seed).shuffle(pairs)
      path = os.path.join(directory, "candidates.tsv")
      tsv.write_tsv(path, pairs)
      return {"candidates": path, "seed": seed}

    return [method_base.Stage("shuffle", [data.train], {"seed": seed}, run)]

  def report_rows(self, summaries):
    return [("seed", str(summaries["shuffle"]["seed"]))]


def _bound_seed():
  try:
    gin.query_parameter("SampleConfig.seed")
    return True
  except ValueError:
    return False


method_base.add(_Shuffle.name, _Shuffle)


class _Elsewhere:
  """A test method whose candidates come from elsewhere (as pcfg_bt's with
  T5X): it waits, saying what to run."""
  name = "elsewhere"
  ready = ""

  def stages(self, data, workdir):
    del data, workdir

    def run(directory):
      raise Pending(directory, how=f"put the pairs in {self.ready}")

    return [method_base.Stage("import", [], {}, run)]

  def report_rows(self, summaries):
    del summaries
    return []


method_base.add(_Elsewhere.name, _Elsewhere)

TINY = {"d_model": 16, "num_heads": 2, "d_ff": 32, "num_layers": 1,
        "dropout": 0.0, "max_input_len": 6, "max_target_len": 6}
STEPS = 3


@pytest.fixture
def tiny(clear_gin):  # pylint: disable=unused-argument,redefined-outer-name
  from csl_jax.sampling import sampler  # pylint: disable=g-import-not-at-top,unused-import
  for k, v in TINY.items():
    gin.bind_parameter(f"seq2seq.Seq2SeqConfig.{k}", v)
  for k, v in {"batch_size": 8, "num_steps": STEPS, "warmup_steps": 1,
               "log_every": 1, "checkpoint_every": 100,
               "bucket_width": 0}.items():
    gin.bind_parameter(f"seq2seq.TrainConfig.{k}", v)
  yield


@pytest.fixture
def toy_data(tmp_path):
  """Reverse three letters: 40 train, 10 test pairs."""
  return files.write_reversal_toy(tmp_path)


def _run(out, data_dir, **kw):
  args = dict(dataset="tsv", splits=["toy"], data_dir=data_dir,
              methods=["shuffle"], seeds=[0], beam_size=1,
              decode_batch_size=16)
  args.update(kw)
  return runner.experiment(out, **args)


def _records(out):
  with open(os.path.join(out, results.RESULTS_JSONL)) as f:
    return [json.loads(line) for line in f]


# ---- grid ---------------------------------------------------------------

def test_grid_expansion():
  rows = grid.data_rows(["csl", "geca"], None, "random", 50)
  assert rows == ["original", "csl", "geca", "csl_random_50",
                  "geca_random_50"]
  assert grid.data_rows(["csl"], ["original", "csl"], None, None) == [
      "original", "csl"]
  # Several selectors: a subset row per method and selector.
  assert grid.data_rows(["csl"], None, "random,uat", 9) == [
      "original", "csl", "csl_random_9", "csl_uat_9"]
  assert grid.data_rows(["csl"], None, ["cmaxent"], 9)[-1] == \
      "csl_cmaxent_9"
  with pytest.raises(InputError, match="unknown selector 'nope'"):
    grid.data_rows(["csl"], None, ["random", "nope"], 9)
  # A newcomer's `select` without `select_num` once listed `csl_uat_None`.
  with pytest.raises(InputError, match="experiment.select needs "
                     "experiment.select_num"):
    grid.data_rows(["csl"], ["csl_uat_0"], ["uat"], None)
  with pytest.raises(InputError, match=r"size k >= 1 .*, not -5"):
    grid.data_rows(["csl"], None, ["uat"], -5)
  with pytest.raises(InputError, match="needs experiment.select and "
                     "experiment.select_num"):
    grid.data_rows(["csl"], ["csl_uat_7"], None, None)
  cells = grid.expand(["jump", "length"], ["original", "csl"], [0, 1, 2])
  assert len(cells) == 12
  assert cells[0] == grid.Cell("jump", "original", 0)
  assert cells[3] == grid.Cell("jump", "csl", 0)
  assert cells[6].split == "length"
  assert cells[4].path == "jump/csl/seed_1"
  with pytest.raises(InputError, match="geca"):
    grid.data_rows(["csl"], ["geca"], None, None)
  with pytest.raises(InputError, match="seeds"):
    grid.check_seeds([-1])
  # A name given twice is one row, split or seed: a repeated cell would
  # count twice in the means and Welch's tests.
  assert grid.check_names("methods", ["csl", "geca", "csl"]) == [
      "csl", "geca"]
  assert grid.data_rows(["csl", "csl"], None, None, None) == [
      "original", "csl"]
  assert grid.check_seeds([0, 1, 0]) == [0, 1]
  for kind, value in (("splits", 5), ("methods", {"csl": 1})):
    with pytest.raises(InputError, match=f"experiment.{kind} must be a "
                       f"list of str"):
      grid.check_names(kind, value)
  with pytest.raises(InputError, match="experiment.seeds must be a list"):
    grid.check_seeds(1.5)
  # `seeds = 3` is not three seeds, nor seed 3 alone: refused.
  with pytest.raises(InputError, match=r"e\.g\. \[0, 1, 2\], not 3 \(one "
                     r"seed: \[3\]\)"):
    grid.check_seeds(3)


# ---- table math -----------------------------------------------------------

def _score_records(rows):
  """Result records of (split, data, seed, test exact match)."""
  return [{"split": sp, "data": d, "seed": s, "accuracy": a,
           "accuracy_by_part": {"test": a}} for sp, d, s, a in rows]


def test_mean_std_on_known_numbers():
  s = results.mean_std([50.0, 60.0, 70.0])
  assert s == {"mean": 60.0, "std": 10.0, "n": 3}
  assert results.cell_text(s) == "60.00 ± 10.00 (3)"
  assert results.mean_std([42.0]) == {"mean": 42.0, "std": 0.0, "n": 1}
  records = _score_records([
      ("jump", "original", 0, 2.0), ("jump", "original", 1, 4.0),
      ("jump", "csl", 0, 99.0), ("jump", "csl", 1, 100.0),
      ("length", "csl", 0, 90.0)])
  table = results.aggregate(records)
  assert table["original"]["jump"]["mean"] == 3.0
  assert abs(table["original"]["jump"]["std"] - 2 ** 0.5) < 1e-12
  md = results.markdown_table(table, ["original", "csl"])
  assert md.splitlines()[0] == "| training data | jump | length |"
  assert "| original | 3.00 ± 1.41 (2) | – |" in md
  assert "| csl | 99.50 ± 0.71 (2) | 90.00 (1) |" in md  # no spread of one
  # Per-part fields; a record without one (an older run) is left out.
  for r, ppl in zip(records, (1.5, 2.5, 1.1, None, 1.3)):
    if ppl is not None:
      r["perplexity_by_part"] = {"test": ppl}
  ppl = results.aggregate(records, "perplexity")
  assert ppl["original"]["jump"] == {"mean": 2.0, "std": 2 ** -0.5, "n": 2}
  assert ppl["csl"]["jump"]["n"] == 1 and ppl["csl"]["length"]["n"] == 1


def test_a_row_with_no_finished_cell_is_shown_empty(tmp_path):
  """results.md lists every row asked for: one whose cells wait (on an
  accelerator, say) is "–", not missing as if never asked for."""
  records = [dict(r, train_seconds=1.0, decode_seconds=1.0, num_original=3,
                  num_synthetic=4)
             for r in _score_records([("jump", "csl", 0, 99.0)])]
  meta = {"num_cells": 2}
  written = results.write_tables(str(tmp_path), records, ["original", "csl"],
                                 meta, {})
  with open(written["markdown"], encoding="utf-8") as f:
    md = f.read()
  assert "| original | – |" in md and "| csl | 99.00 (1) |" in md
  assert "1 of 2 cells finished" in md
  assert "dataset None, regime" in md  # no loader options: none said
  # What produced it (provenance.json has the rest).
  assert (f"; written by csl_jax {provenance.describe()}, jax "
          f"{provenance.packages()['jax']}, numba "
          f"{provenance.packages()['numba']} (provenance.json).") in md
  # The loader's options (SCAN*'s difficulty knobs) are the grid's setting.
  # An option left unset (None: the loader's default) is not one.
  for options, said in (({"max_len": 8, "test_max_len": 8,
                          "max_primitives": None},
                         "dataset scan_star (max_len 8, test_max_len 8), "),
                        ({"max_primitives": None}, "dataset scan_star, ")):
    meta.update(dataset="scan_star", dataset_options=options)
    written = results.write_tables(str(tmp_path), records,
                                   ["original", "csl"], meta, {})
    with open(written["markdown"], encoding="utf-8") as f:
      assert said + "regime" in f.read()


def test_difference_to_original_by_hand():
  # [1, 2, 3] vs [4, 5, 6]: difference 3, each variance 1, so the standard
  # error is sqrt(1/3 + 1/3) = 0.8165, t = 3.674 on (2/3)^2 / (2 (1/3)^2 /
  # 2) = 4 degrees of freedom: p = 0.0213, the 95% interval 3 -+ 2.776 *
  # 0.8165 = [0.733, 5.267].
  d = results.welch([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
  assert d["delta"] == 3.0 and d["n"] == 3
  assert d["p"] == pytest.approx(0.0213, abs=5e-5)
  assert (d["low"], d["high"]) == (pytest.approx(0.733, abs=5e-4),
                                   pytest.approx(5.267, abs=5e-4))
  from scipy import stats  # pylint: disable=g-import-not-at-top
  assert d["p"] == pytest.approx(stats.ttest_ind(
      [4, 5, 6], [1, 2, 3], equal_var=False).pvalue)
  assert results.difference_text(d) == "+3.00 [+0.73, +5.27] p = 0.021"
  # One seed, or no spread: the difference alone.
  for a, b in (([1.0], [2.0, 3.0]), ([0.0, 0.0], [0.0, 0.0])):
    d = results.welch(a, b)
    assert math.isnan(d["p"]) and math.isnan(d["low"])
  assert results.difference_text(results.welch([1.0], [0.5])) == "-0.50"
  records = _score_records([("jump", d, i, a + 3 * (d == "csl"))
                            for d in ("original", "csl")
                            for i, a in enumerate((1.0, 2.0, 3.0))]
                           + [("length", "csl", 0, 90.0)])
  diff = results.difference_table(records)
  assert list(diff) == ["csl"] and list(diff["csl"]) == ["jump"]
  md = results.markdown_table(diff, ["original", "csl"],
                              text=results.difference_text)
  assert "| csl | +3.00 [+0.73, +5.27] p = 0.021 |" in md
  assert results.difference_table(records[3:]) == {}  # no original row
  # Another base row (experiment.compare_to): the differences turn over.
  back = results.difference_table(records, "csl")
  assert list(back) == ["original"] and back["original"]["jump"][
      "delta"] == -3.0 and "length" not in back["original"]


def test_no_spread_and_no_difference_are_exact_in_floats():
  """Seeds that agree have no spread, even where their float mean is not
  exact (3 × 0.1 sums to 0.30000000000000004): a rounding residue of 1e-17
  read as spread made Welch's t enormous, "[+0.10, +0.10] p = 1e-34" for
  rows whose seeds cannot say. Rows of the same mean differ by +0.00, not
  "-0.00" from the order of a float sum."""
  same = results.mean_std([0.1, 0.1, 0.1])
  assert same["std"] == 0.0 and same["mean"] == 0.1
  d = results.welch([0.1, 0.1, 0.1], [0.2, 0.2, 0.2])
  assert math.isnan(d["p"]) and math.isnan(d["low"])
  assert results.difference_text(d) == "+0.10"
  assert results.difference_text(results.welch([0.1] * 3, [0.0] * 3)) == \
      "-0.10"
  # A COGS category's 1 of 1000 in every seed, as an exact match would be.
  agree = [100.0 * 1 / 1000] * 3
  assert results.mean_std(agree)["std"] == 0.0
  assert results.cell_text(results.mean_std(agree)) == "0.10 ± 0.00 (3)"
  d = results.welch([0.1, 0.2, 0.3], [0.3, 0.2, 0.1])
  assert d["delta"] == 0.0 and d["p"] == pytest.approx(1.0)
  assert results.difference_text(d).startswith("+0.00 [")
  # A seed without a score (NaN) makes the cell NaN, not a traceback.
  s = results.mean_std([1.0, float("nan"), 2.0])
  assert math.isnan(s["mean"]) and math.isnan(s["std"]) and s["n"] == 3


# ---- per-category scoring -------------------------------------------------

def test_score_by_length_and_category():
  rows = [("a", "x y", "x y"), ("b", "x", "z"), ("c", "x  y", "x y"),
          ("d", "p q r", "p q")]
  cats = ["pp_recursion", "pp_recursion", "cp_recursion", "cp_recursion"]
  s = results.score(rows, cats)
  assert s["accuracy"] == 50.0
  assert s["by_length"] == {"1": [1, 0], "2": [2, 2], "3": [1, 0]}
  assert s["by_category"] == {"cp_recursion": [2, 1],
                              "pp_recursion": [2, 1]}
  def record(split, by_category, parts=("gen",)):
    return {"data": "csl", "split": split, "by_category": by_category,
            "accuracy_by_part": {p: 0.0 for p in parts}}
  records = [record("s", {"gen": s["by_category"]}),
             record("s", {"gen": {"cp_recursion": [2, 2],
                                  "pp_recursion": [2, 0]}})]
  table = results.category_table(records)
  assert table["csl"]["cp_recursion"] == {"mean": 75.0, "std": math.sqrt(
      2 * 25.0 ** 2), "n": 2}
  assert table["csl"]["pp_recursion"]["mean"] == 25.0
  # Another split's (or part's) categories are its own, not more seeds.
  records.append(record("t", {"gen": {"cp_recursion": [1, 0]}}))
  records.append(record("s", {"gen": {"cp_recursion": [1, 1]},
                              "test": {"cp_recursion": [1, 0]}},
                        parts=("gen", "test")))
  table = results.category_table(records)
  assert {c: v["n"] for c, v in table["csl"].items()} == {
      "s: cp_recursion": 2, "s: pp_recursion": 2, "t: cp_recursion": 1,
      "s/gen: cp_recursion": 1, "s/test: cp_recursion": 1}
  with pytest.raises(InputError, match="align"):
    results.score(rows, cats[:3])


def test_seen_and_unseen_outputs_by_hand(tmp_path):
  """Eval targets `x y` (in the synthetic file, spaced otherwise) and `x`
  (in train) were trained on; `p q r` and `z` were not."""
  train = tmp_path / "train.tsv"
  train.write_text("a\tx\nb\tw\n")
  synthetic = tmp_path / "synthetic.tsv"
  synthetic.write_text("c\tx   y\nd\tp q\n")
  rows = [("a", "x y", "x y"), ("b", "x", "z"), ("c", "x  y", "x"),
          ("d", "p q r", "p q r"), ("e", "z", "y")]
  seen = results.seen_outputs([r[1] for r in rows], [str(train),
                                                     str(synthetic)])
  assert seen == {"x y", "x"}
  assert results.seen_outputs([r[1] for r in rows], [str(train)]) == {"x"}
  assert results.seen_scores(rows, seen) == {"seen": [3, 1],
                                             "unseen": [2, 1]}
  # Per seed as records hold them; the table puts each column's three
  # side by side.
  records = []
  for seed, (n_ok, u_ok) in enumerate(((1, 1), (3, 0))):
    counts = {"test": {"seen": [3, n_ok], "unseen": [2, u_ok]}}
    record = cell_lib.record(
        grid.Cell("toy", "csl", seed), {"parts": {"test": {
            "accuracy": 0.0, "num_examples": 5, "by_length": {}}},
                                        "train": {}, "train_seconds": 0,
                                        "decode_seconds": 0}, 1, 1, "d",
        ["test"], counts)
    records.append(record)
  assert records[0]["accuracy_seen_by_part"] == {"test": 100 / 3}
  assert records[1]["accuracy_unseen_by_part"] == {"test": 0.0}
  assert records[0]["seen_share_by_part"] == {"test": 60.0}
  table = results.seen_table(records)
  assert list(table["csl"]) == ["toy seen", "toy unseen", "toy % seen"]
  assert table["csl"]["toy seen"]["mean"] == pytest.approx(200 / 3)
  assert table["csl"]["toy unseen"]["mean"] == 25.0
  assert table["csl"]["toy % seen"] == {"mean": 60.0, "std": 0.0, "n": 2}
  # No seen example: no seen accuracy (not 0), left out of the mean.
  none = cell_lib.record(
      grid.Cell("toy", "original", 0), {"parts": {"test": {
          "accuracy": 50.0, "num_examples": 2, "by_length": {}}},
                                        "train": {}, "train_seconds": 0,
                                        "decode_seconds": 0}, 1, 0, "d",
      ["test"], {"test": {"seen": [0, 0], "unseen": [2, 1]}})
  assert none["accuracy_seen_by_part"] == {"test": None}
  assert results.seen_table([none])["original"]["toy seen"]["n"] == 0
  assert "| original | – | 50.00 (1) | 0.00 (1) |" in \
      results.markdown_table(results.seen_table([none]), ["original"])


def test_the_first_eval_part_is_the_tables_cached_or_not():
  """A cached cell's summary.json holds its parts sorted (gen before
  test); its record still leads with the first of experiment.eval_parts,
  and the length curve reads the record's part."""
  def part(accuracy, length):
    return {"accuracy": accuracy, "num_examples": 10,
            "by_length": {str(length): [10, accuracy // 10]}}
  summary = {"parts": {"gen": part(10.0, 5), "test": part(40.0, 3)},
             "train": {}, "train_seconds": 0, "decode_seconds": 0}
  record = cell_lib.record(
      grid.Cell("s", "original", 0), summary, 1, 0, "d", ["test", "gen"])
  assert (record["eval_part"], record["accuracy"]) == ("test", 40.0)
  assert list(record["accuracy_by_part"]) == ["test", "gen"]
  record["by_length"] = dict(sorted(record["by_length"].items()))
  assert results.length_curve([record], "s") == {"original": {3: 40.0}}


class _Same:
  """A test method that writes the same pairs whatever the seed."""
  name = "same"

  def stages(self, data, workdir):
    raise NotImplementedError

  def report_rows(self, summaries):
    return []


def test_seeds_sharing_one_synthetic_sample_are_said(tmp_path, caplog):
  """Method `same` writes the same candidates for seeds 0 and 1: a
  warning and a line in results.md say so; a method that declares it
  draws nothing at random (`seed_params = ()`) is not listed; one whose
  seeds differ is not either."""
  method_base.add(_Same.name, _Same)
  try:
    run_dirs = {}
    for seed in (0, 1):
      run = tmp_path / f"seed_{seed}"
      for m, text in (("same", "a\tA\n"), ("csl", f"b{seed}\tB\n"),
                      ("augzero", "c\tC\n")):
        (run / m).mkdir(parents=True)
        (run / m / "candidates.tsv").write_text(text)
      run_dirs[("s", seed)] = str(run)
    needed = ["same", "csl", "augzero"]
    shared = runner._shared_samples(run_dirs, ["s"], [0, 1], needed, True)  # pylint: disable=protected-access
    assert shared == ["same (s)"]
    assert ("same's synthetic data on s is the same for every seed (0, 1)"
            in caplog.text)
    assert "its seed parameter (and declare it" in caplog.text
    # One seed, or seeds sharing one run on purpose: nothing to say.
    assert not runner._shared_samples(run_dirs, ["s"], [0], needed, True)  # pylint: disable=protected-access
    assert not runner._shared_samples(run_dirs, ["s"], [0, 1], needed, False)  # pylint: disable=protected-access
    meta = {"shared_synthetic": shared, "num_cells": 0,
            "exclude_templates": "test"}
    written = results.write_tables(str(tmp_path), [], ["original"], meta, {})
    with open(written["markdown"], encoding="utf-8") as f:
      text = f.read()
    assert "the seeds shared one synthetic sample for same (s)" in text
    assert "selections without the test part's templates" in text
  finally:
    method_base.remove(_Same.name)


def test_load_categories(tmp_path):
  part = tmp_path / "gen.tsv"
  part.write_text("a\tA\nb\tB\n")
  src = tmp_path / "src"
  src.mkdir()
  (src / "gen.tsv").write_text("a\tA\tcat1\nb\tB\tcat2\n")
  (src / "cats.txt").write_text("c1\nc2\n\n")
  assert runner.load_categories(str(part), str(src), "column3") == [
      "cat1", "cat2"]
  assert runner.load_categories(str(part), str(src), "cats.txt") == [
      "c1", "c2"]
  assert runner.load_categories(str(part), str(src), None) is None
  (src / "short.txt").write_text("c1\n")
  with pytest.raises(InputError, match="align"):
    runner.load_categories(str(part), str(src), "short.txt")


# ---- the grid end to end, keys and resume ----------------------------------

def test_experiment_writes_results_and_resumes_after_kill(
    tiny, toy_data, tmp_path, monkeypatch, capsys):  # pylint: disable=redefined-outer-name,unused-argument
  out = str(tmp_path / "exp")
  calls = []
  real_train = train_lib.train
  # A T5 prompt in the environment is not the cells' (they score against
  # the TSVs' own inputs).
  monkeypatch.setenv(registry.ENV_INPUT_PREFIX, "semanticparse: ")

  def killed_at_second(*args, **kw):
    calls.append(args[1])
    if len(calls) == 2:
      raise KeyboardInterrupt  # the process dies mid-grid
    return real_train(*args, **kw)

  monkeypatch.setattr(train_lib, "train", killed_at_second)
  with pytest.raises(KeyboardInterrupt):
    _run(out, toy_data)
  assert len(_records(out)) == 1  # cell 1 finished, cell 2 was killed
  calls.clear()
  monkeypatch.setattr(train_lib, "train", lambda *a, **k: (
      calls.append(a[1]), real_train(*a, **k))[1])
  capsys.readouterr()
  summary = _run(out, toy_data)
  # Only cell 2 (the shuffle mixture) was trained again, and said so.
  assert calls == ["tsv_toy_shuffle_mixture"]
  said = [line for line in capsys.readouterr().out.splitlines()
          if "] cell " in line and "->" in line]
  assert said[0].endswith("; cached") and "cell 1/2" in said[0]
  assert "cell 2/2" in said[1] and said[1].endswith(" for 1 cell(s)")
  records = _records(out)
  assert [(r["data"], r["seed"], r["cached"]) for r in records] == [
      ("original", 0, True), ("shuffle", 0, False)]
  for r in records:
    assert r["num_original"] == 40 and r["eval_part"] == "test"
    assert r["num_synthetic"] == (0 if r["data"] == "original" else 40)
    assert 0.0 <= r["accuracy"] <= 100.0 and r["steps"] == STEPS
    assert r["device"] == jax.devices()[0].device_kind  # trained here
    assert "trained_by" not in r
    assert sum(n for n, _ in r["by_length"]["test"].values()) == 10
    # Per-token perplexity of the gold test outputs: 3 steps from random
    # weights leave it near the byte vocabulary's size (exp of the loss).
    assert 1.0 < r["perplexity_by_part"]["test"] < 2 * 259
    # Every test row is counted once, seen or unseen, with its hits.
    counts = r["by_seen"]["test"]
    assert counts["seen"][0] + counts["unseen"][0] == 10
    assert counts["seen"][1] + counts["unseen"][1] == round(
        r["accuracy"] / 10)
  # Targets the model's length cannot hold are counted (and said).
  with open(os.path.join(records[1]["dir"], "summary.json")) as f:
    assert json.load(f)["parts"]["test"]["targets_too_long"] == 0
  assert cell_lib.too_long_targets(
      "tsv_toy", ["c b a", "a b c d a b"], 6) == 1  # pieces + EOS: 4, 7
  # The key: data by content, model and trainer config, seed.
  with open(os.path.join(records[1]["dir"], "stage_key.json")) as f:
    key = json.load(f)
  assert key["complete"] and key["config"]["seed"] == 0
  assert key["config"]["model"]["d_model"] == 16
  assert key["config"]["train"]["seed"] == 0
  assert "log_every" not in key["config"]["train"]
  assert len(key["input_hashes"]) == 4  # vocab, train, synthetic, test
  # What produced the grid: its settings (the loader's options too), the
  # code, the libraries and the gin bindings (csl_jax/provenance.py).
  with open(os.path.join(out, "experiment.json")) as f:
    assert json.load(f)["dataset_options"] == {}
  with open(os.path.join(out, "provenance.json")) as f:
    assert json.load(f)["code"]["csl_jax"] == csl_jax.__version__
  assert os.path.isfile(os.path.join(out, "config.gin"))
  md = open(summary["markdown"], encoding="utf-8").read()
  assert "| training data | toy |" in md and "(1) |" in md
  assert f"; cells on {jax.devices()[0].device_kind} (provenance.json)." in md
  assert "## Per-token perplexity of the gold outputs" in md
  assert "| training data | toy seen | toy unseen | toy % seen |" in md
  assert os.path.exists(os.path.join(out, results.RESULTS_HTML))
  assert set(summary["plots"]) == {"toy: exact match by target length",
                                   "toy: learning curves"}
  for path in summary["plots"].values():
    assert open(path, "rb").read(4) == b"\x89PNG"
  # Learning curves come back from the TensorBoard event files.
  from csl_jax.experiments import plots  # pylint: disable=g-import-not-at-top
  points = plots.read_scalars(os.path.join(records[0]["dir"], "train",
                                           "tensorboard"), "train/loss")
  assert [p[0] for p in points] == list(range(1, STEPS + 1))
  # Rerun of a finished grid: nothing trained, no figure drawn again.
  drawn = {p: os.stat(p).st_mtime_ns for p in summary["plots"].values()}
  calls.clear()
  _run(out, toy_data)
  assert not calls
  assert {p: os.stat(p).st_mtime_ns for p in drawn} == drawn
  # Seeds reach synthetic sampling: one augmentation run per seed (a new
  # seed's cells come after its augmentation; the kill stops before them).
  monkeypatch.setattr(train_lib, "train", killed_at_second)
  calls[:] = ["x"]
  with pytest.raises(KeyboardInterrupt):
    _run(out, toy_data, seeds=[0, 1])
  syn = [tsv.read_tsv(os.path.join(out, "augment", "toy", f"seed_{s}",
                                   "shuffle", "synthetic.tsv"))
         for s in (0, 1)]
  assert syn[0] != syn[1] and sorted(syn[0]) == sorted(syn[1])


def test_a_figure_is_drawn_again_only_when_what_it_shows_changes(
    tmp_path, monkeypatch):
  from csl_jax import files as files_lib  # pylint: disable=g-import-not-at-top
  from csl_jax.experiments import plots  # pylint: disable=g-import-not-at-top
  path = str(tmp_path / "curves.png")
  drawn = []
  real = files_lib.atomic_save_figure
  monkeypatch.setattr(files_lib, "atomic_save_figure", lambda fig, p, dpi: (
      drawn.append(p), real(fig, p, dpi))[1])
  for points, times in (([(1, 2.5), (2, 1.5)], 1), ([(1, 2.5), (2, 1.5)], 1),
                        ([(1, 2.5), (2, 1.25)], 2)):
    assert plots.learning_curves(path, {"original seed 0": points},
                                 "toy: loss") == path
    assert len(drawn) == times
  # Killed between the PNG and its key: the next call draws again.
  os.remove(path + ".key")
  plots.learning_curves(path, {"original seed 0": points}, "toy: loss")
  assert len(drawn) == 3 and open(path, "rb").read(4) == b"\x89PNG"
  # Another title is another figure.
  plots.learning_curves(path, {"original seed 0": points}, "toy: training")
  assert len(drawn) == 4


# ---- pretrain, then fine-tune ----------------------------------------------

def test_a_job_waiting_elsewhere_says_what_to_run(
    tiny, toy_data, tmp_path, capsys):  # pylint: disable=redefined-outer-name,unused-argument
  out = str(tmp_path / "exp")
  _Elsewhere.ready = str(tmp_path / "ready.tsv")
  got = _run(out, toy_data, methods=["elsewhere"])
  assert len(got["pending"]) == 1 and got["records"] == []
  said = capsys.readouterr().out
  assert f"waits (put the pairs in {_Elsewhere.ready})" in said
  assert "do what each says above, then rerun this command" in said
  assert "run-bundle" not in said


def test_pretrain_finetune_regime_and_init_from(tiny, toy_data, tmp_path,  # pylint: disable=redefined-outer-name,unused-argument
                                                monkeypatch, caplog):
  import re  # pylint: disable=g-import-not-at-top
  import jax  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  from csl_jax import progress  # pylint: disable=g-import-not-at-top
  out = str(tmp_path / "exp")
  monkeypatch.setenv(progress.ENV, "0")  # as in a log file
  with caplog.at_level("INFO"):
    _run(out, toy_data, data=["shuffle"], seeds=[0],
         regime="pretrain_finetune", finetune_steps=2)
  # Each training of the cell says its progress: a line per 10% of its
  # steps (here, every step), with the loss and the speed.
  lines = [m.groups() for m in (re.match(
      r"toy/shuffle/seed_0 (pretrain|train): (\d+/\d+) step, \d+s"
      r"(?:, ETA \w+)? "
      r"\(loss=\d+\.\d+(, examples/s=\d+)?\)$", r.getMessage())
                                for r in caplog.records) if m]
  assert [(part, count) for part, count, _ in lines] == [
      ("pretrain", "1/3"), ("pretrain", "2/3"), ("pretrain", "3/3"),
      ("train", "1/2"), ("train", "2/2")]
  assert lines[-1][2]  # a step that did not compile: its examples/s
  cell = os.path.join(out, "cells", "toy", "shuffle", "seed_0")
  with open(os.path.join(cell, "pretrain", "config.json")) as f:
    pre = json.load(f)
  with open(os.path.join(cell, "train", "config.json")) as f:
    fine = json.load(f)
  assert pre["task"] == "tsv_toy_shuffle_synthetic" and "init" not in pre
  assert fine["task"] == "tsv_toy" and fine["train"]["num_steps"] == 2
  assert fine["init"]["step"] == STEPS
  (r,) = _records(out)
  assert r["regime"] == "pretrain_finetune" and r["steps"] == 2
  with open(os.path.join(out, results.RESULTS_MD), encoding="utf-8") as f:
    assert (f"regime pretrain_finetune, {STEPS} steps on the synthetic data, "
            "then 2 fine-tuning steps on the original") in f.read()
  # The trainer's init_from: with learning rate 0 (and another seed), the
  # run keeps exactly the source's parameters.
  source = os.path.join(cell, "pretrain")
  config = train_lib.load_config(source)[0]
  frozen = train_lib.TrainConfig(batch_size=8, num_steps=1,
                                 learning_rate=0.0, warmup_steps=1, seed=5,
                                 bucket_width=0)
  target = str(tmp_path / "target")
  train_lib.train(target, "tsv_toy", config, frozen, progress=False,
                  init_from=source)
  leaves = lambda d: jax.tree_util.tree_leaves(train_lib.load_params(d)[1])
  for a, b in zip(leaves(source), leaves(target)):
    np.testing.assert_array_equal(a, b)
  # The initialization keys the run: resuming without it is refused, and
  # a source of another model config is refused.
  with pytest.raises(InputError, match="initial parameters"):
    train_lib.train(target, "tsv_toy", config, frozen, progress=False)
  bigger = dataclasses.replace(config, d_model=32)
  with pytest.raises(InputError, match="another configuration"):
    train_lib.train(str(tmp_path / "x"), "tsv_toy", bigger, frozen,
                    progress=False, init_from=source)


# ---- methods that add tokens, union mixing ---------------------------------

def test_copies_get_vocabulary_pieces_and_union_rates(tiny, toy_data,
                                                      tmp_path):  # pylint: disable=redefined-outer-name,unused-argument
  """augzero's copies (`a@2`) are pieces of the experiment's vocabulary, not
  unknowns, and its rows train on the union (rates = sizes)."""
  import seqio  # pylint: disable=g-import-not-at-top
  import tasks  # pylint: disable=g-import-not-at-top
  gin.bind_parameter("augzero.AugZeroConfig.k", 3)
  out = str(tmp_path / "exp")
  _run(out, toy_data, methods=["augzero"], data=["augzero"], seeds=[0])
  vocab = tasks.vocab.get_vocabulary(
      "sentencepiece", os.path.join(out, "vocab", "toy", "spm.model"))
  for token in ("a@2", "d@3", "a"):
    assert vocab.decode(vocab.encode(token)) == token
    assert len(vocab.encode(token)) == 1
  (r,) = _records(out)
  assert (r["num_original"], r["num_synthetic"]) == (40, 80)
  mixture = seqio.get_mixture_or_task("tsv_toy_augzero_mixture")
  assert sorted(mixture.get_rate(t) for t in mixture.tasks) == [40.0, 80.0]
  with open(os.path.join(r["dir"], "stage_key.json")) as f:
    assert json.load(f)["config"]["mixing"] == "union"


def test_union_rates_are_sizes_and_other_methods_stay_one_to_one(tmp_path):
  """With a union row, every method's rate is in examples: the union
  method's its size (3), another's the original's (4, so 1:1), and none
  without a union row among the run's methods."""
  import tasks  # pylint: disable=g-import-not-at-top
  files = {}
  for name, lines in (("train", 4), ("u", 3), ("e", 5)):
    path = tmp_path / f"{name}.tsv"
    path.write_text("".join(f"x{i}\ty{i}\n" for i in range(lines)) + "\n",
                    encoding="utf-8")
    files[name] = str(path)
  found = {"u": files["u"], "e": files["e"]}
  rates = tasks.registry.union_rates
  assert rates(found, ["u"], files["train"]) == {
      "original_rate": 4.0, "synthetic_rate": {"u": 3.0, "e": 4.0}}
  assert rates(found, [], files["train"]) == {}
  assert rates({"e": files["e"]}, ["u"], files["train"]) == {}


# ---- model selection on a dev set ------------------------------------------

def test_gooddev_selects_on_a_tenth_of_test_and_scores_the_rest(
    tiny, toy_data, tmp_path):  # pylint: disable=redefined-outer-name,unused-argument
  from csl_jax.seq2seq import model_selection  # pylint: disable=g-import-not-at-top
  gin.bind_parameter("seq2seq.TrainConfig.checkpoint_every", 1)
  out = str(tmp_path / "exp")
  summary = _run(out, toy_data, methods=[], dev="gooddev", dev_seed=3)
  (r,) = _records(out)
  held = model_selection.gooddev_rows(10, 0.1, 3).tolist()
  assert len(held) == 1
  # The 9 other test rows are scored; every checkpoint was scored on dev.
  assert r["num_eval_examples"] == {"test": 9}
  with open(os.path.join(r["dir"], "summary.json")) as f:
    cell = json.load(f)
  history = cell["train"]["dev_history"]
  assert [s for s, _ in history] == [1, 2, 3]
  assert r["selected_step"] in (1, 2, 3)
  assert r["dev_accuracy"] == max(a for _, a in history)
  # The table's number: the predictions of the other rows, scored here.
  with open(os.path.join(r["dir"], "test", "predictions.tsv")) as f:
    rows = [line.rstrip("\n").split("\t") for line in f]
  kept = [row for i, row in enumerate(rows) if i not in held]
  assert r["accuracy"] == pytest.approx(
      100 * sum(t == p for _, t, p in kept) / 9)
  with open(os.path.join(r["dir"], "stage_key.json")) as f:
    assert json.load(f)["config"]["dev"] == {
        "part": "test", "fraction": 0.1, "seed": 3, "every": 1}
  md = open(summary["markdown"], encoding="utf-8").read()
  assert "checkpoint: the best dev exact match at a checkpoint, GOODDEV" in md
  assert "; of the whole part, GOODDEV's dev rows included" in md
  assert f"| {r['selected_step']} (dev " in md
  # Seen / unseen count the 9 scored rows only.
  assert sum(n for n, _ in r["by_seen"]["test"].values()) == 9
  # A part of its own: every test row is scored, the dev part keys the cell.
  with open(os.path.join(toy_data, "train.tsv"), encoding="utf-8") as f:
    dev_rows = f.readlines()[:5]
  with open(os.path.join(toy_data, "dev.tsv"), "w", encoding="utf-8") as f:
    f.writelines(dev_rows)
  _run(str(tmp_path / "named"), toy_data, methods=[], dev="dev")
  (named,) = _records(str(tmp_path / "named"))
  assert named["num_eval_examples"] == {"test": 10}
  with open(os.path.join(named["dir"], "summary.json")) as f:
    assert [s for s, _ in json.load(f)["train"]["dev_history"]] == [1, 2, 3]
  with open(os.path.join(named["dir"], "stage_key.json")) as f:
    key = json.load(f)
  assert key["config"]["dev"] == {"part": "dev", "fraction": None,
                                  "seed": None, "every": 1}
  assert len(key["input_hashes"]) == 4  # vocab, train, test, dev


def test_a_cells_exact_match_and_dev_scores_are_in_its_tensorboard(
    tiny, toy_data, tmp_path):  # pylint: disable=redefined-outer-name,unused-argument
  """The dev score of each checkpoint at its step, and the eval part's
  exact match (GOODDEV's other rows) at the step of the checkpoint
  decoded, read as TensorBoard reads them."""
  from tensorboard.backend.event_processing import event_accumulator  # pylint: disable=g-import-not-at-top
  gin.bind_parameter("seq2seq.TrainConfig.checkpoint_every", 1)
  out = str(tmp_path / "exp")
  _run(out, toy_data, methods=[], dev="gooddev", dev_seed=3)
  (r,) = _records(out)
  with open(os.path.join(r["dir"], "summary.json")) as f:
    history = json.load(f)["train"]["dev_history"]
  acc = event_accumulator.EventAccumulator(
      os.path.join(r["dir"], "train", "tensorboard"))
  acc.Reload()
  assert [(e.step, e.value) for e in acc.Scalars("dev/exact_match")] == [
      (s, pytest.approx(a)) for s, a in history]
  assert [(e.step, e.value) for e in acc.Scalars("eval_test/exact_match")] == [
      (r["selected_step"], pytest.approx(r["accuracy"]))]


def test_a_cells_decoding_says_how_far_it_is(tiny, toy_data, tmp_path,  # pylint: disable=redefined-outer-name,unused-argument
                                             monkeypatch, caplog):
  """A cell's decoding was quiet (minutes on COGS's gen): a line per tenth
  of its batches in a log file, named by the cell and part."""
  from csl_jax import progress  # pylint: disable=g-import-not-at-top
  monkeypatch.setenv(progress.ENV, "0")  # as in a log file
  with caplog.at_level("INFO"):
    _run(str(tmp_path / "exp"), toy_data, methods=[], decode_batch_size=4)
  lines = [r.getMessage().split(",")[0] for r in caplog.records
           if " decode " in r.getMessage()]
  # 10 test rows, 4 a batch.
  assert lines == [f"toy/original/seed_0 decode test: {k}/3 batch"
                   for k in (1, 2, 3)]


@pytest.mark.parametrize("kw,message", [
    ({"dev": "test"}, "is an eval part"),
    ({"dev": "nope"}, "has no nope part"),
    ({"dev": "gooddev", "dev_fraction": 1.5}, "dev_fraction"),
    ({"dev": 3}, "experiment.dev"),
    ({"compare_to": "csl"}, "compare_to: 'csl' is not a row"),
    ({"eval_parts": []}, "experiment.eval_parts is empty"),
    ({"categories": "column3"}, "experiment.categories must map a part"),
    ({"vocab_model_type": "bogus"}, "experiment.vocab_model_type: 'bogus'"),
])
def test_bad_dev_is_an_input_error(tiny, toy_data, tmp_path, kw, message):  # pylint: disable=redefined-outer-name,unused-argument
  with pytest.raises(InputError, match=message):
    _run(str(tmp_path / "exp"), toy_data, methods=[], **kw)


def test_a_missing_eval_part_stops_before_any_method(tiny, toy_data,  # pylint: disable=redefined-outer-name,unused-argument
                                                    tmp_path):
  """An eval part the data lacks is said once the data is read, before a
  method runs (it used to be after every augmentation)."""
  out = tmp_path / "exp"
  with pytest.raises(InputError, match=r"experiment.eval_parts: tsv has no "
                     r"gen part \(it has train, test\)"):
    _run(str(out), toy_data, methods=["shuffle"], eval_parts=["test", "gen"])
  run_dirs = list((out / "augment").glob("*/*"))
  assert run_dirs and all(sorted(os.listdir(d)) == [
      ".lock", "config.gin", "data", "provenance.json"] for d in run_dirs)


# ---- bad gin: one line, exit 2 --------------------------------------------

@pytest.mark.parametrize("text,message", [
    ("experiment.splits = ['addprim_jump']\n", "experiment.dataset not set"),
    ("experiment.dataset = 'scan'\nexperiment.splits = ['nope']\n",
     "unknown scan split 'nope'"),
    ("experiment.dataset = 'scan'\nexperiment.splits = ['length']\n"
     "experiment.regime = 'both'\n", "experiment.regime"),
    ("experiment.dataset = \n", "gin configuration"),
])
def test_bad_gin_is_one_line_error(tmp_path, capsys, clear_gin, text,
                                   message):  # pylint: disable=unused-argument
  gin_file = tmp_path / "bad.gin"
  gin_file.write_text(text)
  code = cli.main(["experiment", f"--gin_file={gin_file}", "--out",
                   str(tmp_path / "out")])
  err = capsys.readouterr().err.strip()
  assert code == 2
  assert len(err.splitlines()) == 1 and message in err, err


def test_scan_star_difficulty_levels_are_macros(clear_gin):  # pylint: disable=unused-argument
  """A level is --gin.MAX_LEN / --gin.MAX_PRIMITIVES: a binding of the
  whole dataset_options dictionary would drop its test settings (the
  loader's defaults then: 2,000 test commands of up to 62 tokens)."""
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  gin.add_config_file_search_path(root)  # its includes: gin/experiments/...
  gin.parse_config_files_and_bindings(
      [os.path.join(root, "gin", "experiments",
                    "scan_star_jump_difficulty.gin")],
      ["MAX_LEN = 16", "MAX_PRIMITIVES = 2"], skip_unknown=True)
  assert gin.get_bindings(runner.experiment)["dataset_options"] == {
      "max_len": 16, "max_primitives": 2, "test_max_len": 8, "num_test": 500}
