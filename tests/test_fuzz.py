"""Every stage command against the bad-input corpus in tests/fuzz (issue 10).

Each case runs `csl_jax.cli.main.main([...])` and expects either
* return code 2 and exactly one `csl-jax: error:` line on stderr naming the
  file (and `FILE:LINE:` where there is a line), no traceback; or
* for inputs documented as valid or skippable (trailing blank lines, CRLF,
  a BOM, `--skip_malformed`, `--skip_too_long`): return code 0 and the
  documented counts in summary.json.
An exception escaping `main` fails the case with its traceback.

Static inputs live in tests/fuzz/{tsv,qcfg,cfg,good}; generated ones (a
5,000-token line, seeded random bytes, a directory, a missing file) are
made in a temporary directory. The model for parse/sample is written
directly (random parameters), so no case waits for training.
"""

import dataclasses
import json
import logging as py_logging
import os
import random
import shutil
import traceback
from typing import Dict, List, Optional, Tuple

import gin
import pytest

from csl_jax.cli import main as cli
from csl_jax.data import scan
from csl_jax.qcfg.rules import load_rules
from csl_jax.testing.models import random_model

HERE = os.path.dirname(os.path.abspath(__file__))
FUZZ = os.path.join(HERE, "fuzz")
GRAMMAR = os.path.join(HERE, "fixtures", "scan.qcfg")
TRAIN = os.path.join(FUZZ, "good", "train.tsv")
TEST = os.path.join(FUZZ, "good", "test.tsv")
PREDICTIONS = os.path.join(FUZZ, "good", "predictions.tsv")
NUM_GOOD = 20  # lines of good/train.tsv
TINY_FIT = ["--gin.FitConfig.num_steps=2", "--gin.FitConfig.num_restarts=1"]


def fuzz(*parts: str) -> str:
  return os.path.join(FUZZ, *parts)


@dataclasses.dataclass(frozen=True)
class Case:
  """argv with placeholders {out}, {model}, {gen}; `names`: the path the
  error must name (None: no file), `line` its line, `fragment` a part of
  the message; `ok`: summary.json entries expected instead of an error."""
  argv: Tuple[str, ...]
  names: Optional[str] = None
  line: Optional[int] = None
  fragment: Optional[str] = None
  ok: Optional[Dict] = None


# -------------------------------------------------------------- the cases --

# TSV inputs that are errors: (line, message fragment); line None: no line.
TSV_ERRORS = {
    "empty.tsv": (None, "no examples"),
    "blank_only.tsv": (None, "no examples"),
    "bom_only.tsv": (None, "no examples"),
    "blank_middle.tsv": (4, "empty line (blank lines are allowed only at "
                         "the end"),
    "whitespace_middle.tsv": (4, "empty line"),
    "three_columns.tsv": (3, "3 tab-separated fields"),
    "missing_tab.tsv": (3, "no tab"),
    "wrong_columns.tsv": (3, "4 tab-separated fields"),
    "empty_input.tsv": (3, "empty input"),
    "empty_output.tsv": (3, "empty output"),
    "lone_tab.tsv": (3, "empty input"),
    "non_utf8.tsv": (3, "not valid UTF-8"),
    "utf16.tsv": (1, "not valid UTF-8"),
    "truncated_midline.tsv": (5, "no tab"),
    "truncated_utf8.tsv": (3, "not valid UTF-8"),
}
# Valid as they are: the good pairs, nothing skipped.
TSV_VALID = ("valid_bom.tsv", "valid_trailing_blank.tsv", "valid_crlf.tsv",
             "valid_no_final_newline.tsv")

QCFG_ERRORS = {
    "empty.qcfg": (None, "no rules"),
    "comments_only.qcfg": (None, "no rules"),
    "syntax.qcfg": (2, "expected one '###'"),
    "nt_out_of_order.qcfg": (2, "numbered NT_1, NT_2"),
    "unknown_target_nt.qcfg": (2, "target NT NT_2 does not occur"),
    "duplicate.qcfg": (3, "duplicate rule (first on line 1)"),
    "bad_nt.qcfg": (2, "bad nonterminal 'NT_0'"),
    "non_utf8.qcfg": (2, "not valid UTF-8"),
    "truncated_utf8.qcfg": (2, "not valid UTF-8"),
}

CFG_ERRORS = {
    "empty.cfg": (None, "no productions"),
    "syntax.cfg": (2, "no `->`"),
    "epsilon.cfg": (2, "epsilon"),
    "unknown_directive.cfg": (1, "unknown directive %begin"),
    "non_utf8.cfg": (2, "not valid UTF-8"),
}

# Stage command lines with one input left open ({bad}).
TSV_STAGES = {
    "induce": ("induce", "--train", "{bad}", "--out", "{out}"),
    "coverage": ("coverage", "--grammar", GRAMMAR, "--data", "{bad}",
                 "--out", "{out}"),
    "fit": ("fit", "--grammar", GRAMMAR, "--train", "{bad}", "--out",
            "{out}", *TINY_FIT),
    "parse": ("parse", "--model", "{model}", "--data", "{bad}", "--out",
              "{out}"),
}
QCFG_STAGES = {
    "coverage": ("coverage", "--grammar", "{bad}", "--data", TRAIN, "--out",
                 "{out}"),
    "fit": ("fit", "--grammar", "{bad}", "--train", TRAIN, "--out", "{out}",
            *TINY_FIT),
    "induce_seed_rules": ("induce", "--train", TRAIN, "--seed_rules",
                          "{bad}", "--out", "{out}"),
}
CFG_STAGES = {
    "induce": ("induce", "--train", TRAIN, "--output_cfg", "{bad}", "--out",
               "{out}"),
}
# Every file flag, for a directory and a missing file.
FILE_FLAGS = {
    "induce_train": TSV_STAGES["induce"],
    "induce_seed_rules": QCFG_STAGES["induce_seed_rules"],
    "induce_output_cfg": CFG_STAGES["induce"],
    "coverage_grammar": QCFG_STAGES["coverage"],
    "coverage_data": TSV_STAGES["coverage"],
    "fit_grammar": QCFG_STAGES["fit"],
    "fit_train": TSV_STAGES["fit"],
    "parse_data": TSV_STAGES["parse"],
    "evaluate_predictions": ("evaluate", "--predictions", "{bad}", "--out",
                             "{out}"),
    "evaluate_other": ("evaluate", "--predictions", PREDICTIONS, "--other",
                       "{bad}", "--out", "{out}"),
}
# fit must check these before training (finding 10).
FIT_LATE_FLAGS = {
    "fit_eval": ("fit", "--grammar", GRAMMAR, "--train", TRAIN, "--eval",
                 "{bad}", "--out", "{out}", *TINY_FIT),
    "fit_output_cfg": ("fit", "--grammar", GRAMMAR, "--train", TRAIN,
                       "--output_cfg", "{bad}", "--out", "{out}",
                       *TINY_FIT),
    "fit_unlabeled": ("fit", "--grammar", GRAMMAR, "--train", TRAIN,
                      "--unlabeled", "{bad}", "--out", "{out}", *TINY_FIT),
}


def _fill(template, bad: str) -> Tuple[str, ...]:
  return tuple(bad if a == "{bad}" else a for a in template)


def _cases() -> List:
  params = []

  def add(case_id, case, marks=()):
    params.append(pytest.param(case, id=case_id, marks=marks))

  for stage, template in TSV_STAGES.items():
    for name, (line, fragment) in TSV_ERRORS.items():
      path = fuzz("tsv", name)
      add(f"tsv-{name}-{stage}", Case(_fill(template, path), path, line,
                                      fragment))
  # `prepare scan --source local` reads DIR/train.tsv: {gen}/local_*.
  for name, (line, fragment) in TSV_ERRORS.items():
    local = os.path.join("{gen}", f"local_{name}")
    add(f"tsv-{name}-prepare", Case(
        ("prepare", "scan", "--source", "local", "--data_dir", local,
         "--out", "{out}"), os.path.join(local, "train.tsv"), line,
        fragment))
  # augment on your own TSVs (--dataset tsv) reads DIR/train.tsv first.
  for name, (line, fragment) in TSV_ERRORS.items():
    local = os.path.join("{gen}", f"local_{name}")
    add(f"tsv-{name}-augment", Case(
        ("augment", "--dataset", "tsv", "--data_dir", local, "--out",
         "{out}"), os.path.join(local, "train.tsv"), line, fragment))
  # evaluate reads 2-3 columns; an empty prediction is no parse.
  for name, line, fragment in [
      ("empty.tsv", None, "no predictions"),
      ("blank_only.tsv", None, "no predictions"),
      ("blank_middle.tsv", 4, "expected input<TAB>prediction"),
      ("missing_tab.tsv", 3, "expected input<TAB>prediction"),
      ("non_utf8.tsv", 3, "not valid UTF-8"),
      ("utf16.tsv", 1, "not valid UTF-8"),
      ("truncated_utf8.tsv", 3, "not valid UTF-8")]:
    path = fuzz("tsv", name)
    add(f"tsv-{name}-evaluate", Case(
        ("evaluate", "--predictions", path, "--out", "{out}"), path, line,
        fragment))
  # NT_k tokens: induce refuses them (they would become nonterminals);
  # elsewhere they are plain unknown words (no parse).
  nt = fuzz("tsv", "nt_reserved.tsv")
  add("tsv-nt_reserved-induce", Case(_fill(TSV_STAGES["induce"], nt), nt, 3,
                                     "reserved for nonterminals"))
  add("tsv-nt_reserved-coverage", Case(
      _fill(TSV_STAGES["coverage"], nt),
      ok={"num_examples": 3, "num_skipped_malformed": 0}))
  add("tsv-nt_reserved-parse", Case(_fill(TSV_STAGES["parse"], nt),
                                    ok={"num_skipped_too_long": 0}))

  for name in TSV_VALID:
    path = fuzz("tsv", name)
    add(f"tsv-{name}-coverage", Case(
        _fill(TSV_STAGES["coverage"], path),
        ok={"num_examples": NUM_GOOD, "num_skipped_malformed": 0,
            "coverage": (1.0, 100.0)}))
    add(f"tsv-{name}-parse", Case(_fill(TSV_STAGES["parse"], path),
                                  ok={"num_skipped_too_long": 0}))
  path = fuzz("tsv", "valid_trailing_blank.tsv")
  add("tsv-valid_trailing_blank.tsv-induce", Case(
      _fill(TSV_STAGES["induce"], path),
      ok={"num_examples": NUM_GOOD, "num_skipped_malformed": 0}))
  for name, skipped in [("blank_middle.tsv", 1), ("three_columns.tsv", 1),
                        ("missing_tab.tsv", 1), ("truncated_midline.tsv", 1)]:
    path = fuzz("tsv", name)
    add(f"tsv-{name}-coverage-skip_malformed", Case(
        _fill(TSV_STAGES["coverage"], path) + ("--skip_malformed",),
        ok={"num_skipped_malformed": skipped}))
  path = fuzz("tsv", "blank_middle.tsv")
  add("tsv-blank_middle.tsv-induce-skip_malformed", Case(
      _fill(TSV_STAGES["induce"], path) + ("--skip_malformed",),
      ok={"num_skipped_malformed": 1, "num_examples": 6}))

  # Generated: a 5,000-token line (line NUM_GOOD + 1), random bytes.
  huge = os.path.join("{gen}", "huge_line.tsv")
  for stage in ("induce", "coverage", "fit", "parse"):
    add(f"gen-huge_line-{stage}", Case(_fill(TSV_STAGES[stage], huge), huge,
                                       NUM_GOOD + 1, "5000"))
  for stage in ("coverage", "parse"):
    add(f"gen-huge_line-{stage}-skip_too_long", Case(
        _fill(TSV_STAGES[stage], huge) + ("--skip_too_long",),
        ok={"num_skipped_too_long": 1}))
  for seed in range(3):
    noise = os.path.join("{gen}", f"random_{seed}.tsv")
    for stage in ("coverage", "parse"):
      add(f"gen-random_{seed}-{stage}", Case(
          _fill(TSV_STAGES[stage], noise), noise, None, "not valid UTF-8"))
    noise = os.path.join("{gen}", f"random_{seed}.qcfg")
    add(f"gen-random_{seed}-qcfg-coverage", Case(
        _fill(QCFG_STAGES["coverage"], noise), noise, None,
        "not valid UTF-8"))

  for stage, template in QCFG_STAGES.items():
    for name, (line, fragment) in QCFG_ERRORS.items():
      path = fuzz("qcfg", name)
      add(f"qcfg-{name}-{stage}", Case(_fill(template, path), path, line,
                                       fragment))
  for stage, template in CFG_STAGES.items():
    for name, (line, fragment) in CFG_ERRORS.items():
      path = fuzz("cfg", name)
      add(f"cfg-{name}-{stage}", Case(_fill(template, path), path, line,
                                      fragment))
  for name, (line, fragment) in CFG_ERRORS.items():
    path = fuzz("cfg", name)
    add(f"cfg-{name}-fit", Case(_fill(FIT_LATE_FLAGS["fit_output_cfg"], path),
                                path, line, fragment))

  for flag, template in FILE_FLAGS.items():
    add(f"directory-{flag}", Case(_fill(template, "{gen}"), "{gen}", None,
                                  "is a directory"))
    missing = os.path.join("{gen}", "missing.file")
    add(f"missing-{flag}", Case(_fill(template, missing), missing, None,
                                "no such file"))
  for flag, template in FIT_LATE_FLAGS.items():
    add(f"directory-{flag}", Case(_fill(template, "{gen}"), "{gen}", None,
                                  "is a directory"))
    missing = os.path.join("{gen}", "missing.file")
    add(f"missing-{flag}", Case(_fill(template, missing), missing, None,
                                "no such file"))
  missing_model = os.path.join("{gen}", "no_model")
  add("missing-parse_model", Case(
      ("parse", "--model", missing_model, "--data", TEST, "--out", "{out}"),
      missing_model, None, "not a fitted model directory"))
  add("missing-sample_model", Case(
      ("sample", "--model", missing_model, "--num", "3", "--out", "{out}"),
      missing_model, None, "not a fitted model directory"))
  add("missing-prepare_local_dir", Case(
      ("prepare", "scan", "--source", "local", "--data_dir",
       os.path.join("{gen}", "no_dir"), "--out", "{out}"),
      os.path.join("{gen}", "no_dir", "train.tsv"), None, "no such file"))

  # Sampling flags: degenerate values are errors (no file to name).
  sample = ("sample", "--model", "{model}", "--out", "{out}")
  for flags, fragment in [
      (("--num", "0"), ">= 1"), (("--num", "-5"), ">= 1"),
      (("--temperature", "0"), "temperature"),
      (("--temperature", "-1"), "temperature"),
      (("--temperature", "nan"), "temperature"),
      (("--depth_bias", "nan"), "depth_bias"),
      (("--depth_bias", "inf"), "depth_bias"),
      (("--max_depth", "0"), "max_depth"), (("--max_depth", "-2"), "max_depth"),
      (("--seed", "-1"), "seed"),
      (("--gin.SampleConfig.max_len=0",), "max_len"),
      (("--gin.SampleConfig.max_depth='deep'",), "max_depth")]:
    add("sample-" + "_".join(f.strip("-") for f in flags).replace("=", "_"),
        Case(sample + flags, None, None, fragment))
  for flags, fragment in [
      (("--select", "random", "--select_num", "0"), "--select_num"),
      (("--select", "random"), "--select_num"),
      (("--data_dir", os.path.join("{gen}", "no_dir")), "no such data")]:
    add("augment-" + "_".join(f.strip("-") for f in flags[:2]), Case(
        ("augment", "--dataset", "tsv", "--out", "{out}") + flags, None,
        None, fragment))
  add("sample-temperature_inf", Case(
      sample + ("--num", "5", "--temperature", "inf"),
      ok={"num_examples": 5, "num_short": 0}))
  # 16 rules at depth <= 1: far fewer than 500 distinct pairs.
  add("sample-dedup_short", Case(
      sample + ("--num", "500", "--dedup", "--max_depth", "1",
                "--gin.SampleConfig.max_attempts_factor=2"),
      ok={"num_requested": 500, "num_short": ">0"}))

  # Output directories and gin values: checked by the CLI.
  a_file = os.path.join("{gen}", "random_0.tsv")  # Never the corpus.
  add("out-is-a-file", Case(
      ("coverage", "--grammar", GRAMMAR, "--data", TRAIN, "--out", a_file),
      a_file, None, "not a directory"))
  # root writes into read-only directories: nothing to test there.
  add("out-read-only", Case(
      ("coverage", "--grammar", GRAMMAR, "--data", TRAIN, "--out",
       os.path.join("{gen}", "read_only", "out")),
      os.path.join("{gen}", "read_only", "out"), None, "permission"),
      pytest.mark.skipif(os.geteuid() == 0,
                         reason="root ignores permissions"))
  add("gin-wrong-type-fit", Case(
      ("fit", "--grammar", GRAMMAR, "--train", TRAIN, "--out", "{out}",
       "--gin.FitConfig.num_states='two'", *TINY_FIT),
      None, None, "num_states"))
  add("gin-wrong-type-induce", Case(
      ("induce", "--train", TRAIN, "--out", "{out}",
       "--gin.InductionConfig.max_nts='four'"), None, None, "max_nts"))
  # Out of range: refused before any work, not a traceback (or a silent
  # degenerate run) after it.
  for binding, fragment in (
      ("FitConfig.num_steps=0", "FitConfig.num_steps must be >= 1, got 0"),
      ("FitConfig.batch_size=-4", "FitConfig.batch_size must be >= 0"),
      ("FitConfig.num_states=0", "FitConfig.num_states must be >= 1"),
      ("FitConfig.learning_rate=-1.0",
       "FitConfig.learning_rate must be finite and > 0, got -1.0"),
      ("FitConfig.learning_rate=1e999",
       "FitConfig.learning_rate must be finite and > 0, got inf")):
    add(f"gin-range-fit-{binding.split('.')[1].split('=')[0]}", Case(
        ("fit", "--grammar", GRAMMAR, "--train", TRAIN, "--out", "{out}",
         *TINY_FIT, f"--gin.{binding}"), None, None, fragment))
  for binding, fragment in (
      ("max_nts=-1", "InductionConfig.max_nts must be >= 1, got -1"),
      ("max_steps=-3", "InductionConfig.max_steps must be >= 0"),
      ("num_partitions=0", "InductionConfig.num_partitions must be >= 1"),
      ("log_base=1.0", "InductionConfig.log_base must be finite and > 1")):
    add(f"gin-range-induce-{binding.split('=')[0]}", Case(
        ("induce", "--train", TRAIN, "--out", "{out}",
         f"--gin.InductionConfig.{binding}"), None, None, fragment))
  add("flag-range-fit-max-source-len", Case(
      ("fit", "--grammar", GRAMMAR, "--train", TRAIN, "--out", "{out}",
       "--max_source_len", "-1", *TINY_FIT), None, None,
      "fit.max_source_len must be >= 1, got -1"))
  add("flag-range-coverage-max-target-len", Case(
      ("coverage", "--grammar", GRAMMAR, "--data", TRAIN, "--out", "{out}",
       "--max_target_len", "0"), None, None,
      "coverage.max_target_len must be >= 1, got 0"))
  add("vocab-out-under-a-file", Case(
      ("vocab", "--tsv", TRAIN, "--out", os.path.join(a_file, "spm")),
      a_file, None, "cannot create the directory of --out"))
  add("augment-second-method-without-flag", Case(
      ("augment", "--out", "{out}", "--method", "csl", "geca"), None, None,
      "unexpected argument 'geca': each flag takes one value"))
  return params


CASES = _cases()

# ------------------------------------------------------------- fixtures --


@pytest.fixture(autouse=True)
def clear_gin():
  gin.clear_config()
  yield
  gin.clear_config()


@pytest.fixture(scope="module")
def gen(tmp_path_factory) -> str:
  """Generated inputs: huge line, random bytes, local dirs, read-only dir."""
  root = str(tmp_path_factory.mktemp("fuzz_gen"))
  with open(TRAIN, "rb") as f:
    good = f.read()
  tokens = ["walk"] + ["and", "walk"] * 2499 + ["twice"]  # 5,000 tokens
  with open(os.path.join(root, "huge_line.tsv"), "wb") as f:
    f.write(good + (" ".join(tokens) + "\t" +
                    " ".join(["I_WALK"] * 5000) + "\n").encode())
  for seed in range(3):
    rng = random.Random(seed)
    # Printable lines with high bytes spliced in: invalid UTF-8 somewhere.
    data = bytes(rng.choice(b"abc\t \n\x80\xc3\xff") for _ in range(400))
    for ext in ("tsv", "qcfg"):
      with open(os.path.join(root, f"random_{seed}.{ext}"), "wb") as f:
        f.write(data)
  for name in TSV_ERRORS:
    local = os.path.join(root, f"local_{name}")
    os.makedirs(local)
    shutil.copyfile(fuzz("tsv", name), os.path.join(local, "train.tsv"))
    shutil.copyfile(TEST, os.path.join(local, "test.tsv"))
  read_only = os.path.join(root, "read_only")
  os.makedirs(read_only)
  os.chmod(read_only, 0o555)
  return root


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> str:
  """A model directory for parse/sample: the SCAN fixture grammar with
  seeded random parameters (no training needed to test inputs)."""
  directory = str(tmp_path_factory.mktemp("fuzz_model"))
  random_model(load_rules(GRAMMAR), seed=0).save(directory)
  return directory


def _run(argv) -> int:
  """main(argv); any exception escaping it fails the test, with its
  traceback (argparse's own exit is a return code)."""
  try:
    return cli.main(list(argv))
  except SystemExit as e:
    return e.code
  except BaseException:  # pylint: disable=broad-except
    pytest.fail("exception escaped main:\n" + traceback.format_exc())


def _error_lines(err: str) -> List[str]:
  return [line for line in err.splitlines() if line.startswith("csl-jax:")]


def _check_summary(out: str, expected: Dict) -> None:
  with open(os.path.join(out, "summary.json")) as f:
    summary = json.load(f)
  for key, want in expected.items():
    if want == ">0":
      assert summary[key] > 0, (key, summary[key])
    elif isinstance(want, tuple):  # Fraction or percent, either is fine.
      assert summary[key] in want, (key, summary[key])
    else:
      assert summary[key] == want, (key, summary[key])


@pytest.mark.parametrize("case", CASES)
def test_stage_on_bad_input(case: Case, gen, model, tmp_path, capsys,
                            monkeypatch):
  monkeypatch.setenv("CSL_JAX_PROGRESS", "0")  # Log lines, not bars.
  out = str(tmp_path / "out")
  fill = lambda s: s.replace("{gen}", gen).replace("{model}", model).replace(
      "{out}", out)
  argv = [fill(a) for a in case.argv]
  rc = _run(argv)
  err = capsys.readouterr().err
  assert "Traceback" not in err, err
  if case.ok is not None:
    assert rc == 0, err
    assert not _error_lines(err), err
    _check_summary(out, case.ok)
    return
  assert rc == 2, f"rc {rc}; stderr:\n{err}"
  lines = _error_lines(err)
  assert len(lines) == 1, err
  message = lines[0]
  assert message.startswith("csl-jax: error: "), message
  if case.names is not None:
    where = fill(case.names)
    where += f":{case.line}: " if case.line is not None else ":"
    assert message.startswith(f"csl-jax: error: {where}"), message
  if case.fragment:
    assert case.fragment in message, message


def test_typo_in_output_cfg_category_is_a_warning_naming_file_and_line(
    tmp_path, capsys, caplog):
  path = fuzz("cfg", "typo_category.cfg")
  with caplog.at_level(py_logging.WARNING):
    rc = _run(["induce", "--train", TRAIN, "--output_cfg", path, "--out",
               str(tmp_path / "out")])
  assert rc == 0, capsys.readouterr().err
  warnings = [r.getMessage() for r in caplog.records
              if "misspelt category" in r.getMessage()]
  assert warnings and warnings[0].startswith(
      f"{path}:2: terminal 'Turnn' is one edit from the category 'Turn'")


def test_tfds_offline_fails_fast_with_one_line(tmp_path, capsys,
                                               monkeypatch):
  pytest.importorskip("tensorflow_datasets")
  monkeypatch.setattr(scan, "_reachable", lambda host, port: False)
  data_dir = str(tmp_path / "tfds")
  os.makedirs(data_dir)
  rc = _run(["prepare", "scan", "--source", "tfds", "--data_dir", data_dir,
             "--out", str(tmp_path / "out")])
  err = capsys.readouterr().err
  assert rc == 2, err
  [line] = _error_lines(err)
  assert line.startswith(f"csl-jax: error: {data_dir}: TFDS has no "
                         "prepared scan/addprim_jump")


def test_corpus_size():
  """The case count the issue reports (static files + generated)."""
  static = sum(len(os.listdir(fuzz(d))) for d in ("tsv", "qcfg", "cfg",
                                                   "good"))
  assert static == 38
  assert len(CASES) == 229  # + 2 tests above: cfg typo warning, TFDS
