"""`csl-jax fit`, `parse` and `evaluate` end to end on a known grammar."""

import json
import os

import pytest

from csl_jax.cli import main as cli
from csl_jax.errors import InputError
from csl_jax.methods.csl import parse as parse_lib
from csl_jax.model import evaluation
from csl_jax.testing import toy_language
from csl_jax.testing.files import write_pairs

GRAMMAR = toy_language.GRAMMAR
_train = toy_language.sentences


TEST = [("walk twice twice", "WALK WALK WALK WALK"),  # unseen depth
        ("look twice twice and jump", "LOOK LOOK LOOK LOOK JUMP"),
        ("jump twice and walk twice", "JUMP JUMP WALK WALK"),
        ("look after walk twice", "WALK WALK LOOK"),
        ("walk and look twice", "WALK LOOK LOOK"),
        ("look twice after jump twice", "JUMP JUMP LOOK LOOK")]


pytestmark = pytest.mark.usefixtures("clear_gin")  # tests/conftest.py


def _summary(directory):
  with open(os.path.join(directory, "summary.json")) as f:
    return json.load(f)


def test_fit_parse_evaluate(tmp_path):
  grammar = tmp_path / "g.qcfg"
  grammar.write_text(GRAMMAR)
  train = write_pairs(tmp_path / "train.tsv", _train())
  test = write_pairs(tmp_path / "test.tsv", TEST)
  model = str(tmp_path / "model")
  assert cli.main(["fit", "--grammar", str(grammar), "--train", train,
                   "--eval", test, "--out", model,
                   "--gin.FitConfig.learning_rate=0.1",
                   "--gin.FitConfig.num_steps=300"]) == 0
  s = _summary(model)
  assert s["num_underivable"] == 0 and s["num_steps"] <= 300
  assert s["train_log_p_y_given_x"] > -0.05
  assert os.path.isdir(os.path.join(model, "tensorboard"))
  for name in ("params.npz", "model.json", "grammar.qcfg",
               "checkpoint.msgpack"):
    assert os.path.exists(os.path.join(model, name))

  parsed = str(tmp_path / "parsed")
  assert cli.main(["parse", "--model", model, "--data", test, "--out",
                   parsed]) == 0
  s = _summary(parsed)
  assert s["accuracy"] == 100.0 and s["coverage"] == 100.0
  predictions = evaluation.read_predictions(
      os.path.join(parsed, "predictions.tsv"))
  assert [p.prediction for p in predictions] == [y for _, y in TEST]

  # An input outside the grammar gets no output; the ensemble falls back.
  other = write_pairs(tmp_path / "other.tsv",
                      [(x, "WRONG") for x, _ in TEST] + [("fly", "FLY")])
  mixed = write_pairs(tmp_path / "mixed.tsv", TEST + [("fly", "FLY")])
  parsed2 = str(tmp_path / "parsed2")
  cli.main(["parse", "--model", model, "--data", mixed, "--out", parsed2])
  assert _summary(parsed2)["coverage"] == 100.0 * 6 / 7
  report = str(tmp_path / "report")
  assert cli.main(["evaluate", "--predictions",
                   os.path.join(parsed2, "predictions.tsv"), "--other", other,
                   "--out", report]) == 0
  s = _summary(report)
  assert s["accuracy"] == 100.0 * 6 / 7 and s["accuracy_on_covered"] == 100.0
  assert s["other_accuracy"] == 100.0 * 1 / 7
  assert s["other_accuracy_on_not_covered"] == 100.0
  assert s["ensemble_accuracy"] == 100.0
  # Another system's predictions for other inputs: the file and the first
  # line where they part, or both files when the counts differ.
  shuffled = write_pairs(tmp_path / "shuffled.tsv",
                         [(x, "X") for x, _ in TEST[1:] + TEST[:1]]
                         + [("fly", "FLY")])
  predictions = os.path.join(parsed2, "predictions.tsv")
  for bad, where in ((shuffled, f"{shuffled}:1: the other system's input"),
                     (write_pairs(tmp_path / "short.tsv", TEST[:2]),
                      f"{predictions}: the other system has 2 predictions")):
    with pytest.raises(InputError) as info:
      parse_lib.evaluate(str(tmp_path / "r2"), predictions, bad)
    assert str(info.value).startswith(where), str(info.value)


def test_fit_refuses_an_output_cfg_of_another_language(tmp_path, capsys,
                                                       caplog):
  grammar = tmp_path / "g.qcfg"
  grammar.write_text(GRAMMAR)
  pairs = [("walk", "WALK"), ("jump", "JUMP"), ("look", "LOOK"),
           ("walk twice", "WALK WALK")]
  train = write_pairs(tmp_path / "train.tsv", pairs)
  # Derives WALK+ only: lines 2 and 3 are outside its language.
  cfg = tmp_path / "walks.cfg"
  cfg.write_text("S -> WALK | WALK S\n")
  model = tmp_path / "model"
  fit = ["fit", "--grammar", str(grammar), "--train", train, "--output_cfg",
         str(cfg), "--out", str(model), "--gin.FitConfig.num_steps=5"]
  assert cli.main(fit) == 0  # half of them: a warning
  assert (f"{train}:2: 2 of 4 training outputs are not in the language of "
          f"the output CFG {cfg}") in caplog.text
  assert _summary(model)["num_outside_output_cfg"] == 2
  cfg.write_text("S -> LOOK | LOOK S\n")  # more than half: refused
  other = tmp_path / "model2"
  assert cli.main(fit[:-3] + ["--out", str(other), fit[-1]]) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert err[-1].startswith(f"csl-jax: error: {train}:1: output not in the "
                            f"language of the output CFG {cfg} (3 of 4 "
                            "training outputs")
  assert "it is fit.output_cfg: set it to yours, or to None" in err[-1]
  assert not (other / "params.npz").exists()  # refused before any work
  # Induction refuses it too, before it starts (it used to induce a
  # grammar, and fit refused it only then).
  induced = tmp_path / "induced"
  assert cli.main(["induce", "--train", train, "--output_cfg", str(cfg),
                   "--out", str(induced)]) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert err[-1].startswith(f"csl-jax: error: {train}:1: output not in the "
                            f"language of the output CFG {cfg} (3 of 4 ")
  assert "it is induce.output_cfg" in err[-1]
  assert not (induced / "grammar.qcfg").exists()


def test_parse_without_a_model_is_a_clean_error(tmp_path, capsys):
  data = write_pairs(tmp_path / "d.tsv", TEST)
  assert cli.main(["parse", "--model", str(tmp_path), "--data", data,
                   "--out", str(tmp_path / "o")]) == 2
  assert "not a fitted model directory" in capsys.readouterr().err


def test_semi_supervised_refit_labels_unlabeled_inputs(tmp_path):
  grammar = tmp_path / "g.qcfg"
  grammar.write_text(GRAMMAR)
  train = write_pairs(tmp_path / "train.tsv", _train())
  unlabeled = tmp_path / "unlabeled.txt"
  unlabeled.write_text("walk twice twice\nfly away\nlook twice twice\n")
  model = str(tmp_path / "model")
  assert cli.main(["fit", "--grammar", str(grammar), "--train", train,
                   "--out", model, "--unlabeled", str(unlabeled),
                   "--unlabeled_copies", "3",
                   "--gin.FitConfig.learning_rate=0.1",
                   "--gin.FitConfig.num_steps=100"]) == 0
  assert _summary(model)["num_pseudo_labeled"] == 2  # "fly away": no parse
  with open(os.path.join(model, "pseudo_labeled.tsv")) as f:
    assert f.read() == ("walk twice twice\tWALK WALK WALK WALK\n"
                        "look twice twice\tLOOK LOOK LOOK LOOK\n")
  # The refit saw 3 copies of each: twice under twice is now likely.
  assert _summary(model)["num_examples"] == len(_train()) + 6


def _curve(out):
  """The fit's loss curve as TensorBoard's own reader shows it."""
  # pylint: disable=g-import-not-at-top
  from tensorboard.backend.event_processing import event_accumulator
  acc = event_accumulator.EventAccumulator(os.path.join(out, "tensorboard"))
  acc.Reload()
  return [(e.step, e.value) for e in acc.Scalars("train/neg_log_p_xy")]


def test_a_fit_killed_in_its_restarts_leaves_one_curve(tmp_path,
                                                      monkeypatch):
  """Killed during its restarts, a fit's rerun starts at step 0 and writes
  its scalars again: TensorBoard (its own reader) shows the rerun's curve
  alone, as an uninterrupted run's, not both."""
  # pylint: disable=g-import-not-at-top
  from csl_jax import summaries
  from csl_jax.methods.csl import fit as fit_lib
  from csl_jax.model import train as train_lib
  # pylint: enable=g-import-not-at-top
  monkeypatch.setattr(summaries, "FLUSH_SECONDS", 0.0)  # all on disk
  grammar = tmp_path / "g.qcfg"
  grammar.write_text(GRAMMAR)
  data = write_pairs(tmp_path / "train.tsv", _train())
  config = train_lib.FitConfig(learning_rate=0.1, num_steps=30,
                               num_restarts=2, restart_steps=12,
                               checkpoint_every=5)

  fit_lib.fit(str(tmp_path / "whole"), str(grammar), data, config=config,
              summary_every=2)
  real = train_lib.fit

  def killed(*args, **kw):
    def on_step(step, loss):
      args[5](step, loss)
      if step == 9:  # in the restarts, after scalars of steps 1-8
        raise KeyboardInterrupt
    return real(*args[:5], on_step, **kw)

  out = str(tmp_path / "killed")
  monkeypatch.setattr(train_lib, "fit", killed)
  with pytest.raises(KeyboardInterrupt):
    fit_lib.fit(out, str(grammar), data, config=config, summary_every=2)
  assert [s for s, _ in _curve(out)] == [1, 2, 4, 6, 8]
  monkeypatch.setattr(train_lib, "fit", real)
  # The rerun is another process, later: its event file sorts after the
  # killed run's, as TensorBoard reads them (not by chance, as within one
  # second here).
  now = summaries.time.time
  monkeypatch.setattr(summaries.time, "time", lambda: now() + 60.0)
  fit_lib.fit(out, str(grammar), data, config=config, summary_every=2)
  assert _curve(out) == _curve(str(tmp_path / "whole"))


def test_a_refit_killed_and_rerun_leaves_one_curve(tmp_path, monkeypatch):
  """The refit's scalars follow the fit's on one step axis (its own count
  starts at 1 again), and a refit killed and rerun drops what the kill
  lost: TensorBoard shows the uninterrupted run's curve."""
  # pylint: disable=g-import-not-at-top
  from csl_jax import summaries
  from csl_jax.methods.csl import fit as fit_lib
  from csl_jax.model import train as train_lib
  # pylint: enable=g-import-not-at-top
  monkeypatch.setattr(summaries, "FLUSH_SECONDS", 0.0)  # all on disk
  grammar = tmp_path / "g.qcfg"
  grammar.write_text(GRAMMAR)
  data = write_pairs(tmp_path / "train.tsv", _train())
  unlabeled = tmp_path / "unlabeled.txt"
  unlabeled.write_text("walk twice twice\nlook twice twice\n")
  config = train_lib.FitConfig(learning_rate=0.1, num_steps=20,
                               checkpoint_every=5)

  def run(out):
    fit_lib.fit(out, str(grammar), data, config=config, summary_every=2,
                unlabeled=str(unlabeled), unlabeled_copies=2)

  run(str(tmp_path / "whole"))
  whole = _curve(str(tmp_path / "whole"))
  assert [s for s, _ in whole] == [1] + list(range(2, 21, 2)) + [21] + list(
      range(22, 41, 2))
  real = train_lib.fit
  calls = []

  def killed(*args, **kw):
    calls.append(1)
    if len(calls) == 1:
      return real(*args, **kw)

    def on_step(step, loss):
      args[5](step, loss)
      if step == 13:  # the refit checkpointed step 10, wrote up to 32
        raise KeyboardInterrupt
    return real(*args[:5], on_step, **kw)

  out = str(tmp_path / "killed")
  monkeypatch.setattr(train_lib, "fit", killed)
  with pytest.raises(KeyboardInterrupt):
    run(out)
  assert [s for s, _ in _curve(out)][-2:] == [30, 32]
  monkeypatch.setattr(train_lib, "fit", real)
  now = summaries.time.time
  monkeypatch.setattr(summaries.time, "time", lambda: now() + 60.0)
  run(out)
  assert _curve(out) == whole
