"""`csl-jax augment` end to end on a SCAN subset (shortened): layout,
per-stage cache, selection, and byte-identical results after kill -9."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import time

import random

import gin
import pytest

from csl_jax import provenance
from csl_jax.cli import main as cli
from csl_jax.data import scan
from csl_jax.data import tsv
from csl_jax.errors import InputError

GIN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))), "gin", "csl", "scan_augment.gin")
SHORT = ["--gin.CSL.num_samples=2000", "--gin.FitConfig.num_steps=40",
         "--gin.FitConfig.num_restarts=2", "--gin.FitConfig.restart_steps=10",
         "--gin.InductionConfig.num_partitions=2"]


@pytest.fixture(scope="module")
def small_scan(tmp_path_factory):
  """300 addprim_jump training pairs (with `jump` alone) and 60 test pairs,
  as a `--dataset tsv` directory: the whole pipeline in seconds."""
  train, test = scan.make_split("addprim_jump")
  rng = random.Random(0)
  d = tmp_path_factory.mktemp("small_scan")
  tsv.write_tsv(str(d / "train.tsv"),
                rng.sample([e for e in train if e.input != "jump"], 300) +
                [tsv.Example("jump", "I_JUMP")])
  tsv.write_tsv(str(d / "test.tsv"), rng.sample(test, 60))
  return str(d)


def _read(path):
  with open(path) as f:
    return json.load(f)


def _data_flags(data):
  return ["--dataset", "tsv", "--data_dir", data]


def _run(out, data, *extra):
  gin.clear_config()
  try:
    return cli.main(["augment", "--out", out, f"--gin_file={GIN}"] + SHORT +
                    _data_flags(data) + list(extra))
  finally:
    gin.clear_config()


def _cached(out):
  return {k: v["cached"] for k, v in _read(os.path.join(out, "summary.json"))
          ["stages"].items()}


@pytest.fixture(scope="module")
def first_run(tmp_path_factory, small_scan):
  """(run directory, digest of its results) of one uninterrupted run; the
  digest is taken before any test reruns into the directory."""
  out = str(tmp_path_factory.mktemp("augment") / "run")
  assert _run(out, small_scan) == 0
  return out, _digest(out)


@pytest.fixture(scope="module")
def run_dir(first_run):
  return first_run[0]


def test_run_directory_contract(run_dir):
  for name in ("data/train.tsv", "data/test.tsv", "csl/induce/grammar.qcfg",
               "csl/fit/params.npz", "csl/parse/predictions.tsv",
               "csl/sample/samples.tsv", "csl/candidates.tsv",
               "csl/synthetic.tsv", "csl/summary.json", "report.html",
               "report.md", "report_files/input_length.png"):
    assert os.path.exists(os.path.join(run_dir, name)), name
  assert len(tsv.read_tsv(os.path.join(run_dir, "csl", "synthetic.tsv"))) \
      == 2000
  info = _read(os.path.join(run_dir, "csl", "summary.json"))
  assert info["stage_order"] == ["induce", "fit", "parse", "sample"]
  rows = dict(info["report_rows"])
  with open(os.path.join(run_dir, "csl", "induce", "grammar.qcfg")) as f:
    num_rules = sum(1 for line in f if "###" in line)
  assert rows["grammar rules"] == f"{num_rules} (csl/induce/grammar.qcfg)"
  with open(os.path.join(run_dir, "report.md")) as f:
    report = f.read()
  assert (f"| grammar rules | — | {num_rules} (csl/induce/grammar.qcfg) |"
          in report)
  assert "CSL parser exact match" in report and "## Preview: csl" in report
  # What wrote it, under its title (provenance.json has the rest).
  assert report.splitlines()[2] == (
      f"Written by {provenance.line()} (provenance.json).")
  assert provenance.line().startswith(f"csl_jax {provenance.describe()}, "
                                      "jax ")
  # Nothing short, no selection: the report as it was before either.
  assert "## Warnings" not in report and "## Selections" not in report
  assert set(_cached(run_dir).values()) == {False}


def test_only_changed_stages_rerun(run_dir, small_scan, monkeypatch):
  png = os.path.join(run_dir, "report_files", "output_length.png")
  drawn = os.stat(png).st_mtime_ns
  from csl_jax.pipeline import report  # pylint: disable=g-import-not-at-top
  real_read = report.tsv.read_tsv

  def unread(path, *a, **k):
    raise AssertionError(f"the report read {path} again")

  # Every stage cached: the report's data section is not read again (a
  # method's millions of lines), only its stage times are rewritten.
  monkeypatch.setattr(report.tsv, "read_tsv", unread)
  assert _run(run_dir, small_scan) == 0
  monkeypatch.setattr(report.tsv, "read_tsv", real_read)
  assert set(_cached(run_dir).values()) == {True}
  assert os.stat(png).st_mtime_ns == drawn  # the same figure is kept
  with open(os.path.join(run_dir, "report.md")) as f:
    text = f.read()
  assert "| csl | sample |" in text and "| cached |" in text
  assert "| pairs | " in text and "## Preview: csl" in text
  # A sampling setting: only sampling reruns.
  section = report.read_json(os.path.join(run_dir, "report_files",
                                         report.DATA_FILE))
  assert _run(run_dir, small_scan, "--gin.SampleConfig.temperature=2.0") == 0
  again = report.read_json(os.path.join(run_dir, "report_files",
                                       report.DATA_FILE))
  assert again["key"] != section["key"]  # new samples: read again
  assert again["previews"]["csl"] != section["previews"]["csl"]
  assert _cached(run_dir) == {"data": True, "csl/induce": True,
                              "csl/fit": True, "csl/parse": True,
                              "csl/sample": False}
  assert os.stat(png).st_mtime_ns != drawn  # other samples, redrawn
  # A fitting setting: fit and what reads the model rerun, not induction.
  assert _run(run_dir, small_scan, "--gin.SampleConfig.temperature=2.0",
              "--gin.FitConfig.learning_rate=0.05") == 0
  assert _cached(run_dir) == {"data": True, "csl/induce": True,
                              "csl/fit": False, "csl/parse": False,
                              "csl/sample": False}
  # An induction setting: induction reruns (the rest follows the grammar's
  # content: an identical grammar keeps the model).
  assert _run(run_dir, small_scan, "--gin.InductionConfig.max_steps=4") == 0
  cached = _cached(run_dir)
  assert not cached["csl/induce"] and cached["data"]


def test_selection_writes_a_seeded_subset(run_dir, small_scan):
  # Two selectors: each its own subset of the same candidates.
  assert _run(run_dir, small_scan, "--select", "random", "uat",
              "--select_num", "500") == 0
  pool = set(tsv.read_tsv(os.path.join(run_dir, "csl", "candidates.tsv")))
  for selector in ("random", "uat"):
    chosen = tsv.read_tsv(os.path.join(run_dir, "csl", f"{selector}_500",
                                       "synthetic.tsv"))
    assert len(chosen) == 500 and set(chosen) <= pool
    assert _cached(run_dir)[f"csl/{selector}_500"] is False
  assert _cached(run_dir)["csl/diversity"] is False
  with open(os.path.join(run_dir, "csl", "summary.json")) as f:
    assert json.load(f)["mixing"] == "equal"  # register_run's rates
  # The report: each selection's templates covered, H(A) and H(C) against
  # random ones of its size, as diversity.py gives them.
  from csl_jax.pipeline import augment  # pylint: disable=g-import-not-at-top
  from csl_jax.selection import diversity  # pylint: disable=g-import-not-at-top
  from csl_jax.selection import templates  # pylint: disable=g-import-not-at-top
  candidates = tsv.read_tsv(os.path.join(run_dir, "csl", "candidates.tsv"))
  first = {}
  for i, ex in enumerate(candidates):
    first.setdefault(ex, i)
  chosen = {f"{s}_500": tsv.read_tsv(os.path.join(run_dir, "csl", f"{s}_500",
                                                  "synthetic.tsv"))
            for s in ("random", "uat")}
  feats = diversity.featurize(candidates)
  train = tsv.read_tsv(os.path.join(run_dir, "data", "train.tsv"))
  rows = diversity.report_rows(
      feats, {n: [first[ex] for ex in exs] for n, exs in chosen.items()},
      seed=0, random_repeats=augment.RANDOM_REPEATS,
      train_templates=diversity.templates_of(train, "scan"))
  with open(os.path.join(run_dir, "report.md")) as f:
    report = f.read()
  with open(os.path.join(run_dir, "report.html")) as f:
    page = f.read()
  abst = templates.get("scan")  # by hand: the commands' templates

  def template(command):  # None for a sample that is no SCAN command
    try:
      return abst.template(abst.tree(abst.key(command)))
    except InputError:
      return None

  for row, rand in zip(rows[::2], rows[1::2]):
    covered = {template(ex.input)
               for ex in chosen[row["selector"]]} - {None}
    assert row["templates_covered"] == len(covered)
    # Oren's Table 8: with the training set's templates.
    with_train = len(covered | {template(ex.input) for ex in train})
    assert row["templates_with_train"] == with_train > len(covered)
    cells = (f'| csl | {row["selector"]} | 500 | {len(covered):,} | '
             f'{with_train:,} | '
             f'{row["atom_entropy"]:.3f} | {row["compound_entropy"]:.3f} | '
             f'{rand["templates_covered"]:,.1f} | '
             f'{rand["templates_with_train"]:,.1f} | '
             f'{rand["atom_entropy"]:.3f} '
             f'| {rand["compound_entropy"]:.3f} |')
    assert cells in report, cells
    assert f'<td>{row["selector"]}</td><td>500</td>' in page
  plot = "csl/diversity/template_frequency.png"
  assert f"]({plot})" in report and f'src="{plot}"' in page
  assert os.path.getsize(os.path.join(run_dir, plot)) > 0


GECA_GIN = os.path.join(os.path.dirname(GIN), "..", "geca", "scan.gin")


def _run_geca(out, data, *extra):
  gin.clear_config()
  try:
    return cli.main(["augment", "--out", out, f"--gin_file={GECA_GIN}",
                     "--method", "geca"] + _data_flags(data) + list(extra))
  finally:
    gin.clear_config()


def test_a_short_selection_is_logged_and_reported(tmp_path, small_scan,
                                                  caplog):
  # GECA makes a few hundred pairs; 5,000 asked of each selector.
  out = str(tmp_path / "r")
  with caplog.at_level("WARNING"):
    assert _run_geca(out, small_scan, "--select", "random", "uat",
                     "--select_num", "5000") == 0
  made = len(tsv.read_tsv(os.path.join(out, "geca", "candidates.tsv")))
  assert 0 < made < 5000
  with open(os.path.join(out, "report.md")) as f:
    report = f.read()
  for selector in ("random", "uat"):
    line = (f"geca/{selector}_5000: {made:,} of 5,000 asked (the pool holds "
            f"{made:,})")
    assert f"- {line}\n" in report and line in caplog.text
    assert len(tsv.read_tsv(os.path.join(out, "geca", f"{selector}_5000",
                                         "synthetic.tsv"))) == made
  # The whole pool each: its figures, and random's of the same size.
  assert f"| geca | uat_5000 | {made:,} |" in report
  caplog.clear()
  with caplog.at_level("WARNING"):  # cached: said again
    assert _run_geca(out, small_scan, "--select", "random", "uat",
                     "--select_num", "5000") == 0
  assert "geca/uat_5000: " in caplog.text


def test_geca_making_nothing_new_is_logged_and_reported(tmp_path, caplog):
  # GECA's two fills both give an output of the training data.
  data = tmp_path / "data"
  data.mkdir()
  tsv.write_tsv(str(data / "train.tsv"), [
      ("I sing", "Canto"),
      ("I sing maravillosamente", "Canto maravillosamente"),
      ("I dax maravillosamente", "Dajo maravillosamente"),
      ("we dax", "Dajo")])
  out = str(tmp_path / "r")
  with caplog.at_level("WARNING"):
    assert _run_geca(out, str(data)) == 0
  assert "geca: 0 new pairs (2 candidates, 2 with an input or output " \
      "already in the training data" in caplog.text
  with open(os.path.join(out, "report.md")) as f:
    report = f.read()
  assert ("## Warnings\n\n- geca: 0 new pairs (2 candidates, all with an "
          "input or output already in the training data)\n") in report
  assert "| pairs | 4 | 0 |" in report


def test_bad_flags_stop_before_work(tmp_path, capsys, small_scan):
  out = str(tmp_path / "r")
  assert _run(out, small_scan, "--select", "random") == 2
  assert "--select_num" in capsys.readouterr().err
  assert _run(out, str(tmp_path / "nope")) == 2
  assert "no such data directory" in capsys.readouterr().err
  assert _run(out, small_scan, "--select", "random", "--select_num", "5",
              "--select_seed", "-1") == 2
  assert "--select_seed must be >= 0" in capsys.readouterr().err
  assert not os.path.exists(os.path.join(out, "csl"))


def _digest(out):
  h = hashlib.sha256()
  for name in ("csl/induce/grammar.qcfg", "csl/fit/params.npz",
               "csl/synthetic.tsv"):
    with open(os.path.join(out, name), "rb") as f:
      h.update(f.read())
  return h.hexdigest()


def _command(out, data):
  return [sys.executable, "-m", "csl_jax.cli.main", "augment", "--out", out,
          f"--gin_file={GIN}"] + SHORT + _data_flags(data)


def test_kill_9_then_rerun_gives_the_same_bytes(tmp_path, small_scan,
                                               first_run):
  """A smaller version of the issue's 10 kills (scripts/kill_resume_check.py):
  kill -9 during fitting, rerun, compare with the uninterrupted run."""
  out = str(tmp_path / "killed")
  env = dict(os.environ, CSL_JAX_PROGRESS="0")
  marker = os.path.join(out, "csl", "fit", "stage_key.json")
  proc = subprocess.Popen(_command(out, small_scan), env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  deadline = time.time() + 300
  while (not os.path.exists(marker) and proc.poll() is None
         and time.time() < deadline):
    time.sleep(0.05)
  proc.send_signal(signal.SIGKILL)
  assert proc.wait() == -signal.SIGKILL  # killed, not finished
  assert subprocess.run(_command(out, small_scan), env=env,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL).returncode == 0
  assert _digest(out) == first_run[1]


def test_output_depth_counts_bracket_nesting():
  from csl_jax.pipeline.report import output_depth  # pylint: disable=g-import-not-at-top
  assert output_depth("I_WALK I_WALK") == 0
  assert output_depth("answer ( count ( state ( all ) ) )") == 3
  assert output_depth("* cat ( x _ 1 ) ; dog . agent ( x _ 2 , x _ 1 )") == 1
  assert output_depth("[ a ( b ) ] ( c )") == 2
  assert output_depth(") )") == 0


def test_cli_freezes_the_imports_only_as_a_process_of_its_own(tmp_path):
  import gc  # pylint: disable=g-import-not-at-top
  before = gc.get_freeze_count()
  out = str(tmp_path / "scan")
  assert cli.main(["prepare", "scan", "--split", "simple", "--out", out]) == 0
  assert gc.get_freeze_count() == before  # in-process use: nothing frozen
  code = ("import gc, sys; from csl_jax.cli import main\n"
          "sys.argv = ['csl-jax', 'prepare', 'scan', '--split', 'simple', "
          f"'--out', {out + '2'!r}]\n"
          "try:\n  main.run()\nexcept SystemExit as e:\n"
          "  assert e.code == 0 and gc.get_freeze_count() > 0, e.code\n")
  subprocess.run([sys.executable, "-c", code], check=True)


def test_many_series_are_lines_few_are_bars(tmp_path, monkeypatch):
  """Side-by-side bars of six series are too thin to see (a newcomer's
  finding): past three, each series is a line with its own marker."""
  from csl_jax import files  # pylint: disable=g-import-not-at-top
  from csl_jax.pipeline import report  # pylint: disable=g-import-not-at-top
  drawn = []
  monkeypatch.setattr(files, "atomic_save_figure",
                      lambda fig, path, dpi: drawn.append(fig))
  for n, png in ((2, "few.png"), (4, "many.png")):
    report._histogram_png(  # pylint: disable=protected-access
        str(tmp_path / png), "t", "x",
        {f"s{k}": [1, 2, 2, k + 3] for k in range(n)})
  few, many = (fig.axes[0] for fig in drawn)
  assert len(few.patches) == 2 * 4 and not few.lines  # 4 values, 2 series
  assert len(many.lines) == 4 and not many.patches
  assert len({line.get_marker() for line in many.lines}) == 4
  assert list(many.lines[3].get_ydata()) == [25.0, 50.0, 0, 0, 0, 25.0]


def test_from_python_configure_reads_the_datasets_settings(tmp_path, caplog):
  """`augment()` from Python without the dataset's settings says so (it
  ran SCAN's CSL with the class defaults: max_nts 4, not 2, silently);
  `augment.configure` reads them, then the user's bindings on top, and can
  be called again (gin left unlocked)."""
  # pylint: disable=g-import-not-at-top
  from csl_jax import gin_defaults
  from csl_jax.pipeline import augment
  # pylint: enable=g-import-not-at-top
  saved = list(gin_defaults._CONFIGURED)  # pylint: disable=protected-access
  try:
    gin_defaults._CONFIGURED.clear()  # pylint: disable=protected-access
    with gin.unlock_config():
      gin.clear_config()
    with pytest.raises(InputError, match="unknown scan split"):
      augment.augment(str(tmp_path / "a"), dataset="scan", split="nope")
    assert ("augment(dataset='scan') called without the dataset's settings "
            "(gin/csl/scan_augment.gin)") in caplog.text
    assert "augment.configure('scan', ['csl'], ...)" in caplog.text
    caplog.clear()
    for samples in (1000, 700):
      assert augment.configure("scan", ["csl"], bindings=[
          f"CSL.num_samples = {samples}"]) == ["gin/csl/scan_augment.gin"]
      assert gin.query_parameter("CSL.num_samples") == samples
      assert gin.query_parameter("InductionConfig.max_nts") == 2  # SCAN's
    with pytest.raises(InputError, match="unknown scan split"):
      augment.augment(str(tmp_path / "b"), dataset="scan", split="nope")
    assert "called without the dataset's settings" not in caplog.text
  finally:
    gin_defaults._CONFIGURED[:] = saved  # pylint: disable=protected-access
    with gin.unlock_config():
      gin.clear_config()


class _Described:
  """A method whose last stage describes the candidates of the one before
  (as pcfg_bt's statistics); `name_them` False: it forgets to say whose."""
  name = "described_test"
  name_them = True

  def stages(self, data, workdir):
    # pylint: disable-next=g-import-not-at-top
    from csl_jax.methods import base as method_base

    def make(directory):
      path = os.path.join(directory, "candidates.tsv")
      tsv.write_tsv(path, [tsv.Example("walk walk", "I_WALK I_WALK")])
      return {"candidates": path}

    def describe(directory):
      del directory
      return {"candidates_from": "make"} if self.name_them else {}

    return [method_base.Stage("make", [data.train], {}, make),
            method_base.Stage("describe", [data.train],
                              {"name_them": self.name_them}, describe)]

  def report_rows(self, summaries):
    del summaries
    return []


def test_a_last_stage_that_describes_names_whose_candidates(tmp_path,
                                                           small_scan):
  """The candidates published are those of the stage the last one names;
  a last stage that names none is an error, not an earlier file."""
  # pylint: disable-next=g-import-not-at-top
  from csl_jax.methods import base as method_base
  from csl_jax.pipeline import augment as augment_lib  # pylint: disable=g-import-not-at-top
  method_base.add(_Described.name, _Described)
  out = str(tmp_path / "run")
  augment_lib.augment(out, "tsv", data_dir=small_scan,
                      methods=[_Described.name])
  assert tsv.read_tsv(os.path.join(out, _Described.name, "candidates.tsv")
                      ) == [tsv.Example("walk walk", "I_WALK I_WALK")]
  _Described.name_them = False
  try:
    with pytest.raises(RuntimeError, match="nor a `candidates_from` stage"):
      augment_lib.augment(str(tmp_path / "run2"), "tsv", data_dir=small_scan,
                          methods=[_Described.name])
  finally:
    _Described.name_them = True


def test_selection_without_a_parts_templates(run_dir, small_scan, capsys):
  """`augment.exclude_templates.part`: the selections leave out the test
  part's templates (SCAN's command templates; a part the run lacks is a
  one-line error)."""
  assert _run(run_dir, small_scan, "--select", "random", "--select_num",
              "200", "--gin.augment.exclude_templates.part='nope'") == 2
  assert "the run has no 'nope' part" in capsys.readouterr().err
  assert _run(run_dir, small_scan, "--select", "random", "--select_num",
              "200", "--gin.augment.exclude_templates.part='test'") == 0
  from csl_jax.selection import diversity  # pylint: disable=g-import-not-at-top
  banned = diversity.templates_of(
      tsv.read_tsv(os.path.join(run_dir, "data", "test.tsv")), "scan")
  chosen = tsv.read_tsv(os.path.join(run_dir, "csl", "random_200",
                                     "synthetic.tsv"))
  assert len(chosen) == 200
  assert not diversity.templates_of(chosen, "scan") & banned
  summary = _read(os.path.join(run_dir, "csl", "random_200", "summary.json"))
  assert summary["excluded"]["part"] == "test"
  assert summary["excluded"]["candidates"] > 0


def test_scan_candidates_are_checked_by_the_interpreter(tmp_path):
  """peers.md §5: an augmentation says its correctness where an
  interpreter exists. By hand: `walk twice` is right, `run left` wrong
  (I_TURN_LEFT I_RUN), `walk walk` no SCAN command, and a copy `jump@2
  twice` right once read as `jump twice`."""
  from csl_jax.pipeline import augment  # pylint: disable=g-import-not-at-top
  from csl_jax.pipeline import cache  # pylint: disable=g-import-not-at-top
  path = tmp_path / "candidates.tsv"
  tsv.write_tsv(str(path), [("walk twice", "I_WALK I_WALK"),
                            ("run left", "I_RUN I_TURN_LEFT"),
                            ("walk walk", "I_WALK I_WALK"),
                            ("jump@2 twice", "I_JUMP@2 I_JUMP@2")])
  plain = cache.run_stage(augment.interpreter_stage(str(path)),
                          str(tmp_path / "plain"))
  assert (plain["checked"], plain["correct"], plain["not_commands"]) \
      == (4, 1, 2)
  copies = cache.run_stage(augment.interpreter_stage(str(path), True),
                           str(tmp_path / "copies"))
  assert (copies["correct"], copies["not_commands"]) == (2, 1)
  assert augment.interpreter_row(copies) == (
      "Pairs SCAN's interpreter confirms (inputs that are no SCAN "
      "command)", "2 of 4 (50.00 %; 1)")
  # SCAN*'s (SCAN's four verbs and p4..p199, no `turn`): `p7 twice` is
  # right, `p7` wrong, `turn left` and `p3` (no verb) no SCAN* commands.
  star = tmp_path / "star.tsv"
  tsv.write_tsv(str(star), [("p7 twice", "I_P7 I_P7"), ("p7", "I_JUMP"),
                            ("turn left", "I_TURN_LEFT"), ("p3", "I_P3")])
  got = cache.run_stage(augment.interpreter_stage(str(star), False,
                                                  "scan_star"),
                        str(tmp_path / "star"))
  assert (got["checked"], got["correct"], got["not_commands"]) == (4, 1, 2)
