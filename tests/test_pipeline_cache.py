"""The stage cache, the run lock, the selector and dataset registries."""

import json
import multiprocessing
import os
import re
import time

import gin
import numpy as np
import pytest

from csl_jax import assets
from csl_jax import configs
from csl_jax import files
from csl_jax import selection
from csl_jax.data import registry as data_registry
from csl_jax.data import tsv
from csl_jax.errors import InputError
from csl_jax.methods import base
from csl_jax.pipeline import cache
from csl_jax.pipeline import lock


def _counting_stage(calls, name, inputs, config, text="out"):
  def run(directory):
    calls.append(name)
    with open(os.path.join(directory, "artifact.txt"), "w") as f:
      f.write(text)
    return {"text": text}
  return base.Stage(name, inputs, config, run)


def test_stage_reused_only_while_inputs_and_config_unchanged(tmp_path):
  src = tmp_path / "in.tsv"
  src.write_text("a\tb\n")
  calls = []
  d = str(tmp_path / "stage")
  stage = lambda x: _counting_stage(calls, "s", [str(src)], {"x": x})
  assert not cache.is_current(stage(1), d)
  first = cache.run_stage(stage(1), d)
  assert first["cached"] is False and calls == ["s"]
  assert cache.is_current(stage(1), d) and not cache.is_current(stage(2), d)
  again = cache.run_stage(_counting_stage(calls, "s", [str(src)], {"x": 1}), d)
  assert again["cached"] is True and calls == ["s"]
  assert again["text"] == "out"
  # A config change reruns; so does a change of the input's content.
  cache.run_stage(_counting_stage(calls, "s", [str(src)], {"x": 2}), d)
  assert calls == ["s", "s"]
  src.write_text("a\tc\n")
  cache.run_stage(_counting_stage(calls, "s", [str(src)], {"x": 2}), d)
  assert calls == ["s", "s", "s"]
  # Same content, other path: reused (content, not location, keys a stage).
  moved = tmp_path / "moved.tsv"
  moved.write_text("a\tc\n")
  cache.run_stage(_counting_stage(calls, "s", [str(moved)], {"x": 2}), d)
  assert calls == ["s", "s", "s"]
  record = json.loads((tmp_path / "stage" / "stage_key.json").read_text())
  assert record["complete"] and record["config"] == {"x": 2}


def test_a_stage_run_says_its_time_and_what_it_made(tmp_path, caplog):
  def run(directory):
    del directory
    return {"num_examples": 1234}
  caplog.set_level("INFO")
  cache.run_stage(base.Stage("sample", [], {}, run), str(tmp_path / "s"))
  assert re.search(r"stage sample: done in \d+\.\d s, 1,234 examples",
                   caplog.text)
  cache.run_stage(base.Stage("sample", [], {}, run), str(tmp_path / "s"))
  assert "stage sample: unchanged, reusing" in caplog.text


def test_changed_key_empties_the_directory(tmp_path):
  calls = []
  d = tmp_path / "stage"
  cache.run_stage(_counting_stage(calls, "s", [], {"x": 1}), str(d))
  (d / "stale_checkpoint.msgpack").write_text("old")
  cache.run_stage(_counting_stage(calls, "s", [], {"x": 2}), str(d))
  assert not (d / "stale_checkpoint.msgpack").exists()


def test_interrupted_stage_keeps_its_resumable_files(tmp_path):
  d = tmp_path / "stage"

  def crash(directory):
    with open(os.path.join(directory, "state.json"), "w") as f:
      f.write("{}")
    raise KeyboardInterrupt

  with pytest.raises(KeyboardInterrupt):
    cache.run_stage(base.Stage("s", [], {"x": 1}, crash), str(d))
  seen = []

  def resume(directory):
    seen.append(os.path.exists(os.path.join(directory, "state.json")))
    return {}

  out = cache.run_stage(base.Stage("s", [], {"x": 1}, resume), str(d))
  assert seen == [True] and out["cached"] is False



def test_a_stage_that_exported_its_work_is_taken_up_not_resumed(tmp_path,
                                                                caplog):
  """A stage whose run exported work (`errors.Pending`: a bundle cell of
  the arrays trainer) was "resuming an interrupted run" when run again
  for it; one cut short still is."""
  from csl_jax.errors import Pending  # pylint: disable=g-import-not-at-top
  d = str(tmp_path / "stage")

  def export(directory):
    raise Pending(directory)

  def done(directory):
    del directory
    return {}

  def said():
    return [r.getMessage() for r in caplog.records
            if r.getMessage().startswith("stage s: ")]

  with pytest.raises(Pending):
    cache.run_stage(base.Stage("s", [], {"x": 1}, export), d)
  caplog.clear()  # what the runs before said, where INFO is on already
  with caplog.at_level("INFO"):
    cache.run_stage(base.Stage("s", [], {"x": 1}, done), d)
  assert said()[0] == f"stage s: taking up the work it exported, in {d}"
  assert not any("resum" in m for m in said())
  caplog.clear()

  def crash(directory):
    del directory
    raise KeyboardInterrupt

  with pytest.raises(KeyboardInterrupt):
    cache.run_stage(base.Stage("s", [], {"x": 2}, crash), d)
  caplog.clear()
  with caplog.at_level("INFO"):
    cache.run_stage(base.Stage("s", [], {"x": 2}, done), d)
  assert said()[0] == (f"stage s: an interrupted run in {d}; running it "
                       "again there, on what it saved")

@pytest.mark.parametrize("url", [False, True])
def test_missing_stage_input_is_an_input_error(tmp_path, url):
  # A URL (TensorFlow's in-memory file system here) as a local path: one
  # line naming it, not TensorFlow's NotFoundError.
  missing = "ram://csl_jax_test/nope" if url else str(tmp_path / "nope")
  with pytest.raises(InputError, match="cannot read"):
    cache.run_stage(base.Stage("s", [missing], {}, lambda d: {}),
                    str(tmp_path / "s"))


def _hold_lock(run_dir, ready, release):
  with lock.run_lock(run_dir):
    ready.set()
    release.wait(30)


def _start_holder(run_dir):
  """A process holding the lock of `run_dir`: (process, release event)."""
  ctx = multiprocessing.get_context("spawn")
  ready, release = ctx.Event(), ctx.Event()
  holder = ctx.Process(target=_hold_lock, args=(run_dir, ready, release))
  holder.start()
  assert ready.wait(60)
  return holder, release


def test_second_process_on_a_locked_run_stops_or_waits(tmp_path):
  holder, release = _start_holder(str(tmp_path))
  try:
    with pytest.raises(InputError, match=f"pid {holder.pid}"):
      with lock.run_lock(str(tmp_path)):
        pass
    release.set()
    start = time.time()
    with lock.run_lock(str(tmp_path), wait=True, poll_seconds=0.05):
      pass  # got it once the holder ended
    assert time.time() - start < 30
  finally:
    release.set()
    holder.join(30)


def test_lock_released_when_holder_is_killed(tmp_path):
  holder, _ = _start_holder(str(tmp_path))
  holder.kill()
  holder.join(30)
  with lock.run_lock(str(tmp_path)):
    pass


def test_a_killed_holders_temporaries_go_when_the_lock_is_taken(tmp_path):
  """kill -9 between an atomic write's temporary and its rename left
  `stage_key.json.tmp.PID` in a stage that its rerun finished in place
  (session 52, pcfg_bt's programs stage): no rerun writes that name again.
  Whoever takes the lock next removes a dead writer's; a live one's stay,
  and so does any file csl-jax did not name so."""
  holder, _ = _start_holder(str(tmp_path))
  dead = holder.pid
  holder.kill()
  holder.join(30)
  stage = tmp_path / "m" / "programs"
  stage.mkdir(parents=True)
  mark = files.TEMPORARY_MARK
  left = [stage / f"stage_key.json{mark}{dead}",
          tmp_path / "report_files" / f"plot.png{mark}{dead}.png"]
  copy = tmp_path / "augment" / f"seed_1{mark}{dead}"  # a run dir's copy
  (copy / "data").mkdir(parents=True)
  for path in left + [copy / "data" / "train.tsv"]:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x")
  mine = [stage / f"summary.json{mark}{os.getpid()}", stage / "index.tmp",
          stage / "out.txt", stage / f"notes.tmp.{dead}"]  # not csl-jax's
  for path in mine:
    path.write_text("x")
  with lock.run_lock(str(tmp_path)):
    assert not any(p.exists() for p in left + [copy])
    assert all(p.exists() for p in mine)
  # A directory no run held before is not searched.
  fresh = tmp_path / "fresh"
  (fresh / "a").mkdir(parents=True)
  (fresh / "a" / f"x{mark}{dead}").write_text("x")
  with lock.run_lock(str(fresh)):
    assert (fresh / "a" / f"x{mark}{dead}").exists()


def test_temporaries_the_cleanup_cannot_take_do_not_stop_the_run(
    tmp_path, monkeypatch):
  """A name with a number no pid can be (os.kill's OverflowError) and one
  that cannot be removed (another user's, a read-only directory: the
  OSError) were tracebacks from taking the lock; both are left, unnamed."""
  mark = files.TEMPORARY_MARK
  (tmp_path / lock.LOCK_FILE).write_text("")  # a run held it before
  huge = tmp_path / f"a{mark}{'9' * 30}"
  stuck = tmp_path / f"b{mark}999999999"  # above any pid_max: dead
  for path in (huge, stuck):
    path.write_text("x")
  real_remove = os.remove

  def remove(path, *args, **kwargs):
    if os.fspath(path) == str(stuck):
      raise PermissionError(13, "Permission denied", os.fspath(path))
    return real_remove(path, *args, **kwargs)

  monkeypatch.setattr(os, "remove", remove)
  assert files.remove_temporaries(str(tmp_path)) == []
  with lock.run_lock(str(tmp_path)):
    pass
  assert huge.exists() and stuck.exists()


def test_random_selector_is_seeded_and_distinct():
  pool = [tsv.Example(f"x{i}", f"y{i}") for i in range(100)]
  chooser = selection.get("random")
  a = chooser.select(pool, [], 30, seed=1)
  assert len(a) == 30 and len(set(a.tolist())) == 30
  assert np.array_equal(a, chooser.select(pool, [], 30, seed=1))
  assert not np.array_equal(a, chooser.select(pool, [], 30, seed=2))
  assert sorted(chooser.select(pool, [], 500, seed=0).tolist()) == list(
      range(100))
  with pytest.raises(InputError, match="unknown selector"):
    selection.get("nope")


def test_dataset_registry_prepares_scan(tmp_path):
  assert {"scan", "cogs", "geoquery"} <= set(data_registry.names())
  summary = data_registry.prepare(str(tmp_path), "scan", "addprim_jump")
  assert summary["num_train"] == 14670 and summary["num_test"] == 7706
  assert len(tsv.read_tsv(str(tmp_path / "train.tsv"))) == 14670
  with pytest.raises(InputError, match="unknown scan split"):
    data_registry.prepare(str(tmp_path), "scan", "nope")
  with pytest.raises(InputError, match="needs --data_dir"):
    data_registry.prepare(str(tmp_path), "cogs")
  with pytest.raises(InputError, match="unknown dataset"):
    data_registry.get("nope")


def test_assets_resolve_from_any_directory(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  path = assets.resolve("tasks/cogs/varfree.cfg")
  assert os.path.isabs(path) and os.path.exists(path)
  (tmp_path / "tasks" / "cogs").mkdir(parents=True)
  (tmp_path / "tasks" / "cogs" / "varfree.cfg").write_text("mine")
  assert assets.resolve("tasks/cogs/varfree.cfg") == "tasks/cogs/varfree.cfg"
  with pytest.raises(InputError, match="no such file"):
    assets.resolve("tasks/nope.cfg")


def test_gin_params_are_defaults_overridden_by_bindings():

  @gin.configurable("gin_params_probe")
  def probe(path, a=1, b=(2, 3), c=float("inf")):
    del path, a, b, c

  try:
    assert configs.to_json(configs.gin_params(probe, exclude=("path",))) == {
        "a": 1, "b": [2, 3], "c": "inf"}
    gin.bind_parameter("gin_params_probe.a", 5)
    assert configs.gin_params(probe, exclude=("path",))["a"] == 5
  finally:
    gin.clear_config()


class _Reverse:
  """A test method: the training pairs with inputs reversed word by word
  (and `Reverse.times` copies), as candidates."""

  def __init__(self, name="reverse", times=1):
    self.name, self.times = name, times

  def stages(self, data, workdir):
    del workdir

    def run(directory):
      pairs = [(" ".join(e.input.split()[::-1]), e.output)
               for e in tsv.read_tsv(data.train)] * self.times
      path = os.path.join(directory, "candidates.tsv")
      tsv.write_tsv(path, pairs)
      return {"candidates": path}

    return [base.Stage("generate", [data.train], {"times": self.times}, run)]

  def report_rows(self, summaries):
    del summaries
    return []


@pytest.fixture
def reverse_methods():
  for name in ("reverse", "other"):
    base.add(name, lambda name=name: _Reverse(name, _TIMES[name]))
  yield
  for name in ("reverse", "other"):
    base.remove(name)


_TIMES = {"reverse": 1, "other": 1}


def test_a_copied_run_publishes_its_own_candidates(tmp_path, reverse_methods):  # pylint: disable=redefined-outer-name,unused-argument
  """A cached stage's summary names the file where it was written: in a
  copy of the run directory that is the original's, which may hold other
  candidates by then."""
  import shutil  # pylint: disable=g-import-not-at-top
  from csl_jax.pipeline import augment  # pylint: disable=g-import-not-at-top
  data = tmp_path / "d"
  data.mkdir()
  (data / "train.tsv").write_text("a b\tx\nc d\ty\n")
  run_a, run_b = str(tmp_path / "a"), str(tmp_path / "b")
  augment.augment(run_a, dataset="tsv", data_dir=str(data),
                  methods=["reverse"])
  shutil.copytree(run_a, run_b)
  _TIMES["reverse"] = 2
  try:
    augment.augment(run_a, dataset="tsv", data_dir=str(data),
                    methods=["reverse"])
  finally:
    _TIMES["reverse"] = 1
  augment.augment(run_b, dataset="tsv", data_dir=str(data),
                  methods=["reverse"])
  assert tsv.read_tsv(os.path.join(run_b, "reverse", "candidates.tsv")) == \
      tsv.read_tsv(os.path.join(run_b, "reverse", "generate",
                                "candidates.tsv"))
  assert sorted(tsv.read_tsv(os.path.join(run_b, "reverse",
                                          "synthetic.tsv"))) == sorted(
      tsv.read_tsv(os.path.join(run_b, "reverse", "generate",
                                "candidates.tsv")))
  assert len(tsv.read_tsv(os.path.join(run_b, "reverse",
                                       "synthetic.tsv"))) == 2


def test_renamed_data_files_and_stale_methods(tmp_path, reverse_methods):  # pylint: disable=redefined-outer-name,unused-argument
  """The data stage knows which file is which part; a method not rerun
  since the data changed is left out of the report and the tasks."""
  from csl_jax.pipeline import augment  # pylint: disable=g-import-not-at-top
  from csl_jax.pipeline import report  # pylint: disable=g-import-not-at-top
  data = tmp_path / "d"
  data.mkdir()
  (data / "train.tsv").write_text("a b\tx\nc d\ty\n")
  (data / "dev.tsv").write_text("e f\tz\n")
  run = str(tmp_path / "run")
  augment.augment(run, dataset="tsv", data_dir=str(data),
                  methods=["reverse", "other"])
  assert report.methods_in(run) == ["other", "reverse"]
  os.rename(data / "dev.tsv", data / "test.tsv")
  augment.augment(run, dataset="tsv", data_dir=str(data),
                  methods=["reverse"])
  assert sorted(os.listdir(os.path.join(run, "data"))) == [
      "stage_key.json", "summary.json", "test.tsv", "train.tsv"]
  # `other` was made from the data with dev.tsv: stale now.
  assert report.methods_in(run) == ["reverse"]
  from tasks import registry  # pylint: disable=g-import-not-at-top
  assert list(registry.find_methods(run)[0]) == ["reverse"]


def test_a_selection_from_older_candidates_is_not_registered(
    tmp_path, reverse_methods):  # pylint: disable=redefined-outer-name,unused-argument
  """RUN/<m>/random_1 stays on disk after the method's candidates change;
  the tasks must not train on it as if it were of the current ones."""
  from csl_jax.pipeline import augment  # pylint: disable=g-import-not-at-top
  from tasks import registry  # pylint: disable=g-import-not-at-top
  data = tmp_path / "d"
  data.mkdir()
  (data / "train.tsv").write_text("a b\tx\nc d\ty\ne f\tz\n")
  run = str(tmp_path / "run")
  augment.augment(run, dataset="tsv", data_dir=str(data), methods=["reverse"],
                  select="random", select_num=1)
  assert list(registry.find_methods(run)[0]) == ["reverse",
                                                 "reverse_random_1"]
  _TIMES["reverse"] = 2  # other candidates
  try:
    augment.augment(run, dataset="tsv", data_dir=str(data),
                    methods=["reverse"], select="random", select_num=2)
  finally:
    _TIMES["reverse"] = 1
  assert os.path.isdir(os.path.join(run, "reverse", "random_1"))
  assert list(registry.find_methods(run)[0]) == ["reverse",
                                                 "reverse_random_2"]


def test_csl_stages_keyed_on_config_bindings_and_file_roles(tmp_path):
  """FitConfig / SampleConfig bindings key their stages without
  `fit.config = @FitConfig()`; the same file as `eval_data` or as
  `unlabeled` is another fit; sampling reads the model's output CFG."""
  from csl_jax.methods import csl  # pylint: disable=g-import-not-at-top
  from csl_jax.model import train  # pylint: disable=g-import-not-at-top,unused-import
  from csl_jax.sampling import config as sample_config  # pylint: disable=g-import-not-at-top,unused-import
  data = base.RunData(str(tmp_path), {"train": str(tmp_path / "train.tsv")})

  def configs_of():
    stages = csl.CSL().stages(data, str(tmp_path / "w"))
    return {s.name: (s.config, [os.path.basename(p) for p in s.inputs])
            for s in stages}

  with gin.unlock_config():
    gin.clear_config()
    plain = configs_of()
    assert plain["fit"][0]["config"] is None  # runs before keep their keys
    # induce.skip_too_long off: the induce key runs before the option had
    # (else every run's induction, and what follows, is done again).
    assert "skip_too_long" not in plain["induce"][0]
    gin.bind_parameter("induce.skip_too_long", True)
    assert configs_of()["induce"][0]["skip_too_long"] is True
    gin.clear_config()
    gin.bind_parameter("FitConfig.num_states", 8)
    gin.bind_parameter("SampleConfig.seed", 3)
    bound = configs_of()
    assert bound["fit"][0]["config"]["num_states"] == 8
    assert bound["sample"][0]["config"]["seed"] == 3
    gin.clear_config()
    cfg = tmp_path / "out.cfg"
    cfg.write_text("S -> a\n")
    keys = []
    for role in ("eval_data", "unlabeled"):
      gin.clear_config()
      gin.bind_parameter(f"fit.{role}", str(cfg))
      keys.append(configs_of()["fit"][0])
    assert keys[0] != keys[1]
    gin.clear_config()
    gin.bind_parameter("fit.output_cfg", str(cfg))
    assert "output.cfg" in configs_of()["sample"][1]
    assert "output.cfg" not in plain["sample"][1]
    gin.clear_config()


def test_the_training_file_is_the_candidates_in_a_random_order(tmp_path):
  """A trainer streaming `synthetic.tsv` reads about its first R lines:
  published in an order fixed by the candidates' bytes, those R are a
  random R of the file, not the method's first (AugZero's first copies)."""
  from csl_jax.pipeline import augment  # pylint: disable=g-import-not-at-top
  src, dst = tmp_path / "candidates.tsv", tmp_path / "synthetic.tsv"
  lines = [f"in {i:04d}\tout {i:04d}\n" for i in range(1000)]
  src.write_text("".join(lines)[:-1])  # the last line without its newline
  augment._publish_shuffled(str(src), str(dst))  # pylint: disable=protected-access
  out = dst.read_text().splitlines(keepends=True)
  assert sorted(out) == lines and out != lines
  first = sorted(int(line.split()[1]) for line in out[:100])
  assert first[0] < 100 and first[-1] >= 900  # from all over the file
  before = dst.read_bytes()
  augment._publish_shuffled(str(src), str(dst))  # pylint: disable=protected-access
  assert dst.read_bytes() == before  # the same bytes again
  src.write_text("".join(lines[:999]))  # other candidates, another order
  augment._publish_shuffled(str(src), str(dst))  # pylint: disable=protected-access
  assert sorted(dst.read_text().splitlines(keepends=True)) == lines[:999]


def test_a_stage_whose_files_were_damaged_is_redone(tmp_path, caplog):
  """A completed stage's files are checked before reuse: cut, edited,
  missing or a torn summary redo it from an empty directory; a file whose
  mtime alone moved (a copy) is kept, and hashed once."""
  runs = []

  def run(directory):
    runs.append(1)
    with open(os.path.join(directory, "out.txt"), "w") as f:
      f.write("abcdef\n")
    return {"n": len(runs)}

  stage = base.Stage("gen", [], {"a": 1}, run)
  d = str(tmp_path / "gen")
  out = os.path.join(d, "out.txt")
  assert not cache.run_stage(stage, d)["cached"]
  assert cache.run_stage(stage, d)["cached"] and len(runs) == 1

  def damage_then_rerun(do, said):
    before = len(runs)
    caplog.clear()
    do()
    assert not cache.is_current(stage, d)
    assert not cache.run_stage(stage, d)["cached"]
    assert len(runs) == before + 1
    assert f"stage gen: {said} since it was written; redoing" in caplog.text
    with open(out) as f:
      assert f.read() == "abcdef\n"

  damage_then_rerun(lambda: open(out, "w").close(), "out.txt changed size")
  damage_then_rerun(lambda: open(out, "w").write("abcdeX\n"),
                    "out.txt changed")
  damage_then_rerun(lambda: os.remove(out), "out.txt is missing")
  damage_then_rerun(
      lambda: open(os.path.join(d, cache.SUMMARY_FILE), "w").write("{"),
      "summary.json changed size")
  # A copy moves mtimes, not bytes: reused, and the new mtime recorded.
  os.utime(out, ns=(1, 10**18))
  assert cache.run_stage(stage, d)["cached"] and len(runs) == 5
  with open(os.path.join(d, cache.KEY_FILE)) as f:
    assert json.load(f)["outputs"]["out.txt"][1] == 10**18
  # A record from before outputs were recorded is trusted as it was.
  with open(os.path.join(d, cache.KEY_FILE)) as f:
    key = json.load(f)
  del key["outputs"]
  with open(os.path.join(d, cache.KEY_FILE), "w") as f:
    json.dump(key, f)
  assert cache.run_stage(stage, d)["cached"] and len(runs) == 5
  # ... but not a summary that cannot be read.
  with open(os.path.join(d, cache.SUMMARY_FILE), "w") as f:
    f.write("garbage")
  caplog.clear()
  assert not cache.run_stage(stage, d)["cached"] and len(runs) == 6
  assert "stage gen: summary.json cannot be read; redoing" in caplog.text


def test_config_gin_reruns_a_call_made_with_arguments(tmp_path,
                                                      reverse_methods):  # pylint: disable=redefined-outer-name,unused-argument
  """A call's arguments (a command's flags) are not gin bindings, so
  config.gin appends them: parsed alone, it runs the same pipeline."""
  from csl_jax.pipeline import augment  # pylint: disable=g-import-not-at-top
  data = tmp_path / "d"
  data.mkdir()
  (data / "train.tsv").write_text("a b\tx\nc d\ty\ne f g\tz\n")
  first = tmp_path / "first"
  gin.clear_config()
  try:
    augment.augment(str(first), dataset="tsv", data_dir=data,  # a Path
                    methods=["reverse"], select="random", select_num=2)
    gin.clear_config()
    gin.parse_config_file(str(first / "config.gin"))
    again = tmp_path / "again"
    augment.augment(str(again))  # everything from config.gin
  finally:
    gin.clear_config()
  for path in ("reverse/synthetic.tsv", "reverse/random_2/synthetic.tsv",
               "data/train.tsv"):
    assert (again / path).read_bytes() == (first / path).read_bytes(), path
