"""Library-level input robustness (issue 10): readers, bounds, configs."""

import json
import logging as py_logging
import math
import os
import sys
import tempfile
import time

import numpy as np
import pytest

from csl_jax.cli import main as cli
from csl_jax import progress as progress_lib
from csl_jax import quiet
from csl_jax.data import scan
from csl_jax.data import tsv
from csl_jax.errors import InputError
from csl_jax.files import read_text
from csl_jax.model import viterbi
from csl_jax.qcfg import output_cfg as cfg_lib
from csl_jax.qcfg import rules as rules_lib
from csl_jax.sampling import sampler
from csl_jax.testing.models import TOY_RULES, random_model

# ------------------------------------------------------------------- TSV --


def _tsv(tmp_path, data: bytes, name="d.tsv"):
  path = tmp_path / name
  path.write_bytes(data)
  return str(path)


def test_bom_is_stripped(tmp_path):
  path = _tsv(tmp_path, "\ufeffwalk\tI_WALK\nrun\tI_RUN\n".encode("utf-8"))
  assert tsv.read_tsv(path)[0] == ("walk", "I_WALK")


@pytest.mark.parametrize("data", [b"", b"\n", b"\n\n  \n", b"\xef\xbb\xbf"])
def test_empty_or_blank_file_is_no_examples(tmp_path, data):
  path = _tsv(tmp_path, data)
  with pytest.raises(InputError, match="no examples") as e:
    tsv.read_tsv(path)
  assert e.value.source == path
  assert tsv.read_tsv(path, allow_empty=True) == []


def test_all_lines_skipped_is_no_examples(tmp_path):
  path = _tsv(tmp_path, b"a\nb\n")
  with pytest.raises(InputError, match="all 2 lines are malformed"):
    tsv.read_tsv(path, skip_malformed=True)


def test_trailing_blank_lines_and_crlf_are_fine(tmp_path):
  path = _tsv(tmp_path, b"walk\tW\r\nrun\tR\r\n\r\n\n   \n")
  stats = tsv.ReadStats()
  assert tsv.read_tsv(path, stats=stats) == [("walk", "W"), ("run", "R")]
  assert stats.num_skipped == 0


def test_blank_line_in_the_middle_is_an_error_that_explains(tmp_path):
  path = _tsv(tmp_path, b"walk\tW\n\nrun\tR\n")
  with pytest.raises(InputError) as e:
    tsv.read_tsv(path)
  assert str(e.value).startswith(f"{path}:2: empty line")
  assert "only at the end" in str(e.value)
  stats = tsv.ReadStats()
  assert len(tsv.read_tsv(path, skip_malformed=True, stats=stats)) == 2
  assert stats.skipped == [(2, e.value.message)]


def test_lone_tab_line_is_malformed_even_at_the_end(tmp_path):
  with pytest.raises(InputError, match=":2: "):
    tsv.read_tsv(_tsv(tmp_path, b"walk\tW\n\t\n"))


def test_non_utf8_names_file_and_line(tmp_path):
  path = _tsv(tmp_path, b"walk\tW\nrun\tR\ncaf\xe9\tC\n")
  with pytest.raises(InputError, match="not valid UTF-8") as e:
    tsv.read_tsv(path)
  assert (e.value.source, e.value.line) == (path, 3)
  assert "column 4" in str(e.value)


def test_truncated_utf8_sequence_names_the_line(tmp_path):
  path = _tsv(tmp_path, "walk\tW\nx\t\u00e9".encode("utf-8")[:-1])
  with pytest.raises(InputError, match="not valid UTF-8") as e:
    tsv.read_tsv(path)
  assert e.value.line == 2


@pytest.mark.parametrize("reader", [tsv.read_tsv, rules_lib.load_rules,
                                    cfg_lib.load_output_cfg, read_text])
def test_directory_and_missing_file_are_one_line_errors(tmp_path, reader):
  with pytest.raises(InputError, match="is a directory") as e:
    reader(str(tmp_path))
  assert e.value.source == str(tmp_path)
  with pytest.raises(InputError, match="no such file"):
    reader(str(tmp_path / "missing"))


# ------------------------------------------------------- .qcfg and .cfg --


def test_qcfg_non_utf8_and_empty(tmp_path):
  path = tmp_path / "g.qcfg"
  path.write_bytes(b"walk ### W\n\xff ### X\n")
  with pytest.raises(InputError, match="not valid UTF-8") as e:
    rules_lib.load_rules(path)
  assert e.value.line == 2
  path.write_bytes(b"# only a comment\n\n")
  with pytest.raises(InputError, match="no rules"):
    rules_lib.load_rules(path)
  assert rules_lib.load_rules(path, allow_empty=True) == []
  path.write_bytes("\ufeffwalk ### W\n".encode("utf-8"))
  assert rules_lib.load_rules(path)[0].source == ("walk",)


def test_cfg_non_utf8_and_bom(tmp_path):
  path = tmp_path / "o.cfg"
  path.write_bytes(b"Q -> a\nQ -> \xe9\n")
  with pytest.raises(InputError, match="not valid UTF-8") as e:
    cfg_lib.load_output_cfg(path)
  assert e.value.line == 2
  path.write_bytes("\ufeffQ -> a\n".encode("utf-8"))
  assert cfg_lib.load_output_cfg(path).categories == ("Q",)


TYPO = "Q -> answer ( E )\nE -> Cty | state\nCity -> m0 | m1\n"


def test_cfg_typo_in_category_is_warned_with_line(caplog):
  with caplog.at_level(py_logging.WARNING):
    cfg = cfg_lib.parse_output_cfg(TYPO, source="t.cfg")
  assert "Cty" in cfg.terminals  # The format says so; hence a warning.
  [message] = [r.getMessage() for r in caplog.records
               if "misspelt" in r.getMessage()]
  assert message.startswith("t.cfg:2: terminal 'Cty' is one edit from the "
                            "category 'City', which no right-hand side uses")
  with pytest.raises(InputError, match="misspelt") as e:
    cfg_lib.parse_output_cfg(TYPO, source="t.cfg", strict=True)
  assert e.value.line == 2


def test_cfg_quoted_or_differently_cased_terminals_are_not_warned(caplog):
  with caplog.at_level(py_logging.WARNING):
    # (City used: a category on no right-hand side is said otherwise.)
    cfg_lib.parse_output_cfg(TYPO.replace("Cty", '"Cty" | City'),
                             strict=True)
    # FunQL style: `state` next to `State`, `sum` next to `Num`.
    cfg_lib.parse_output_cfg("State -> state | sum ( Num )\nNum -> 0\n",
                             strict=True)
  assert not [r for r in caplog.records if "misspelt" in r.getMessage()]


@pytest.mark.parametrize("path", ["tasks/cogs/varfree.cfg",
                                  "tasks/geoquery/funql.cfg"])
def test_shipped_cfgs_pass_the_strict_check(path):
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  cfg_lib.load_output_cfg(os.path.join(root, path), strict=True)


# --------------------------------------------------------- length bounds --

RULES = TOY_RULES


def _model(seed=0, num_states=2):
  return random_model(RULES, seed, num_states)


def _parse_args(m):
  return m.rules, m.grammar, m.log_p, m.ctx_index


def test_parse_refuses_inputs_over_the_length_bound():
  m = _model()
  long_input = " and ".join(["walk"] * 40)  # 79 tokens > 64
  with pytest.raises(InputError, match="input 2: 79 tokens, more than 64"
                     ) as e:
    viterbi.parse_batch(*_parse_args(m), ["walk", long_input],
                        source="d.tsv")
  assert (e.value.source, e.value.line) == ("d.tsv", 2)
  got = viterbi.parse_batch(*_parse_args(m), ["walk", long_input, "run"],
                            skip_too_long=True)
  assert [r.target for r in got] == [("W",), None, ("R",)]
  assert got[1].skipped.startswith("79 tokens")
  assert viterbi.num_skipped(got) == 1
  assert viterbi.parse_batch(*_parse_args(m), [long_input],
                             max_source_len=100)[0].parsed


def test_parse_refuses_charts_over_the_memory_budget():
  m = _model()
  x = " and ".join(["walk twice"] * 10)
  with pytest.raises(InputError, match="GiB, more than max_chart_bytes"):
    viterbi.parse_batch(*_parse_args(m), [x], max_chart_bytes=100_000)
  got = viterbi.parse_batch(*_parse_args(m), [x], max_chart_bytes=100_000,
                            skip_too_long=True)
  assert got[0].skipped and not got[0].parsed


def test_chart_estimate_grows_as_expected():
  small = viterbi.chart_bytes(10, 100, 5, 2, 4, 1)
  assert viterbi.chart_bytes(100, 100, 5, 2, 4, 1) > 10 * small  # n^2 tables
  # 4,999 tokens of `walk and walk ...`: ~n^3/12 = 10^10 edges, far over.
  assert viterbi.chart_bytes(4999, 10**10, 6, 2, 4, 1) > (
      viterbi.DEFAULT_MAX_CHART_BYTES)


def test_parse_stops_a_source_chart_over_the_byte_budget():
  """With the length bound raised, 4,999 tokens of `walk and walk ...` grew
  their source chart (~10^10 edges) to the machine's memory before the
  chart estimate could refuse them: the edges stop at the budget."""
  from csl_jax.cky import forest  # pylint: disable=g-import-not-at-top
  m = _model()
  tokens = " and ".join(["walk"] * 20).split()  # 39 tokens, 1,350 edges
  scratch = forest.source_chart_scratch(m.grammar)
  whole = forest.source_chart(m.grammar, tokens, scratch)
  assert len(whole[1]) == 1350
  assert forest.source_chart(m.grammar, tokens, scratch, 1349) is None
  same = forest.source_chart(m.grammar, tokens, scratch, 1350)
  assert all(np.array_equal(a, b) for a, b in zip(same, whole))
  budget = 1000 * (12 + 8 * 2)  # the edges of 1,000: less than 1,350
  with pytest.raises(InputError, match="input 2: its source chart has "
                     "more than 1,000 edges"):
    viterbi.parse_batch(*_parse_args(m), ["walk", " ".join(tokens)],
                        max_chart_bytes=budget)
  results = viterbi.parse_batch(*_parse_args(m), ["walk", " ".join(tokens)],
                                max_chart_bytes=budget, skip_too_long=True)
  assert results[0].parsed and not results[1].parsed
  assert "more than 1,000 edges" in results[1].skipped


def test_parse_of_a_batch_equals_each_input_alone():
  # The inputs share the parser's scratch (the chart's context numbering),
  # which each input must leave as it found it.
  m = _model(3)
  inputs = ["walk and run twice", "run", "walk twice and run twice", "x",
            "run and walk and run"] * 3
  batch = viterbi.parse_batch(*_parse_args(m), inputs)
  alone = [viterbi.parse(*_parse_args(m), x) for x in inputs]
  assert batch == alone
  assert [r.parsed for r in batch[:5]] == [True, True, True, False, True]
  assert viterbi.parse_batch(*_parse_args(m), iter(inputs)) == batch
  kbest = viterbi.kbest_batch(*_parse_args(m), inputs, k=4)
  assert kbest == [viterbi.kbest_batch(*_parse_args(m), [x], k=4)[0]
                   for x in inputs]


def test_fit_dataset_bounds_lengths():
  from csl_jax.model import train  # pylint: disable=g-import-not-at-top
  pairs = [(["walk"], ["W"]), (["walk"] * 70, ["W"] * 70), (["run"], ["R"])]
  with pytest.raises(InputError, match="example 2 has 70 input") as e:
    train.Dataset(RULES, pairs, 2, source="t.tsv")
  assert (e.value.source, e.value.line) == ("t.tsv", 2)
  data = train.Dataset(RULES, pairs, 2, skip_too_long=True)
  assert data.num_too_long == 1 and len(data.pairs) == 2
  data = train.Dataset(RULES, pairs, 2, max_source_len=100,
                       max_target_len=100)
  assert data.num_too_long == 0 and len(data.pairs) == 3


def test_induce_bound_says_how_to_raise_it_or_skip(tmp_path, caplog):
  """`induce`'s bound names its flags; --skip_too_long leaves the long
  example out of the induction and its seed rules, counted and said."""
  from csl_jax.methods.csl import induce  # pylint: disable=g-import-not-at-top
  train_tsv = tmp_path / "t.tsv"
  train_tsv.write_text("walk\tI_WALK\n" + " and ".join(["walk"] * 40) +
                       "\t" + " ".join(["I_WALK"] * 40) + "\n"
                       "run\tI_RUN\n")
  with pytest.raises(InputError, match=r"79 > 64 .*--max_source_len N .*"
                     r"--skip_too_long") as e:
    induce.induce(str(tmp_path / "out"), str(train_tsv))
  assert e.value.line == 2
  # augment runs induce too, without those flags: its gin bindings said.
  assert "--gin.induce.max_source_len=N" in str(e.value)
  out = tmp_path / "cli"
  assert cli.main(["induce", "--train", str(train_tsv), "--out", str(out),
                   "--skip_too_long", "--gin.InductionConfig.max_nts=1"]) == 0
  summary = json.loads((out / "summary.json").read_text())
  assert summary["num_skipped_too_long"] == 1
  assert summary["num_examples"] == 2
  assert "t.tsv:2: 1 of 3 examples are over the length bounds" in caplog.text
  with open(out / "grammar.qcfg") as f:
    assert "and" not in f.read()
  # Raised, the bound takes the example in.
  assert cli.main(["induce", "--train", str(train_tsv), "--out",
                   str(tmp_path / "cli2"), "--max_source_len", "80",
                   "--gin.InductionConfig.max_nts=1"]) == 0
  summary = json.loads((tmp_path / "cli2" / "summary.json").read_text())
  assert summary["num_skipped_too_long"] == 0
  assert summary["num_examples"] == 3


def test_induce_skipping_too_long_names_the_output_cfg_line(tmp_path):
  """With --skip_too_long, an output outside the output CFG is named by its
  own line, not the line of the example as many places before it among all
  the file's (the skipped ones counted)."""
  from csl_jax.methods.csl import induce  # pylint: disable=g-import-not-at-top
  train_tsv = tmp_path / "t.tsv"
  train_tsv.write_text(" and ".join(["walk"] * 40) + "\t" +
                       " ".join(["I_WALK"] * 40) + "\nwalk\tBAD\n"
                       "run\tBAD\n")
  cfg = tmp_path / "a.cfg"
  cfg.write_text("S -> I_WALK S | I_WALK | I_RUN\n")
  with pytest.raises(InputError, match="not in the language") as e:
    induce.induce(str(tmp_path / "out"), str(train_tsv),
                  output_cfg=str(cfg), skip_too_long=True)
  assert e.value.line == 2


# -------------------------------------------------------------- sampling --


@pytest.mark.parametrize("field,value", [
    ("temperature", 0.0), ("temperature", -1.0), ("temperature", math.nan),
    ("temperature", "hot"), ("depth_bias", math.inf),
    ("depth_bias", math.nan), ("max_depth", 0), ("max_depth", -3),
    ("max_depth", 2.5), ("max_len", 0), ("max_nodes", 0),
    ("max_attempts_factor", 0), ("chunk", 0), ("seed", -1),
    ("depth_bias_min_nts", -1), ("dedup", "yes")])
def test_sample_config_rejects_degenerate_values(field, value):
  with pytest.raises(InputError, match=f"SampleConfig.{field} "):
    sampler.SampleConfig(**{field: value})


def test_sample_config_accepts_inf_temperature():
  assert sampler.SampleConfig(temperature=math.inf).temperature == math.inf


@pytest.mark.parametrize("num", [0, -5, 2.5, True])
def test_sample_needs_a_positive_number(num):
  with pytest.raises(InputError, match="--num"):
    sampler.sample(_model(), num, sampler.SampleConfig())


def test_dedup_shortfall_is_reported(caplog):
  # 200 distinct pairs asked of a grammar that has few at depth <= 2.
  config = sampler.SampleConfig(max_depth=2, dedup=True, seed=1,
                                max_attempts_factor=5)
  with caplog.at_level(py_logging.WARNING):
    got = sampler.sample(_model(), 200, config)
  assert got.stats["num_short"] == 200 - len(got.pairs) > 0
  assert got.stats["num_requested"] == 200
  assert any("short" in r.getMessage() for r in caplog.records)
  full = sampler.sample(_model(), 50, sampler.SampleConfig(seed=1))
  assert full.stats["num_short"] == 0


# ------------------------------------------------------------------ TFDS --


def test_tfds_offline_fails_fast(tmp_path, monkeypatch):
  pytest.importorskip("tensorflow_datasets")
  monkeypatch.setattr(scan, "_reachable", lambda host, port: False)
  temp = tmp_path / "temp"
  temp.mkdir()
  monkeypatch.setattr(tempfile, "tempdir", str(temp))
  start = time.time()
  with pytest.raises(InputError, match="unreachable") as e:
    scan.load_tfds("addprim_jump", data_dir=str(tmp_path / "data"))
  assert e.value.source == str(tmp_path / "data")
  assert "--source generate" in str(e.value)
  assert time.time() - start < 30
  # tfds' own temporary directory (`mkdtemp("tfds")`) is not left behind.
  assert not os.listdir(temp) and tempfile.tempdir == str(temp)


def test_tfds_download_host_honours_proxy(monkeypatch):
  monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
  assert scan._download_host() == ("proxy.example", 3128)
  monkeypatch.delenv("HTTPS_PROXY")
  monkeypatch.delenv("https_proxy", raising=False)
  assert scan._download_host() == ("github.com", 443)


# ---------------------------------------------------- quiet and progress --


def test_silence_keeps_user_settings(monkeypatch):
  monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")
  monkeypatch.delenv("JAX_PLATFORMS", raising=False)
  quiet.silence_accelerator_logs()
  assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "0"
  assert "JAX_PLATFORMS" not in os.environ  # Never forces a device.
  monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL")
  quiet.silence_accelerator_logs()
  # Errors stay visible where a GPU/TPU could be used.
  assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == (
      "2" if quiet.has_accelerator_device() else "3")


def test_filtered_stderr_drops_only_probe_noise(capfd):
  with quiet.filtered_stderr():
    os.write(2, b"I0000 cudart_stub.cc:31] Could not find cuda drivers\n")
    os.write(2, b"a real problem\n")
  assert capfd.readouterr().err == "a real problem\n"


def test_checkpointer_info_is_dropped_its_warnings_and_ours_kept(
    tmp_path, caplog):
  import numpy as np  # pylint: disable=g-import-not-at-top
  import orbax.checkpoint as ocp  # pylint: disable=g-import-not-at-top
  from absl import logging as absl_logging  # pylint: disable=g-import-not-at-top
  from csl_jax.seq2seq import train  # pylint: disable=g-import-not-at-top
  from csl_jax.testing import tf_data  # pylint: disable=g-import-not-at-top
  _, tf = tf_data.seqio_and_tensorflow()

  def save(directory):
    with caplog.at_level(py_logging.INFO):
      caplog.clear()
      manager = train.checkpoint_manager(str(directory))
      manager.save(1, args=ocp.args.StandardSave({"w": np.zeros(3)}))
      manager.wait_until_finished()
      # The data position, as `input_pipeline` saves it beside each one.
      iterator = iter(tf.data.Dataset.range(3))
      tf.train.Checkpoint(iterator=iterator).write(str(directory / "data"))
      absl_logging.info("train: 1/1 it")
    return [r for r in caplog.records
            if "orbax" in r.pathname or "tensorflow" in r.pathname]

  absl = py_logging.getLogger("absl")
  installed = list(absl.filters)  # An earlier test may have installed it.
  absl.filters[:] = [f for f in installed if not isinstance(
      f, quiet._DropCheckpointerInfo)]  # pylint: disable=protected-access
  before = list(absl.filters)
  try:
    loud = save(tmp_path / "loud")
    assert any("orbax" in r.pathname for r in loud)  # they do log INFO lines
    assert any("tensorflow" in r.pathname for r in loud)
    quiet.quiet_checkpointer_logs()
    quiet.quiet_checkpointer_logs()
    assert len(absl.filters) == len(before) + 1
    assert not save(tmp_path / "quiet")
    assert "train: 1/1 it" in caplog.text
    warning = py_logging.LogRecord("absl", py_logging.WARNING,
                                   "/x/orbax/checkpoint/a.py", 1, "w", None,
                                   None)
    assert absl.filter(warning)
  finally:
    absl.filters[:] = installed


def test_importing_the_seqio_tasks_prints_no_probe_lines():
  """`import tasks` (SeqIO, TensorFlow) in a fresh process, as the pipeline's
  backtranslation and the experiments do: no CUDA probe lines on stderr."""
  import subprocess  # pylint: disable=g-import-not-at-top
  env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
  done = subprocess.run([sys.executable, "-c", "import tasks"], env=env,
                        capture_output=True, text=True, check=True)
  assert not [line for line in done.stderr.splitlines()
              if quiet.NOISE.search(line)], done.stderr


def test_gin_search_misses_are_not_logged_as_errors(tmp_path, monkeypatch,
                                                    caplog, clear_gin):
  """From outside the checkout gin tries `gin/...` as a Python package under
  each search prefix and logs `ERROR Path not found` before finding it."""
  del clear_gin
  import gin  # pylint: disable=g-import-not-at-top
  repo = tmp_path / "repo"
  (repo / "gin" / "sub").mkdir(parents=True)
  (repo / "gin" / "sub" / "m.gin").write_text("M = 3\n")
  (tmp_path / "elsewhere").mkdir()
  monkeypatch.chdir(tmp_path / "elsewhere")
  gin.add_config_file_search_path(str(repo))
  mine = tmp_path / "mine.gin"
  mine.write_text("include 'gin/sub/m.gin'\n")

  def misses():
    caplog.clear()
    with caplog.at_level(py_logging.INFO):
      gin.parse_config_file(str(mine))
    return [r for r in caplog.records
            if r.getMessage().startswith("Path not found")]

  root = py_logging.getLogger()
  kept = list(root.filters)  # an earlier test in this process may have
  root.filters[:] = [f for f in kept  # quieted gin already (cli.main does)
                     if not isinstance(f, quiet._DropGinProbe)]  # pylint: disable=protected-access
  before = list(root.filters)
  try:
    assert misses()  # gin does log them
    quiet.quiet_gin_search()
    quiet.quiet_gin_search()
    assert len(root.filters) == len(before) + 1
    assert not misses()
    assert gin.query_parameter("M/macro.value") == 3
    with pytest.raises(IOError, match="nowhere.gin"):  # still an error
      gin.parse_config_file("gin/nowhere.gin")
  finally:
    root.filters[:] = kept


def test_progress_logs_when_stderr_is_not_a_terminal(monkeypatch, caplog):
  monkeypatch.setenv(progress_lib.ENV, "0")
  with caplog.at_level(py_logging.INFO):
    assert sum(progress_lib.progress(range(20), desc="count")) == 190
  lines = [r.getMessage() for r in caplog.records
           if r.getMessage().startswith("count:")]
  assert len(lines) == 10 and lines[-1].startswith("count: 20/20")
  assert lines[0].startswith("count: 2/20 it, 0s, ETA ")  # the time left
  assert "ETA" not in lines[-1]  # ... none once done
  # Between tenths, a line a minute: a long run is never quiet for long.
  clock = [1000.0]
  monkeypatch.setattr(progress_lib.time, "time", lambda: clock[0])
  caplog.clear()
  with caplog.at_level(py_logging.INFO):
    bar = progress_lib.progress(total=1000, desc="slow", initial=100)
    for _ in range(30):  # 30 steps, 5 s each: 2.5 min, no tenth passed
      clock[0] += 5.0
      bar.update(1)
  slow = [r.getMessage() for r in caplog.records
          if r.getMessage().startswith("slow:")]
  # At 60 s and 120 s: 12 and 24 steps done since the resume at 100, so
  # 888 and 876 left at 5 s a step.
  assert slow == ["slow: 112/1000 it, 60s, ETA 1h14m",
                  "slow: 124/1000 it, 120s, ETA 1h13m"]
  # A bar made before its loop knew the checkpoint's step (the CSL fit):
  # told where it resumed, it counts the whole run, rates this process's.
  caplog.clear()
  with caplog.at_level(py_logging.INFO):
    bar = progress_lib.progress(total=100, desc="fit")
    progress_lib.start_at(bar, 50)
    for _ in range(10):
      clock[0] += 1.0
      bar.update(1)
  assert [r.getMessage() for r in caplog.records
          if r.getMessage().startswith("fit:")] == ["fit: 60/100 it, 10s, "
                                                    "ETA 40s"]
  monkeypatch.setenv(progress_lib.ENV, "1")
  bar = progress_lib.progress(total=3, file=sys.stdout)
  assert not bar.disable
  bar.close()
  monkeypatch.delenv(progress_lib.ENV)
  # pytest's captured stderr is no terminal.
  assert isinstance(progress_lib.progress(total=3),
                    progress_lib._LoggedProgress)


def test_a_delayed_progress_is_quiet_unless_slow(monkeypatch, caplog):
  """`delay` (tqdm's): a quick piece of work (COGS's forests, 1 s) logs
  nothing; a slow one its tenths once the delay is past."""
  monkeypatch.setenv(progress_lib.ENV, "0")
  clock = [1000.0]
  monkeypatch.setattr(progress_lib.time, "time", lambda: clock[0])

  def run(seconds_each):
    caplog.clear()
    with caplog.at_level(py_logging.INFO):
      bar = progress_lib.progress(total=10, desc="build", delay=5.0)
      for _ in range(10):
        clock[0] += seconds_each
        bar.update(1)
      bar.close()
    return [r.getMessage().split(",")[0] for r in caplog.records
            if r.getMessage().startswith("build:")]

  assert not run(0.1)
  assert run(1.0) == [f"build: {k}/10 it" for k in range(5, 11)]


def test_scripts_say_a_missing_file_in_one_line(tmp_path, capsys):
  """`errors.run_script`, the entry of every script under benchmarks/ and
  scripts/: a missing file or an InputError is one line and exit 2; what
  main returns is the exit status."""
  from csl_jax import errors  # pylint: disable=g-import-not-at-top
  def reads(path):
    with open(path, encoding="utf-8") as f:
      return len(f.read())
  missing = str(tmp_path / "nope.tsv")
  for main, args, line in (
      (reads, (missing,), f"{missing}: no such file or directory"),
      (reads, (str(tmp_path),), f"{tmp_path}: is a directory"),
      (lambda: (_ for _ in ()).throw(InputError("bad", "f.tsv", 3)), (),
       "f.tsv:3: bad")):
    with pytest.raises(SystemExit) as e:
      errors.run_script(main, *args)
    assert e.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"{os.path.basename(sys.argv[0])}: error: {line}"]
  with pytest.raises(SystemExit) as e:
    errors.run_script(lambda: 1)
  assert e.value.code == 1
