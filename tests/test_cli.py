"""`csl-jax` subcommands: artifacts, summary.json, gin flags, clean errors."""

import argparse
import json
import os
import sys

import pytest

from csl_jax.cli import main as cli

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "scan.qcfg")


pytestmark = pytest.mark.usefixtures("clear_gin")  # tests/conftest.py


def summary(out):
  with open(os.path.join(out, "summary.json")) as f:
    return json.load(f)


def test_prepare_scan_writes_splits_and_summary(tmp_path):
  out = str(tmp_path / "scan")
  assert cli.main(["prepare", "scan", "--split", "addprim_jump",
                   "--out", out]) == 0
  s = summary(out)
  assert s["num_train"] == 14670 and s["num_test"] == 7706
  assert s["num_examples"] == 22376 and s["seconds"] >= 0
  assert s["command"].startswith("csl-jax prepare scan")
  with open(os.path.join(out, "train.tsv")) as f:
    assert sum(1 for _ in f) == 14670


def test_prepare_into_a_used_directory_leaves_no_other_split(tmp_path):
  # SCAN addprim_jump has no dev part; one left by an earlier prepare in
  # the same directory would be read as this split's validation data.
  out = str(tmp_path / "scan")
  os.makedirs(out)
  with open(os.path.join(out, "dev.tsv"), "w") as f:
    f.write("walk\tI_WALK\n")
  assert cli.main(["prepare", "scan", "--split", "addprim_jump",
                   "--out", out]) == 0
  assert sorted(f for f in os.listdir(out) if f.endswith(".tsv")) == [
      "test.tsv", "train.tsv"]


def test_gin_binding_and_flag_precedence(tmp_path):
  out = str(tmp_path / "a")
  cli.main(["prepare", "scan", "--out", out,
            "--gin.prepare.split='length'"])
  assert summary(out)["split"] == "length"
  gin_file = tmp_path / "c.gin"
  gin_file.write_text("prepare.split = 'length'\n")
  out = str(tmp_path / "b")
  cli.main(["prepare", "scan", "--split", "addprim_turn_left", "--out", out,
            f"--gin_file={gin_file}"])
  assert summary(out)["split"] == "addprim_turn_left"  # the flag wins


def test_coverage(tmp_path):
  data = tmp_path / "d.tsv"
  data.write_text("jump twice\tI_JUMP I_JUMP\n"
                  "walk left\tI_TURN_LEFT I_WALK\n"
                  "walk left\tI_WALK\n"
                  "fly\tI_FLY\n")
  out = str(tmp_path / "cov")
  assert cli.main(["coverage", "--grammar", FIXTURE, "--data", str(data),
                   "--out", out]) == 0
  s = summary(out)
  assert s["num_rules"] == 16 and s["num_examples"] == 4
  assert s["input_coverage"] == 75.0 and s["pair_coverage"] == 50.0
  assert s["coverage"] == 50.0
  with open(os.path.join(out, "not_derived.tsv")) as f:
    assert f.read() == "walk left\tI_WALK\nfly\tI_FLY\n"


def test_errors_name_file_and_line(tmp_path, capsys):
  data = tmp_path / "bad.tsv"
  data.write_text("jump\tI_JUMP\nno tab here\n")
  code = cli.main(["coverage", "--grammar", FIXTURE, "--data", str(data),
                   "--out", str(tmp_path / "o")])
  assert code == 2
  err = capsys.readouterr().err
  assert f"{data}:2: no tab" in err and "Traceback" not in err
  assert not os.path.exists(tmp_path / "o" / "summary.json")
  code = cli.main(["coverage", "--grammar", FIXTURE, "--data", str(data),
                   "--skip_malformed", "--out", str(tmp_path / "o")])
  assert code == 0
  assert summary(str(tmp_path / "o"))["num_skipped_malformed"] == 1


def test_bad_gin_binding_is_a_clean_error(tmp_path, capsys):
  code = cli.main(["prepare", "scan", "--out", str(tmp_path / "x"),
                   "--gin.no_such_function.x=1"])
  assert code == 2
  assert capsys.readouterr().err.strip().endswith(
      "no_such_function.x = 1 (misspelt, or not read by this command)")
  # Another command's gin file (cpu_small.gin binds experiment.*): said.
  # (gin's registry is the process's: once a test imported the experiment
  # runner, `prepare` would accept the file; so the hint is checked on
  # gin's message.)
  message = ("No configurable matching 'experiment'; In file \"cpu_small."
             "gin\", line 15; experiment.beam_size = 1")
  hint = cli._unknown_configurable_hint  # pylint: disable=protected-access
  assert hint(message, argparse.Namespace(subcommand="train")) == (
      " (experiment.* is read by `csl-jax experiment`, not by this "
      "command: a gin file of another command?)")
  assert hint(message, argparse.Namespace(subcommand="experiment")) == (
      " (misspelt, or not read by this command)")
  assert hint("Unknown reference", argparse.Namespace(subcommand="x")) == ""
  # One line each, a bare word said to need quotes.
  for binding, text in (
      ("--gin.InductionConfig.nosuch=1", "doesn't have a parameter named "
       "'nosuch'; In bindings string line 1; InductionConfig.nosuch = 1"),
      ("--gin.InductionConfig.max_nts=abc", "not a value (a string needs "
       "quotes, e.g. --gin.X=\"'text'\"); Failed to parse token 'abc'")):
    assert cli.main(["induce", "--train", "t.tsv", "--out",
                     str(tmp_path / "y"), binding]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and text in lines[0], lines


@pytest.mark.parametrize("argv,text", [
    (["fit", "--grammar", "g", "--train", "t", "--out", "o",
      "--max_source_len", "x"],
     "csl-jax fit: error: argument --max_source_len: invalid int value: "
     "'x' (see csl-jax fit --help)"),
    (["prepare", "scan", "--split", "nosuch", "--out", "o"],
     "csl-jax prepare scan: error: argument --split: invalid choice: "),
    (["nosuch"], "csl-jax: error: argument subcommand: invalid choice: "),
    (["fit", "--train", "t", "--out", "o"],
     "csl-jax fit: error: the following arguments are required: --grammar"),
])
def test_flag_errors_are_one_line(argv, text, capsys):
  with pytest.raises(SystemExit) as e:
    cli.main(argv)
  assert e.value.code == 2
  lines = capsys.readouterr().err.strip().splitlines()
  assert len(lines) == 1 and lines[0].startswith(text), lines


def test_unclosed_bracket_in_gin_is_a_clean_error(tmp_path, capsys):
  code = cli.main(["prepare", "scan", "--out", str(tmp_path / "x"),
                   "--gin.induce.max_nts=[1,"])
  assert code == 2
  err = capsys.readouterr().err
  assert "gin configuration" in err and "Traceback" not in err


def test_vocab_reads_tsv_as_every_command_does(tmp_path, capsys):
  bad = tmp_path / "notab.tsv"
  bad.write_text("jump I_JUMP\n")
  assert cli.main(["vocab", "--tsv", str(bad), "--out",
                   str(tmp_path / "v")]) == 2
  assert f"{bad}:1: no tab" in capsys.readouterr().err
  good = tmp_path / "bom.tsv"
  good.write_bytes(b"\xef\xbb\xbfjump\tI_JUMP\nwalk\tI_WALK\n")
  assert cli.main(["vocab", "--tsv", str(good), "--out", str(tmp_path / "v"),
                   "--vocab_size", "0"]) == 2
  assert "--vocab_size must be >= 1" in capsys.readouterr().err
  assert cli.main(["vocab", "--tsv", str(good), "--out", str(tmp_path / "v"),
                   "--model_type", "word"]) == 0
  import tasks  # pylint: disable=g-import-not-at-top
  vocab = tasks.vocab.get_vocabulary("sentencepiece",
                                     str(tmp_path / "v.model"))
  assert len(vocab.encode("jump")) == 1  # the BOM is not glued to it
  assert vocab.decode(vocab.encode("jump")) == "jump"


def test_train_names_a_malformed_line_before_training(tmp_path, capsys):
  data = tmp_path / "data"
  data.mkdir()
  (data / "train.tsv").write_text("walk\tI_WALK\njump I_JUMP\n")
  assert cli.main(["train", "--task", "badline", "--data_dir", str(data),
                   "--out", str(tmp_path / "out"), "--steps", "1"]) == 2
  err = capsys.readouterr().err
  assert f"{data / 'train.tsv'}:2: no tab" in err and "Traceback" not in err


def test_select_num_without_select_and_comma_selectors(tmp_path, capsys):
  from csl_jax.selection import base as selection  # pylint: disable=g-import-not-at-top
  assert cli.main(["augment", "--out", str(tmp_path / "r"), "--method",
                   "augzero", "--select_num", "3"]) == 2
  assert "--select_num needs --select" in capsys.readouterr().err
  assert selection.parse(["uat,cmaxent"]) == ["uat", "cmaxent"]
  assert selection.parse("uat, random") == ["uat", "random"]


def test_coverage_refuses_negative_max_nts(tmp_path, capsys):
  data = tmp_path / "d.tsv"
  data.write_text("jump\tI_JUMP\n")
  assert cli.main(["coverage", "--grammar", FIXTURE, "--data", str(data),
                   "--out", str(tmp_path / "o"), "--max_nts", "-1"]) == 2
  assert "--max_nts must be >= 0" in capsys.readouterr().err


def test_train_lets_real_bugs_through(tmp_path, monkeypatch):
  """Only configuration checks are input errors (exit 2): a ValueError from
  a bug inside training keeps its traceback."""
  from csl_jax.seq2seq import train  # pylint: disable=g-import-not-at-top
  from csl_jax.testing.files import write_pairs  # pylint: disable=g-import-not-at-top

  def broken(*args, **kwargs):
    raise ValueError("a bug, not an input error")

  monkeypatch.setattr(train, "train", broken)
  data = tmp_path / "data"
  data.mkdir()
  write_pairs(data / "train.tsv", [("walk", "I_WALK")])
  with pytest.raises(ValueError, match="a bug"):
    cli.main(["train", "--task", "bugcheck", "--data_dir", str(data),
              "--out", str(tmp_path / "out")])


def test_train_warns_of_examples_cut_to_the_lengths(tmp_path, monkeypatch,
                                                    caplog):
  """SeqIO trims silently: a byte vocabulary with word-level lengths would
  train on clipped data. Counted in tokens with EOS (bytes here)."""
  from csl_jax.seq2seq import train  # pylint: disable=g-import-not-at-top
  from csl_jax.testing.files import write_pairs  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(train, "train", lambda *args, **kwargs: {})
  data = tmp_path / "data"
  data.mkdir()
  # Bytes + EOS: inputs 5, 5, 10; targets 3, 9, 4.
  write_pairs(data / "train.tsv", [("walk", "WW"), ("jump", "JJJJJJJJ"),
                                   ("walk twice", "WWW")])
  out = tmp_path / "out"
  assert cli.main(["train", "--task", "cutcheck", "--data_dir", str(data),
                   "--out", str(out),
                   "--gin.seq2seq.Seq2SeqConfig.max_input_len=5",
                   "--gin.seq2seq.Seq2SeqConfig.max_target_len=4"]) == 0
  with open(out / "summary.json") as f:
    assert json.load(f)["too_long"] == {"checked": 3, "inputs": 1,
                                        "targets": 1}
  assert ("cutcheck train: 1 of the first 3 examples have targets longer "
          "than 4 tokens" in caplog.text)
  assert "raise seq2seq.Seq2SeqConfig.max_input_len" in caplog.text


def test_runner_is_checked_before_any_work(tmp_path, capsys, monkeypatch):
  out = tmp_path / "r"
  assert cli.main(["augment", "--out", str(out), "--shards", "2",
                   "--runner", "NoSuchRunner"]) == 2
  assert "--runner must be one of" in capsys.readouterr().err
  monkeypatch.setitem(sys.modules, "apache_beam", None)  # not installed
  assert cli.main(["augment", "--out", str(out), "--shards", "2",
                   "--runner", "DirectRunner"]) == 2
  assert "--runner needs apache-beam" in capsys.readouterr().err
  assert not (out / "data").exists() and not (out / "csl").exists()


def _gin_files():
  root = os.path.join(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))), "gin")
  # gin/t5x binds T5X's own configurables: checked by launch/ and T5X.
  return sorted(os.path.relpath(os.path.join(d, f), os.path.dirname(root))
                for d, _, files in os.walk(root) if "t5x" not in d
                for f in files if f.endswith(".gin"))


@pytest.mark.parametrize("path", _gin_files())
def test_every_shipped_gin_file_parses(path, clear_gin):
  """Every config binds configurables that exist, with includes that
  resolve (from the repository root, as the CLI's search path has it)."""
  import gin  # pylint: disable=g-import-not-at-top
  from csl_jax.cli import experiment  # pylint: disable=g-import-not-at-top
  del clear_gin
  experiment.register_configurables()
  gin.add_config_file_search_path(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))))
  gin.parse_config_files_and_bindings([path], [], finalize_config=False)


@pytest.mark.parametrize("path", [p for p in _gin_files()
                                  if p.startswith("gin/seq2seq/")])
def test_seq2seq_gin_files_bind_only_the_model(path):
  """gin/seq2seq files serve `train` and augment's reverse models, which
  load no experiment runner: a binding of anything else there would be an
  error for them (the reason gin/seq2seq/cpu_small.gin exists apart from
  gin/experiments/cpu_small.gin)."""
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  with open(os.path.join(root, path)) as f:
    lines = [l.strip() for l in f if l.strip() and not l.startswith("#")]
  assert lines
  for line in lines:
    assert line.startswith(("seq2seq.", "include 'gin/seq2seq/")), line


def test_parse_help_gives_the_parsers_default_k(capsys):
  from csl_jax.model import viterbi  # pylint: disable=g-import-not-at-top
  with pytest.raises(SystemExit):
    cli.main(["parse", "--help"])
  text = " ".join(capsys.readouterr().out.split())
  assert f"viterbi.DEFAULT_CFG_K, {viterbi.DEFAULT_CFG_K}, with" in text


def test_augment_help_names_every_method_and_selector(capsys):
  """The help lists names without importing the methods (their kernels):
  every registered method starts with a listed name, every selector is
  listed."""
  from csl_jax import methods, selection  # pylint: disable=g-import-not-at-top
  with pytest.raises(SystemExit):
    cli.main(["augment", "--help"])
  text = " ".join(capsys.readouterr().out.split())
  listed = text.split("a method: ")[1].split(" or a variant")[0]
  bases = [w.strip(" ,") for w in listed.replace(" or", ",").split(",")]
  from csl_jax.methods import base  # pylint: disable=g-import-not-at-top
  def shipped(name):  # not a method a test registered
    factory = base._METHODS[name]  # pylint: disable=protected-access
    factory = getattr(factory, "func", factory)
    return (getattr(factory, "__module__", "") or "").startswith(
        "csl_jax.methods")
  for name in filter(shipped, methods.names()):
    assert base.family(name) in bases, (
        f"method {name!r} (family {base.family(name)!r}) is not in "
        "`csl-jax augment --help`: add it to --method's help in "
        "csl_jax/cli/augment.py")
  for name in selection.names():
    assert name in text, (
        f"selector {name!r} is not in `csl-jax augment --help`: add it to "
        "--select's help in csl_jax/cli/augment.py")


def _augment_gin(tmp_path, flags, gin_files=(), bindings=()):
  """`augment`'s gin as main() configures it, without running the run."""
  args = cli.build_parser().parse_args(
      ["augment", "--out", str(tmp_path / "run")] + list(flags))
  cli.SUBCOMMANDS["augment"].register_configurables()
  cli.configure_gin(cli.SUBCOMMANDS["augment"], args, list(gin_files),
                    list(bindings))


def test_a_builtin_dataset_brings_each_methods_settings(tmp_path, caplog):
  import logging  # pylint: disable=g-import-not-at-top
  import gin  # pylint: disable=g-import-not-at-top
  caplog.set_level(logging.INFO)  # the log lines are INFO, whatever ran first
  # The class defaults (a 4-word wug, no memory cap) are no dataset's;
  # gin/geca/scan.gin's wug is one word, gin/geca/cogs.gin caps memory.
  _augment_gin(tmp_path, ["--method", "geca"])
  assert gin.query_parameter("geca.GECAConfig.wug_size") == 1
  assert gin.query_parameter("geca.GECAConfig.max_len") == 40
  assert "gin/geca/scan.gin first" in caplog.text
  gin.clear_config()
  # A variant is its family's; the dataset from the flag.
  _augment_gin(tmp_path, ["--dataset", "cogs", "--method", "geca",
                          "--method", "pcfg_bt_uniform", "--method",
                          "primaug_20"])
  assert gin.query_parameter("geca.GECAConfig.memory_limit_gb") == 8.0
  assert gin.query_parameter(
      "pcfg_bt.PCFGBTConfig.grammar") == "tasks/cogs/typed.cfg"
  gin.clear_config()
  # SCAN* runs SCAN's settings (at the class defaults CSL's induction is
  # far slower and GECA's memory guard refuses); the split from the flag.
  _augment_gin(tmp_path, ["--dataset", "scan_star", "--split", "length",
                          "--method", "csl", "--method", "geca"])
  assert gin.query_parameter("geca.GECAConfig.wug_size") == 1
  assert gin.query_parameter("SampleConfig.max_depth") == 5
  assert gin.query_parameter("augment.dataset") == "scan_star"
  assert "gin/csl/scan_star_augment.gin, gin/geca/scan_star.gin first" in (
      caplog.text)
  gin.clear_config()
  # The user's bindings and files win; the dataset may come from gin.
  mine = tmp_path / "mine.gin"
  mine.write_text("augment.dataset = 'cogs'\n"
                  "augment.methods = ['geca']\n"
                  "geca.GECAConfig.n_sample = 7\n")
  _augment_gin(tmp_path, [], [str(mine)], ["geca.GECAConfig.wug_limit = 3"])
  assert gin.query_parameter("geca.GECAConfig.n_sample") == 7
  assert gin.query_parameter("geca.GECAConfig.wug_limit") == 3
  assert gin.query_parameter("geca.GECAConfig.memory_limit_gb") == 8.0
  gin.clear_config()
  # Your own TSVs have no settings to bring: the class defaults.
  caplog.clear()
  _augment_gin(tmp_path, ["--dataset", "tsv", "--method", "geca"])
  with pytest.raises(ValueError):
    gin.query_parameter("geca.GECAConfig.wug_size")
  assert "first" not in caplog.text
  assert "tsv: no dataset settings" in caplog.text  # and says so
  gin.clear_config()
  caplog.clear()  # ... unless the user brings gin files
  _augment_gin(tmp_path, ["--dataset", "tsv", "--method", "geca"],
               [str(mine)])
  assert "tsv: no dataset settings" not in caplog.text


def test_a_method_of_ones_own_reads_its_dataset_settings(tmp_path,
                                                         monkeypatch, caplog):
  """The registry says which methods have settings files: a contributor's
  method reads gin/<method>/<dataset>.gin as the built-in ones do, and a
  built-in dataset it has none for is said in the log."""
  import logging  # pylint: disable=g-import-not-at-top
  from csl_jax import gin_defaults  # pylint: disable=g-import-not-at-top
  from csl_jax.methods import base  # pylint: disable=g-import-not-at-top
  (tmp_path / "gin" / "mine").mkdir(parents=True)
  (tmp_path / "gin" / "mine" / "scan.gin").write_text("")
  monkeypatch.setattr(gin_defaults, "REPO_ROOT", str(tmp_path))
  base.add("mine", lambda: None)
  try:
    assert gin_defaults.files("scan", ["mine"]) == ["gin/mine/scan.gin"]
    assert gin_defaults.without_settings("scan", ["mine"]) == []
    assert gin_defaults.without_settings("cogs", ["mine", "mine"]) == [
        "mine"]
    assert gin_defaults.without_settings("tsv", ["mine"]) == []
    caplog.set_level(logging.INFO)
    args = cli.build_parser().parse_args(
        ["augment", "--out", str(tmp_path / "run"), "--dataset", "cogs",
         "--method", "mine"])
    cli.SUBCOMMANDS["augment"].gin_defaults(args, [])
    assert ("mine: no gin/mine/cogs.gin, so mine runs its class defaults "
            "on cogs") in caplog.text
  finally:
    base.remove("mine")


def test_shards_say_which_methods_run_whole(tmp_path, caplog):
  """`--shards` shards CSL's and GECA's stages; another method runs whole,
  and the log says so before any work."""
  # pylint: disable=g-import-not-at-top
  from csl_jax.errors import InputError
  from csl_jax.pipeline import augment
  # pylint: enable=g-import-not-at-top
  with pytest.raises(InputError):  # no data there: only the warning ran
    augment.augment(str(tmp_path / "run"), dataset="tsv",
                    data_dir=str(tmp_path / "nope"),
                    methods=["csl", "augzero", "primaug_20", "geca"],
                    shards=2)
  assert ("--shards 2: augzero, primaug_20 have no sharded form and run "
          "whole") in caplog.text


def test_the_method_registry_refuses_bad_and_taken_names():
  from csl_jax.methods import base  # pylint: disable=g-import-not-at-top
  import csl_jax.methods  # pylint: disable=g-import-not-at-top,unused-import
  for bad in ("Swap-V2", "", "a b", 3):
    with pytest.raises(ValueError, match="lower-case letters"):
      base.add(bad, lambda: None)
  with pytest.raises(ValueError, match="'geca' is registered already"):
    base.add("geca", lambda: None)
  assert base.family("geca") == "geca"  # GECA kept
  base.add("geca", base._METHODS["geca"])  # the same again: a reload  # pylint: disable=protected-access


def test_dataset_settings_already_loaded_are_not_added(tmp_path):
  from csl_jax import gin_defaults  # pylint: disable=g-import-not-at-top
  assert gin_defaults.files("geoquery", ["csl", "geca", "augzero_20",
                                         "unknown", "geca_2"]) == [
                                             "gin/csl/geoquery_augment.gin",
                                             "gin/geca/geoquery.gin"]
  # GeoQuery's primaug: K - 1 new versions per example (App. C.2).
  assert gin_defaults.files("geoquery", ["primaug_20"]) == [
      "gin/primaug/geoquery.gin"]
  assert gin_defaults.files("scan", ["primaug_20"]) == []
  assert gin_defaults.files("tsv", ["csl", "geca"]) == []
  assert gin_defaults.family("pcfg_bt_uniform") == "pcfg_bt"
  assert gin_defaults.family("augzero_mix") == "augzero"
  assert gin_defaults.family("cslx") is None
  assert gin_defaults.family("csl_swap") is None  # not CSL's by its prefix
  # An experiment's file includes CSL's settings through two levels.
  loaded = gin_defaults.loaded(["gin/experiments/geoquery_template_1.gin"])
  assert "gin/csl/geoquery_augment.gin" in loaded
  assert "gin/csl/geoquery.gin" in loaded
  args = cli.build_parser().parse_args(
      ["augment", "--out", str(tmp_path), "--dataset", "geoquery"])
  assert cli.SUBCOMMANDS["augment"].gin_defaults(
      args, ["gin/csl/geoquery_augment.gin"]) == []


def test_newcomer_mistakes_are_one_line_errors(tmp_path, capsys, monkeypatch):
  import tasks  # pylint: disable=g-import-not-at-top
  from csl_jax.errors import InputError  # pylint: disable=g-import-not-at-top
  # A method the run has not (or a typo): not the original data alone.
  with pytest.raises(InputError, match="names a method the data has not"):
    tasks.registry.base_name("tsv1_gcea_mixture", ["geca"])
  assert tasks.registry.base_name("tsv1_geca_mixture", ["geca"]) == "tsv1"
  data = tmp_path / "d.tsv"
  data.write_text("walk\tW\n")
  assert cli.main(["vocab", "--tsv", str(data), "--out",
                   str(tmp_path / "v") + "/"]) == 2
  assert "--out is a prefix" in capsys.readouterr().err
  assert cli.main(["run-bundle", str(tmp_path), "--lanes", "0"]) == 2
  assert "--lanes must be >= 1" in capsys.readouterr().err

  def interrupted(args):
    raise KeyboardInterrupt

  monkeypatch.setattr(cli.SUBCOMMANDS["coverage"], "main", interrupted)
  assert cli.main(["coverage", "--grammar", str(data), "--data", str(data),
                   "--out", str(tmp_path / "c")]) == 130
  err = capsys.readouterr().err.strip().splitlines()
  assert err == ["csl-jax: interrupted; the same command resumes where it "
                 "stopped"]
  # A trainer's says what it saved, or what is lost (stop_request.py).
  from csl_jax import stop_request  # pylint: disable=g-import-not-at-top
  for said in ("train stopped at step 171 (checkpointed); the same command "
               "resumes there", stop_request.AT_ONCE):
    def stopped(args, said=said):
      raise KeyboardInterrupt(said)

    monkeypatch.setattr(cli.SUBCOMMANDS["coverage"], "main", stopped)
    assert cli.main(["coverage", "--grammar", str(data), "--data",
                     str(data), "--out", str(tmp_path / "c")]) == 130
    assert capsys.readouterr().err.strip().splitlines() == [
        f"csl-jax: interrupted: {said}"]


def test_flags_a_dataset_does_not_use_are_refused(tmp_path, capsys, caplog):
  """A --split for a dataset of one split, or a --data_dir for one that is
  generated, is one line and exit 2 before any work, not silently
  dropped; a gin file's augment.split written for another dataset stays
  moot (tests/test_augment.py runs SCAN's gin file on a tsv copy)."""
  data = tmp_path / "d"
  data.mkdir()
  (data / "train.tsv").write_text("walk\tW\n")
  for argv, text in [
      (["augment", "--dataset", "cogs", "--split", "test", "--data_dir",
        str(data)], "cogs has one split (gen): --split 'test' is not used"),
      (["augment", "--dataset", "tsv", "--split", "toy", "--data_dir",
        str(data)], "tsv has one split: --split 'toy' is not used"),
      (["augment", "--gin.augment.dataset='tsv'", "--split", "toy",
        "--data_dir", str(data)], "tsv has one split: --split 'toy'"),
      (["augment", "--dataset", "scan", "--data_dir", str(data)],
       f"{data}: scan is generated here and does not read --data_dir"),
      (["prepare", "scan", "--data_dir", str(data)],
       f"{data}: scan is generated here and does not read --data_dir")]:
    out = tmp_path / "o"
    assert cli.main(argv + ["--out", str(out)]) == 2, argv
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and text in lines[0], lines
    assert not (out / "summary.json").exists()
  # SCAN from local files reads it.
  (data / "train.tsv").write_text("walk\tI_WALK\n")
  (data / "test.tsv").write_text("run\tI_RUN\n")
  assert cli.main(["prepare", "scan", "--source", "local", "--data_dir",
                   str(data), "--out", str(tmp_path / "p")]) == 0
  # A tsv part the dataset does not read is said, naming the file.
  (data / "validation.tsv").write_text("run\tR\n")
  from csl_jax.data import registry  # pylint: disable=g-import-not-at-top
  (tmp_path / "t").mkdir()
  caplog.clear()
  registry.prepare(str(tmp_path / "t"), "tsv", data_dir=str(data))
  assert any(f"{data / 'validation.tsv'}: not read" in r.getMessage()
             for r in caplog.records)


def test_gin_errors_name_the_file_or_the_binding(tmp_path, capsys):
  """An unclosed bracket names the gin file (or the file it includes) and
  line; in a binding it says so; an experiment without its required
  bindings names them, how to set them and the gin files read."""
  bad = tmp_path / "bad.gin"
  bad.write_text("X = 3\nY = [1,\n")
  top = tmp_path / "top.gin"
  top.write_text(f"include '{bad}'\n")
  for flag, text in [
      (f"--gin_file={bad}", f"{bad}:3: gin configuration: EOF in "
       "multi-line statement"),
      (f"--gin_file={top}", f"{bad}:3: gin configuration: EOF in "
       "multi-line statement"),
      ("--gin.induce.max_nts=[1,", "gin configuration: EOF in multi-line "
       "statement in a --gin. binding")]:
    assert cli.main(["prepare", "scan", "--out", str(tmp_path / "x"),
                     flag]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and text in lines[0], lines
  assert cli.main(["experiment", "--out", str(tmp_path / "e")]) == 2
  lines = capsys.readouterr().err.strip().splitlines()
  assert lines[-1] == (
      "csl-jax: error: gin configuration: experiment.dataset, "
      "experiment.splits not set (an experiment's gin file sets them, e.g. "
      "--gin_file=gin/experiments/scan_addprim_jump.gin; gin files read: "
      "none)"), lines
  assert cli.main(["experiment", "--out", str(tmp_path / "e"),
                   "--gin_file=gin/experiments/geoquery_template_1.gin"]) == 2
  lines = capsys.readouterr().err.strip().splitlines()
  assert lines[-1] == (
      "csl-jax: error: gin configuration: experiment.data_dir not set "
      "(--gin.experiment.data_dir=\"'DIR'\"; gin files read: "
      "gin/experiments/geoquery_template_1.gin)"), lines


@pytest.mark.parametrize("argv", [[name] for name in cli.SUBCOMMANDS] +
                         [["prepare", "scan"], ["prepare", "cogs"]])
def test_every_stage_help_names_the_gin_flags(argv, capsys):
  with pytest.raises(SystemExit) as e:
    cli.main(argv + ["--help"])
  assert e.value.code == 0
  out = " ".join(capsys.readouterr().out.split())
  assert "--gin_file=F" in out and "--gin.NAME=VALUE" in out, out


def test_coverage_names_the_file_line_after_skipped_lines(tmp_path, capsys):
  """With --skip_malformed, an example over the length bound is named by
  its line in the file, not by its number among the examples kept."""
  data = tmp_path / "d.tsv"
  data.write_text("jump\tI_JUMP\nno tab here\nalso none\n"
                  "walk walk walk walk\tI_WALK\n")
  code = cli.main(["coverage", "--grammar", FIXTURE, "--data", str(data),
                   "--skip_malformed", "--max_source_len", "3", "--out",
                   str(tmp_path / "o")])
  assert code == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1 and f"{data}:4: input has 4 tokens" in err[0], err


def test_experiment_wait_flag_is_experiment_wait(tmp_path, monkeypatch):
  """The lock's message says "pass --wait": `experiment` takes it too."""
  from csl_jax.experiments import runner  # pylint: disable=g-import-not-at-top
  got = []
  monkeypatch.setattr(runner, "run", lambda out, gin_files=(), **kw:
                      got.append(kw) or {})
  for flags in ([], ["--wait"]):
    assert cli.main(["experiment", "--out", str(tmp_path / "x")]
                    + flags) == 0
  assert got == [{}, {"wait": True}]


def test_a_full_disk_is_one_line_not_a_traceback(tmp_path, monkeypatch,
                                                  capsys):
  """A full disk or a read-only directory is the machine's: one line
  naming the file, exit 2. Another OSError is a bug's traceback still."""
  import errno  # pylint: disable=g-import-not-at-top
  module = cli.SUBCOMMANDS["augment"]

  def full(args):
    del args
    raise OSError(errno.ENOSPC, "No space left on device",
                  str(tmp_path / "run" / "x.tmp.1"))

  monkeypatch.setattr(module, "main", full)
  assert cli.main(["augment", "--out", str(tmp_path / "run")]) == 2
  err = capsys.readouterr().err
  assert err == (f"csl-jax: error: {tmp_path / 'run' / 'x.tmp.1'}: No space "
                 "left on device; the same command resumes once that is "
                 "mended\n")

  def bug(args):
    del args
    raise OSError(errno.EBADF, "Bad file descriptor")

  monkeypatch.setattr(module, "main", bug)
  with pytest.raises(OSError):
    cli.main(["augment", "--out", str(tmp_path / "run")])


def _hold_lock(run_dir, ready, release):
  from csl_jax.pipeline import lock  # pylint: disable=g-import-not-at-top
  with lock.run_lock(run_dir):
    ready.set()
    release.wait(30)


def test_a_stage_out_in_use_by_another_run_is_refused(tmp_path, capsys):
  """Two `fit`s into one --out both exited 0, the second's summary.json
  beside the first's params.npz (or the other way round): a stage command
  holds its --out as `augment` holds its run directory."""
  import multiprocessing  # pylint: disable=g-import-not-at-top
  data = tmp_path / "d.tsv"
  data.write_text("jump twice\tI_JUMP I_JUMP\n")
  out = str(tmp_path / "cov")
  ctx = multiprocessing.get_context("spawn")
  ready, release = ctx.Event(), ctx.Event()
  holder = ctx.Process(target=_hold_lock, args=(out, ready, release))
  holder.start()
  try:
    assert ready.wait(60)
    assert cli.main(["coverage", "--grammar", FIXTURE, "--data", str(data),
                     "--out", out]) == 2
    err = capsys.readouterr().err
    assert f"in use by pid {holder.pid}" in err and "--wait" not in err
    assert not os.path.exists(os.path.join(out, "summary.json"))
  finally:
    release.set()
    holder.join(30)
  assert cli.main(["coverage", "--grammar", FIXTURE, "--data", str(data),
                   "--out", out]) == 0  # once it is free
  assert summary(out)["num_examples"] == 1


def test_out_of_memory_is_one_line_not_a_traceback(tmp_path, monkeypatch,
                                                   capsys):
  """A bound raised past what the machine holds (`fit --max_source_len
  6000` on a 5,000-token line) ended in numba's MemoryError traceback."""
  module = cli.SUBCOMMANDS["coverage"]

  def huge(args):
    del args
    raise MemoryError("Allocation failed (probably too large).\n"
                      "  In call to configurable 'fit' (<function fit>)")

  monkeypatch.setattr(module, "main", huge)
  data = tmp_path / "d.tsv"
  data.write_text("jump\tI_JUMP\n")
  assert cli.main(["coverage", "--grammar", FIXTURE, "--data", str(data),
                   "--out", str(tmp_path / "o")]) == 2
  err = capsys.readouterr().err
  assert err.startswith("csl-jax: error: out of memory (Allocation failed "
                        "(probably too large).): ")
  assert "--skip_too_long" in err and err.count("\n") == 1


@pytest.mark.parametrize("command", ["fit", "parse", "coverage", "induce"])
def test_length_bound_help_gives_the_defaults(command, capsys):
  """`fit --help` showed --max_source_len without its default (64) or
  what a longer example does."""
  from csl_jax.cky import forest  # pylint: disable=g-import-not-at-top
  with pytest.raises(SystemExit):
    cli.main([command, "--help"])
  text = " ".join(capsys.readouterr().out.split())
  assert f"--max_source_len MAX_SOURCE_LEN input tokens at most (default: " \
         f"{forest.DEFAULT_MAX_SOURCE_LEN}," in text
  if command != "parse":
    assert ("--max_target_len MAX_TARGET_LEN output tokens at most "
            f"(default: {forest.DEFAULT_MAX_TARGET_LEN},") in text
