"""Bad inputs found by a pass over every input kind and flag (session 50):
each is one `csl-jax: error:` line naming the file (and line), exit 2, or,
where data would change, said rather than dropped. Cases too slow for this
file (a training) live beside their command's tests."""

import json
import os
import types

import numpy as np
import pytest

from csl_jax.cli import main as cli
from csl_jax.errors import InputError
from csl_jax.model.csl_model import CSLModel
from csl_jax.testing.models import TOY_RULES, random_model

pytestmark = pytest.mark.usefixtures("clear_gin")  # tests/conftest.py


def _error(capsys) -> str:
  """The one stderr line of a refused command."""
  lines = [l for l in capsys.readouterr().err.splitlines()
           if l.startswith("csl-jax: error:") or "Traceback" in l]
  assert len(lines) == 1, lines
  return lines[0]


# ------------------------------------------------------- a model directory --

def _model(tmp_path) -> str:
  directory = str(tmp_path / "model")
  random_model(TOY_RULES, seed=3).save(directory)
  return directory


def _save_params(directory, **arrays):
  with np.load(os.path.join(directory, "params.npz")) as params:
    kept = {k: params[k] for k in params.files}
  kept.update(arrays)
  np.savez(os.path.join(directory, "params.npz"),
           **{k: v for k, v in kept.items() if v is not None})


def _edit_meta(directory, **fields):
  path = os.path.join(directory, "model.json")
  with open(path) as f:
    meta = json.load(f)
  meta.update(fields)
  with open(path, "w") as f:
    json.dump(meta, f)


@pytest.mark.parametrize("damage, fragment", [
    (lambda d: open(os.path.join(d, "params.npz"), "wb").close(),
     "params.npz: not a readable .npz file"),
    (lambda d: open(os.path.join(d, "params.npz"), "wb").write(b"junk"),
     "params.npz: not a readable .npz file"),
    (lambda d: _save_params(d, context=None), "params.npz: no array 'context'"),
    (lambda d: _save_params(d, rule=np.full((2, 4), np.nan, np.float32)),
     "params.npz: array 'rule' has NaN or infinite values"),
    (lambda d: _save_params(d, rule=np.zeros((2, 4, 1), np.float32)),
     "params.npz: array 'rule' must be a 2-d float array"),
    (lambda d: _save_params(d, rule=np.array(["a", "b"])),
     "params.npz: array 'rule' must be a 2-d float array"),
    (lambda d: _save_params(d, context=np.zeros((6, 3), np.float32)),
     "params.npz: arrays 'rule' (2, 4) and 'context' (6, 3) do not have "
     "num_states = 2"),
    (lambda d: open(os.path.join(d, "model.json"), "w").write("[1]"),
     "model.json: expected a JSON object"),
    (lambda d: _edit_meta(d, num_states="2"),
     "model.json: num_states must be an integer >= 1, got '2'"),
    (lambda d: _edit_meta(d, num_states=3),
     "do not have num_states = 3"),
    (lambda d: _edit_meta(d, output_cfg=True),
     "has an output CFG (model.json) but no output.cfg"),
])
def test_a_damaged_model_directory_is_one_line(tmp_path, capsys, damage,
                                               fragment):
  """Before: tracebacks (EOFError, KeyError, numpy broadcasting, the
  sampler's NaN check) or, for num_states and output_cfg, silently
  accepted."""
  model = _model(tmp_path)
  damage(model)
  data = tmp_path / "d.tsv"
  data.write_text("walk twice\tW W\n")
  assert cli.main(["parse", "--model", model, "--data", str(data),
                   "--out", str(tmp_path / "p")]) == 2
  assert fragment in _error(capsys)


def test_a_reordered_grammar_is_refused(tmp_path):
  """The parameters are per rule in grammar.qcfg's order: two rules swapped
  paired every parameter with another rule, silently."""
  model = _model(tmp_path)
  path = os.path.join(model, "grammar.qcfg")
  with open(path) as f:
    lines = f.read().splitlines(True)
  lines[0], lines[1] = lines[1], lines[0]
  with open(path, "w") as f:
    f.write("".join(lines))
  with pytest.raises(InputError, match="grammar.qcfg: not the grammar these "
                     "parameters were fitted on"):
    CSLModel.load(model)


# ------------------------------------------------------- --out of another --

def test_out_of_another_command_is_refused(tmp_path, capsys):
  """`parse --model M --out M` (sample, decode alike) replaced the fit's
  summary.json without a word; the same command again still runs."""
  model = _model(tmp_path)
  with open(os.path.join(model, "summary.json"), "w") as f:
    json.dump({"command": "csl-jax fit --grammar g --train t --out m"}, f)
  data = tmp_path / "d.tsv"
  data.write_text("walk twice\tW W\n")
  assert cli.main(["parse", "--model", model, "--data", str(data),
                   "--out", model]) == 2
  assert _error(capsys).endswith(
      "summary.json: holds the summary of `csl-jax fit`, which this "
      "`csl-jax parse` would overwrite: give --out another directory")
  with open(os.path.join(model, "summary.json")) as f:
    assert json.load(f)["command"].startswith("csl-jax fit")
  parsed = str(tmp_path / "parsed")
  for _ in range(2):  # a rerun into its own directory
    assert cli.main(["parse", "--model", model, "--data", str(data),
                     "--out", parsed]) == 0
  # An augment run's directory, or one of its stages': their summaries name
  # no command (`fit --out RUN` replaced the run's).
  for name, record in (("run", {"dataset": "scan", "stages": {}}),
                       ("stage", {"cached": False, "seconds": 1.0})):
    other = tmp_path / name
    other.mkdir()
    (other / "summary.json").write_text(json.dumps(record))
    assert cli.main(["parse", "--model", model, "--data", str(data),
                     "--out", str(other)]) == 2
    assert _error(capsys).endswith(
        "summary.json: holds the summary of a `csl-jax augment` run (or of "
        "one of its stages), which this `csl-jax parse` would overwrite: "
        "give --out another directory")
    assert json.loads((other / "summary.json").read_text()) == record
  # Gin flags may stand before the subcommand: still the same command.
  ev = str(tmp_path / "ev")
  gin_file = tmp_path / "empty.gin"
  gin_file.write_text("")
  for _ in range(2):
    assert cli.main([f"--gin_file={gin_file}", "evaluate", "--predictions",
                     os.path.join(parsed, "predictions.tsv"),
                     "--out", ev]) == 0


def test_unlabeled_copies_with_unlabeled_bound_in_gin(tmp_path, capsys):
  """The check is the fit's, where gin's values are known: --unlabeled
  bound in gin is as good as the flag."""
  data = _tsv_dir(tmp_path)
  (data / "g.qcfg").write_text("walk ### I_WALK\n")
  (data / "u.txt").write_text("walk\n")
  argv = ["fit", "--grammar", str(data / "g.qcfg"), "--train",
          str(data / "train.tsv"), "--unlabeled_copies", "2",
          f"--gin.fit.unlabeled='{data / 'u.txt'}'", "--out",
          str(tmp_path / "o")]
  code = cli.main(argv)
  assert "needs fit.unlabeled" not in capsys.readouterr().err
  assert code == 0


# ------------------------------------------------------------ output CFGs --

def test_cfg_inline_comment_is_said(caplog):
  """`C -> Walk | Look # note` read `#` and `note` as terminals: `Look`
  alone left the language, and induce took it without a word. A warning
  naming file and line (an error with `strict`), as for a misspelt
  category; quoted, `"#"` is meant."""
  from csl_jax.qcfg import output_cfg  # pylint: disable=g-import-not-at-top
  text = "S -> A\nA -> x | y # note\n"
  with caplog.at_level("WARNING"):
    cfg = output_cfg.parse_output_cfg(text, "g.cfg")
  assert [r.getMessage() for r in caplog.records] == [
      "g.cfg:2: terminal '#' after a production: a comment is a line of its "
      "own, so it and what follows are symbols (quote it, \"#\", if it is "
      "meant as a terminal)"]
  assert cfg.terminals == ("x", "y", "#", "note")
  with pytest.raises(InputError, match=r"^g.cfg:2: terminal '#' after"):
    output_cfg.parse_output_cfg(text, "g.cfg", strict=True)
  caplog.clear()
  output_cfg.parse_output_cfg('S -> "#" x | "#y"\n')
  assert not caplog.records


def test_cfg_category_on_no_right_hand_side_is_said(caplog):
  """`C -> Wk | Look` for `C -> Walk | Look` (two edits: no misspelt-
  category warning) made `Wk` a terminal and `Walk` dead without a word."""
  from csl_jax.qcfg import output_cfg  # pylint: disable=g-import-not-at-top
  text = "S -> C\nC -> Wk | Look\nWalk -> I_WALK\nLook -> I_LOOK\n"
  with caplog.at_level("WARNING"):
    output_cfg.parse_output_cfg(text, "g.cfg")
  assert [r.getMessage() for r in caplog.records] == [
      "g.cfg:3: category 'Walk' is on no right-hand side and is not the "
      "start category 'S': its productions are never used (a typo in the "
      "name where it is meant? or %start Walk?)"]
  with pytest.raises(InputError, match=r"^g.cfg:3: category 'Walk'"):
    output_cfg.parse_output_cfg(text, "g.cfg", strict=True)
  caplog.clear()  # the start named by %start, and a used category: silent
  output_cfg.parse_output_cfg("%start Walk\nS -> x\nWalk -> S y\n")
  output_cfg.parse_output_cfg(text.replace("Wk", "Walk"))
  assert not caplog.records


# ------------------------------------------------- data directories (tsv) --

def _tsv_dir(tmp_path, name="data"):
  directory = tmp_path / name
  directory.mkdir()
  (directory / "train.tsv").write_text("walk\tI_WALK\nlook\tI_LOOK\n"
                                       "run\tI_RUN\njump\tI_JUMP\n")
  return directory


@pytest.mark.parametrize("make", [
    lambda p: p.mkdir(),  # a directory named test.tsv
    lambda p: os.symlink(str(p) + ".gone", str(p)),  # a broken link
])
def test_tsv_part_that_is_not_a_file_is_named(tmp_path, capsys, make):
  """`--dataset tsv`: a test.tsv that is a directory or a broken link was
  left out without a word (the run had no test part)."""
  data = _tsv_dir(tmp_path)
  make(data / "test.tsv")
  assert cli.main(["augment", "--out", str(tmp_path / "run"), "--dataset",
                   "tsv", "--data_dir", str(data), "--method", "geca"]) == 2
  assert f"{data / 'test.tsv'}: " in _error(capsys)


def test_data_dir_that_is_a_file_says_so(tmp_path, capsys):
  (tmp_path / "f").write_text("x\n")
  assert cli.main(["augment", "--out", str(tmp_path / "run"), "--dataset",
                   "tsv", "--data_dir", str(tmp_path / "f"), "--method",
                   "geca"]) == 2
  assert _error(capsys).endswith("f: is a file, not a data directory")


def test_difficulty_refuses_a_negative_seed_and_a_part_directory(
    tmp_path, capsys):
  """Before: numpy's ValueError and an IsADirectoryError half-way through
  the subsets, as tracebacks."""
  data = _tsv_dir(tmp_path)
  args = ["difficulty", "--data_dir", str(data), "--score", "length",
          "--quantiles", "2"]
  assert cli.main(args + ["--out", str(tmp_path / "a"), "--seed", "-1"]) == 2
  assert "seed (--seed) must be >= 0, got -1" in _error(capsys)
  (data / "test.tsv").mkdir()
  assert cli.main(args + ["--out", str(tmp_path / "b")]) == 2
  assert f"{data / 'test.tsv'}: is a directory or a broken link" in _error(
      capsys)
  assert not os.path.exists(tmp_path / "b" / "q0")  # refused before work


# ------------------------------------------------------------------ sample --

def test_sample_seed_beyond_the_kernels_range_is_refused(tmp_path, capsys):
  """--seed 99999999999999999999 overflowed the kernel's int64 round seed:
  a numba TypingError traceback. The largest seed taken still samples."""
  from csl_jax.sampling.config import MAX_SEED  # pylint: disable=g-import-not-at-top
  model = _model(tmp_path)
  assert cli.main(["sample", "--model", model, "--num", "3", "--seed",
                   str(10**20), "--out", str(tmp_path / "a")]) == 2
  assert "SampleConfig.seed (--seed where a flag exists) must be an integer "\
      ">= 0 and < 2^43, got 100000000000000000000" in _error(capsys)
  assert cli.main(["sample", "--model", model, "--num", "3", "--seed",
                   str(MAX_SEED - 1), "--out", str(tmp_path / "b")]) == 0


# ----------------------------------------------------------------- seq2seq --

@pytest.mark.parametrize("cls, field, value, fragment", [
    ("Seq2SeqConfig", "d_model", 0, "d_model must be >= 1, got 0"),
    ("Seq2SeqConfig", "num_layers", 0, "num_layers must be >= 1, got 0"),
    ("Seq2SeqConfig", "dropout", 1.0, "dropout must be in [0, 1), got 1.0"),
    ("Seq2SeqConfig", "max_target_len", 0, "max_target_len must be >= 1"),
    ("TrainConfig", "learning_rate", -1.0,
     "learning_rate must be finite and >= 0, got -1.0"),
    ("TrainConfig", "weight_decay", -0.5,
     "weight_decay must be finite and >= 0, got -0.5"),
])
def test_seq2seq_sizes_and_rates_out_of_range(cls, field, value, fragment):
  """d_model 0 was a ZeroDivisionError traceback inside the model; a
  negative learning rate trained uphill without a word."""
  from csl_jax.seq2seq import config  # pylint: disable=g-import-not-at-top
  with pytest.raises(InputError, match=fragment.replace("[", r"\[").replace(
      "(", r"\(").replace(")", r"\)")):
    getattr(config, cls)(**{field: value})


def test_train_refuses_data_it_would_not_train_on(tmp_path, capsys):
  """An empty train.tsv was a TensorFlow OutOfRangeError traceback
  mid-training; --synthetic with a task that never reads it trained on the
  original data alone without a word; NAME_csl_mixture without
  --synthetic said "no such SeqIO task" though --data_dir was given."""
  data = _tsv_dir(tmp_path)
  empty = tmp_path / "empty"
  empty.mkdir()
  (empty / "train.tsv").write_text("")
  args = ["--out", str(tmp_path / "t"), "--steps", "1"]
  assert cli.main(["train", "--task", "edges_empty", "--data_dir",
                   str(empty)] + args) == 2
  assert _error(capsys).endswith(
      "train.tsv: no examples: the file is empty or has only blank lines")
  assert cli.main(["train", "--task", "edges_plain", "--data_dir", str(data),
                   "--synthetic", str(data / "train.tsv")] + args) == 2
  assert "--task edges_plain would train on the original data alone" in (
      _error(capsys))
  assert cli.main(["train", "--task", "edges_csl_mixture", "--data_dir",
                   str(data)] + args) == 2
  assert "--task edges_csl_mixture trains on synthetic pairs: give them " \
      "with --synthetic" in _error(capsys)


@pytest.mark.parametrize("text, fragment", [
    ("{bad", "config.json: not valid JSON"),
    ("[1]", "config.json: not a `csl-jax train` config.json"),
    ('{"model": {"d_modl": 3}}', "its \"model\" is not a Seq2SeqConfig"),
])
def test_decode_of_a_damaged_config_json(tmp_path, capsys, text, fragment):
  """A torn or edited config.json was a JSONDecodeError, TypeError or
  KeyError traceback."""
  model = tmp_path / "m"
  model.mkdir()
  (model / "config.json").write_text(text)
  assert cli.main(["decode", "--model", str(model), "--task", "edges_d",
                   "--data_dir", str(_tsv_dir(tmp_path)), "--out",
                   str(tmp_path / "d")]) == 2
  assert fragment in _error(capsys)


# ---------------------------------------------------------------- grammars --

def test_rule_over_max_nts_names_grammar_file_and_line(tmp_path, capsys):
  """Was "rule 10 (...) has 2 NTs, more than max_nts=1": no file, and the
  rule's index, not its line."""
  grammar = tmp_path / "g.qcfg"
  grammar.write_text("# a comment\nwalk ### W\n\nNT_1 and NT_2 ### NT_1 NT_2"
                     "\n")
  data = tmp_path / "d.tsv"
  data.write_text("walk\tW\n")
  assert cli.main(["coverage", "--grammar", str(grammar), "--data",
                   str(data), "--max_nts", "1", "--out",
                   str(tmp_path / "c")]) == 2
  assert _error(capsys).endswith(
      f"{grammar}:4: rule 'NT_1 and NT_2 ### NT_1 NT_2' has 2 NTs, more "
      "than --max_nts = 1")
  assert cli.main(["fit", "--grammar", str(grammar), "--train", str(data),
                   "--gin.fit.max_nts=1", "--out", str(tmp_path / "f")]) == 2
  assert f"{grammar}:4: " in _error(capsys)


def test_rule_with_a_trailing_space_says_so():
  """Was "bad token ''"."""
  from csl_jax.qcfg.rules import parse_rules  # pylint: disable=g-import-not-at-top
  with pytest.raises(InputError, match=r"^g.qcfg:2: bad token '' \(two "
                     "spaces in a row, or a space at the start or end of a "
                     "side"):
    parse_rules("walk ### W\nrun ### R \n", "g.qcfg")


# --------------------------------------------------------------- gin files --

@pytest.mark.parametrize("make, fragment", [
    (lambda p: p.write_bytes(b"InductionConfig.max_nts = 3\n\xff = 1\n"),
     "g.gin:2: not valid UTF-8"),
    (lambda p: p.write_bytes(b"\xef\xbb\xbfInductionConfig.max_nts = 3\n"),
     "g.gin:1: starts with a UTF-8 byte-order mark"),
    (lambda p: p.mkdir(), "g.gin: is a directory, expected a file"),
])
def test_unreadable_gin_file_is_named(tmp_path, capsys, make, fragment):
  """Gin said "'utf-8' codec can't decode byte 0xff" (no file), "Unexpected
  token" for a BOM and "Unable to open file" for a directory."""
  make(tmp_path / "g.gin")
  data = tmp_path / "d.tsv"
  data.write_text("walk\tW\n")
  assert cli.main(["induce", "--train", str(data), "--out",
                   str(tmp_path / "i"), f"--gin_file={tmp_path / 'g.gin'}"]) \
      == 2
  assert f"{tmp_path / fragment}" in _error(capsys)


def test_a_macro_no_gin_file_uses_is_an_error(tmp_path, capsys):
  """`--gin.MAXLEN=16` for a file's %MAX_LEN bound a macro nothing read: the
  run went on at the file's default, in a directory named for another
  level."""
  (tmp_path / "g.gin").write_text(
      "MAX_NTS = 3\nInductionConfig.max_nts = %MAX_NTS\n")
  data = tmp_path / "d.tsv"
  data.write_text("walk\tW\n")
  argv = ["induce", "--train", str(data), "--out", str(tmp_path / "i"),
          f"--gin_file={tmp_path / 'g.gin'}"]
  assert cli.main(argv + ["--gin.MAXNTS=2"]) == 2
  assert _error(capsys).endswith(
      "--gin.MAXNTS: no gin file read uses the macro %MAXNTS, so it would "
      "change nothing (the macros they use: MAX_NTS)")
  # The file's own macro, or one another binding reads, is a binding.
  assert cli.main(argv + ["--gin.MAX_NTS=2"]) == 0
  assert cli.main(argv[:-1] + ["--out", str(tmp_path / "j"), "--gin.N=2",
                               "--gin.InductionConfig.max_nts=%N"]) == 0


# -------------------------------------------------------------- experiment --

def test_experiment_required_bindings_left_at_gin_required(tmp_path, capsys):
  """base.gin binds dataset and splits to %gin.REQUIRED: left so, gin's
  marker object was read as "unknown dataset <object object at 0x...>"."""
  assert cli.main(["experiment", "--out", str(tmp_path / "x"),
                   "--gin_file=gin/experiments/base.gin"]) == 2
  assert _error(capsys).endswith(
      "gin configuration: experiment.dataset, experiment.splits not set (an "
      "experiment's gin file sets them, e.g. --gin_file=gin/experiments/"
      "scan_addprim_jump.gin; gin files read: gin/experiments/base.gin)")


def test_experiment_bundle_that_is_a_file(tmp_path, capsys):
  """Was a NotADirectoryError traceback after the augmentation ran."""
  (tmp_path / "b").write_text("")
  assert cli.main(["experiment", "--out", str(tmp_path / "x"),
                   "--gin.experiment.dataset='tsv'",
                   f"--gin.experiment.data_dir='{_tsv_dir(tmp_path)}'",
                   "--gin.experiment.splits=['mine']",
                   "--gin.experiment.methods=[]",
                   f"--gin.experiment.bundle='{tmp_path / 'b'}'"]) == 2
  assert _error(capsys).endswith(
      "b: experiment.bundle is a file, not a directory")
  assert not os.path.exists(tmp_path / "x" / "augment")


def test_experiment_repeated_seed_is_said(caplog):
  """[0, 1, 0] counts seed 0 once (a repeated cell would weigh twice in
  the means), but without a word."""
  from csl_jax.experiments import grid  # pylint: disable=g-import-not-at-top
  with caplog.at_level("WARNING"):
    assert grid.check_seeds([0, 1, 0]) == [0, 1]
    assert grid.check_names("methods", ["csl", "geca"]) == ["csl", "geca"]
  assert [r.getMessage() for r in caplog.records] == [
      "experiment.seeds: 0 given more than once; each counts once"]


# ----------------------------------------------------------------- prepare --

def test_prepare_cogs_refuses_an_empty_part(tmp_path, capsys):
  """An empty train.tsv was prepared as a dataset of 0 training examples,
  exit 0."""
  good = ("The sailor dusted a boy .\t* sailor ( x _ 1 ) ; dust . agent "
          "( x _ 2 , x _ 1 ) AND dust . theme ( x _ 2 , x _ 4 ) AND boy "
          "( x _ 4 )\tin_distribution\n")
  data = tmp_path / "cogs"
  data.mkdir()
  for part in ("dev", "test", "gen"):
    (data / f"{part}.tsv").write_text(good)
  (data / "train.tsv").write_text("\n")
  assert cli.main(["prepare", "cogs", "--data_dir", str(data), "--out",
                   str(tmp_path / "p")]) == 2
  assert _error(capsys).endswith(
      "train.tsv: no examples: the file is empty or has only blank lines")


# ------------------------------------------------------------------- vocab --

@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_vocab_out_where_nothing_can_be_written(tmp_path, capsys):
  """A prefix in a directory that takes no files (/proc here; a read-only
  one alike) was TensorFlow's NotFoundError traceback."""
  data = _tsv_dir(tmp_path) / "train.tsv"
  assert cli.main(["vocab", "--tsv", str(data), "--out",
                   "/proc/csl_jax_vocab", "--model_type", "word"]) == 2
  assert _error(capsys).startswith(
      "csl-jax: error: /proc/csl_jax_vocab.model: cannot write the model")


# --------------------------------------------------------------------- fit --

def _toy_fit_inputs(tmp_path):
  from csl_jax.qcfg.rules import save_rules  # pylint: disable=g-import-not-at-top
  grammar = str(tmp_path / "g.qcfg")
  save_rules(grammar, TOY_RULES)
  train = tmp_path / "train.tsv"
  train.write_text("walk\tW\nrun\tR\nwalk twice\tW W\nwalk and run\tW R\n")
  return grammar, str(train)


def test_fit_refuses_a_directory_where_its_checkpoint_goes(tmp_path, capsys):
  """Was an IsADirectoryError traceback (after the forests were built)."""
  grammar, train = _toy_fit_inputs(tmp_path)
  out = tmp_path / "fit"
  (out / "checkpoint.msgpack").mkdir(parents=True)
  assert cli.main(["fit", "--grammar", grammar, "--train", train, "--out",
                   str(out), "--gin.FitConfig.num_steps=2"]) == 2
  assert _error(capsys).endswith(
      "checkpoint.msgpack: is a directory where the fit writes its "
      "checkpoint.msgpack: remove it")


def test_fit_says_what_it_leaves_out(tmp_path, caplog):
  """Training pairs the grammar does not derive and unlabeled inputs
  without a parse were left out with only a count in the summary (none for
  the unlabeled ones): now a warning naming the first line, and the
  unlabeled inputs' count."""
  grammar, train = _toy_fit_inputs(tmp_path)
  with open(train, "a") as f:
    f.write("jump\tJ\n")  # line 5: no rule has `jump`
  unlabeled = tmp_path / "u.txt"
  unlabeled.write_text("walk twice\nfly\n")
  out = str(tmp_path / "fit")
  with caplog.at_level("WARNING"):
    assert cli.main(["fit", "--grammar", grammar, "--train", train,
                     "--unlabeled", str(unlabeled), "--out", out,
                     "--gin.FitConfig.num_steps=2",
                     "--gin.FitConfig.num_restarts=1"]) == 0
  said = [r.getMessage() for r in caplog.records]
  assert (f"{train}:5: 1 of 5 distinct training pairs are not derived by "
          "the grammar and are left out of the fit (num_underivable in the "
          "summary)") in said
  assert (f"{unlabeled}: 1 of 2 unlabeled inputs have no parse and are left "
          "out of the refit") in said
  with open(os.path.join(out, "summary.json")) as f:
    summary = json.load(f)
  assert summary["num_unlabeled"] == 2 and summary["num_pseudo_labeled"] == 1


# ----------------------------------------------------------------- methods --

def test_augzero_grammar_relative_path_says_where_it_is_read(tmp_path,
                                                             capsys):
  """A relative AugZeroConfig.grammar is read under the run directory, not
  the working one as every other file setting: the message said only that
  it "does not exist", though the file was there."""
  data = _tsv_dir(tmp_path)
  (tmp_path / "mine.qcfg").write_text("walk ### I_WALK\n")
  assert cli.main(["augment", "--out", str(tmp_path / "run"), "--dataset",
                   "tsv", "--data_dir", str(data), "--method", "augzero_mix",
                   "--gin.AugZeroConfig.grammar='mine.qcfg'"]) == 2
  assert ("(augzero.AugZeroConfig.grammar 'mine.qcfg' is read under the run "
          "directory: give an absolute path for a grammar of your own)") in (
              _error(capsys))


def test_geca_pair_too_long_names_its_line(tmp_path):
  """Was "a training pair has 40,001" with no file or line."""
  from csl_jax.methods.geca import method  # pylint: disable=g-import-not-at-top
  from csl_jax.methods.geca.config import GECAConfig  # pylint: disable=g-import-not-at-top
  train = _tsv_dir(tmp_path) / "train.tsv"
  with open(train, "a") as f:
    f.write(" ".join(["walk"] * 20000) + "\t" + " ".join(["W"] * 20000) +
            "\n")
  with pytest.raises(InputError, match=rf"^{train}:5: GECA indexes sequences "
                     "of at most 32,767 tokens"):
    method.generate(str(tmp_path / "g"), str(train), None, GECAConfig())


@pytest.mark.parametrize("command", [
    ["parse", "--model", "m", "--data", "d.tsv"],
    ["vocab", "--tsv", "d.tsv"],
])
def test_empty_out_is_refused(tmp_path, capsys, monkeypatch, command):
  """`--out ""` (an unset shell variable) was a FileNotFoundError traceback
  (parse) or a hidden `.model` in the working directory (vocab)."""
  monkeypatch.chdir(tmp_path)
  (tmp_path / "d.tsv").write_text("walk\tW\n")
  assert cli.main(command + ["--out", ""]) == 2
  assert _error(capsys) == ("csl-jax: error: --out is empty: give a "
                            "directory (vocab: a file prefix)")
  assert not os.path.exists(tmp_path / ".model")


def test_train_unknown_task_is_one_line_in_a_fresh_process(tmp_path):
  """Without --data_dir, seqio imported TensorFlow before csl_jax.quiet's
  filter: six CUDA and oneDNN probe lines came before the error."""
  import subprocess  # pylint: disable=g-import-not-at-top
  import sys  # pylint: disable=g-import-not-at-top
  env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
  done = subprocess.run(
      [sys.executable, "-m", "csl_jax.cli.main", "train", "--task",
       "edges_no_such_task", "--out", str(tmp_path / "t")], env=env,
      capture_output=True, text=True, check=False)
  assert done.returncode == 2
  assert done.stderr.splitlines() == [
      "csl-jax: error: edges_no_such_task: no such SeqIO task or mixture "
      "(give --data_dir, or set $CSL_JAX_DATA)"], done.stderr


def test_gin_binding_error_names_the_binding(tmp_path, capsys):
  """Gin said "Unable to parse value. (line 2)" of the second --gin.
  binding, a line of a string the user never wrote."""
  data = tmp_path / "d.tsv"
  data.write_text("walk\tW\n")
  assert cli.main(["induce", "--train", str(data), "--out",
                   str(tmp_path / "i"), "--gin.InductionConfig.seed=1",
                   "--gin.InductionConfig.max_nts="]) == 2
  assert _error(capsys).endswith(
      "(line 2) (in --gin.InductionConfig.max_nts=)")


@pytest.mark.parametrize("argv, fragment", [
    (["prepare", "scan_star", "--split", "length", "--max_primitives", "3"],
     "--max_primitives (dataset option max_primitives) is a knob of SCAN*'s "
     "jump split; the length split takes none"),
    (["difficulty", "--data_dir", "{data}", "--score", "length", "--runs",
      "{data}"], "--runs is read by --score learning, not --score length"),
    (["fit", "--grammar", "{data}/g.qcfg", "--train", "{data}/train.tsv",
      "--unlabeled_copies", "3"],
     "fit.unlabeled_copies (--unlabeled_copies) needs fit.unlabeled"),
])
def test_a_flag_that_would_go_unread_is_refused(tmp_path, capsys, argv,
                                                 fragment):
  """Each was accepted and never read, without a word."""
  data = _tsv_dir(tmp_path)
  (data / "g.qcfg").write_text("walk ### I_WALK\n")
  argv = [a.replace("{data}", str(data)) for a in argv]
  assert cli.main(argv + ["--out", str(tmp_path / "o")]) == 2
  assert fragment in _error(capsys)


def test_geoquery_split_files_not_read_are_said(tmp_path, caplog, capsys):
  """valid.tsv beside train.tsv was not read, and a dev.tsv that is a
  directory left out, both without a word."""
  split = tmp_path / "geo" / "standard"
  split.mkdir(parents=True)
  pair = "what is the capital of m0\tanswer ( capital_1 ( m0 ) )\n"
  for name in ("train", "test", "valid"):
    (split / f"{name}.tsv").write_text(pair)
  args = ["prepare", "geoquery", "--data_dir", str(tmp_path / "geo")]
  with caplog.at_level("WARNING"):
    assert cli.main(args + ["--out", str(tmp_path / "a")]) == 0
  assert f"{split / 'valid.tsv'}: not read (a GeoQuery split's parts are " \
      "dev.tsv, test.tsv, train.tsv)" in [r.getMessage()
                                          for r in caplog.records]
  (split / "dev.tsv").mkdir()
  assert cli.main(args + ["--out", str(tmp_path / "b")]) == 2
  assert _error(capsys).endswith("dev.tsv: is a directory, expected a file")


# ---------------------------------------------------------------- evaluate --

@pytest.mark.parametrize("text, message", [
    ("walk\tW\tW\n\nrun\tR\tR\n", "2: empty line (blank lines are allowed "
     "only at the end); expected input<TAB>prediction[<TAB>target]"),
    ("walk\tW\tW\tx\n", "1: 4 tab-separated fields; expected "
     "input<TAB>prediction[<TAB>target]"),
])
def test_evaluate_says_what_is_wrong_with_a_line(tmp_path, capsys, text,
                                                 message):
  """Every malformed line said only "expected input<TAB>prediction
  [<TAB>target]", a blank one too."""
  predictions = tmp_path / "p.tsv"
  predictions.write_text(text)
  assert cli.main(["evaluate", "--predictions", str(predictions), "--out",
                   str(tmp_path / "e")]) == 2
  assert _error(capsys).endswith(f"p.tsv:{message}")


def test_prepare_cogs_part_that_is_a_directory(tmp_path, capsys):
  """Was "missing COGS file" of a dev.tsv that is there, as a directory."""
  data = tmp_path / "cogs"
  data.mkdir()
  for part in ("train", "test", "gen"):
    (data / f"{part}.tsv").write_text("x\ty\n")
  (data / "dev.tsv").mkdir()
  assert cli.main(["prepare", "cogs", "--original_lf", "--data_dir",
                   str(data), "--out", str(tmp_path / "p")]) == 2
  assert _error(capsys).endswith("dev.tsv: is a directory, expected a file")


# --------------------------------------------------------------- TSV text --

def test_whitespace_other_than_space_and_tab_is_said(tmp_path, caplog):
  """`walk\\u00a0twice` was read as the two tokens `walk twice` (str.split)
  without a word; a method's output then had a plain space there."""
  from csl_jax.data import tsv  # pylint: disable=g-import-not-at-top
  path = tmp_path / "t.tsv"
  path.write_text("walk\tW\r\nwalk\u00a0twice\tW W\nrun\u2028\tR\n",
                  encoding="utf-8")
  with caplog.at_level("WARNING"):
    examples = tsv.read_tsv(str(path))
    tsv.read_tsv(str(path))  # said once
  assert examples[1] == ("walk\u00a0twice", "W W")  # kept as written
  assert [r.getMessage() for r in caplog.records] == [
      f"{path}:2: U+00A0, a whitespace character other than space and tab: "
      "tokens are split at it as at a space (2 such character(s) in the "
      "file)"]
  caplog.clear()
  # Another file of the same name and first such line: said too (a copy,
  # the pipeline's of the data, is not).
  (tmp_path / "other").mkdir()
  other = tmp_path / "other" / "t.tsv"
  other.write_text("walk\tW\nlook\u00a0twice\tL L\nrun\u2028\tR\n",
                   encoding="utf-8")
  (tmp_path / "copy").mkdir()
  (tmp_path / "copy" / "t.tsv").write_bytes(path.read_bytes())
  with caplog.at_level("WARNING"):
    tsv.read_tsv(str(other))
    tsv.read_tsv(str(tmp_path / "copy" / "t.tsv"))
  assert [r.getMessage().split(":")[0] for r in caplog.records] == [
      str(other)]
  caplog.clear()
  (tmp_path / "plain.tsv").write_text("walk\tW\n")
  tsv.read_tsv(str(tmp_path / "plain.tsv"))
  assert not caplog.records


def test_an_error_that_leaves_threads_ends_the_process_at_once(monkeypatch):
  """A damaged checkpoint's other reads fail later in orbax's threads;
  at the interpreter's teardown they printed tracebacks after the one-line
  error. Such an error ends the process at once (os._exit), others exit
  as usual."""
  exits = []

  def ended(how):
    def end(code):
      exits.append((how, code))
      raise SystemExit(code)  # neither returns
    return end
  monkeypatch.setattr(cli.os, "_exit", ended("os"))
  monkeypatch.setattr(cli.sys, "exit", ended("sys"))

  def failing(flagged):
    def main(freeze_imports=False):
      del freeze_imports
      if flagged:
        cli._EXIT_AT_ONCE.append(True)  # pylint: disable=protected-access
      return 2
    return main

  monkeypatch.setattr(cli, "_EXIT_AT_ONCE", [])
  for flagged in (False, True):
    monkeypatch.setattr(cli, "main", failing(flagged))
    with pytest.raises(SystemExit):
      cli.run()
  assert exits == [("sys", 2), ("os", 2)]


@pytest.mark.parametrize("flag, says", [
    (os.ST_RDONLY, "not writable (a read-only file system)"),
    (0, "not writable (permission denied)")])
def test_unwritable_out_says_why(tmp_path, capsys, monkeypatch, flag, says):
  """The box runs as root, so access() is faked: a read-only mount was
  called "permission denied", which sends a user to chmod for nothing."""
  real_statvfs = os.statvfs
  monkeypatch.setattr(cli.os, "access", lambda path, mode: False)
  monkeypatch.setattr(
      cli.os, "statvfs",
      lambda path: types.SimpleNamespace(f_flag=flag) if path == str(
          tmp_path / "o") else real_statvfs(path))
  assert cli.main(["prepare", "scan", "--out", str(tmp_path / "o")]) == 2
  assert _error(capsys).endswith(f"o: --out is {says}")
