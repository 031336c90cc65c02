"""Tests for SeqIO tasks by augmentation method (tasks/registry.py).

A run directory as `csl-jax augment --out RUN` writes it, read with
`register_run`; no network, ByteVocabulary.
"""

import collections

import pytest

from csl_jax.testing import tf_data

seqio, tf = tf_data.seqio_and_tensorflow()

from csl_jax.seq2seq import input_pipeline  # pylint: disable=g-import-not-at-top
from csl_jax.testing.files import write_pairs  # pylint: disable=g-import-not-at-top
from tasks import registry

LENGTHS = {"inputs": 32, "targets": 32}
BYTES = seqio.ByteVocabulary()


def _pairs(prefix, n):
  # The input's prefix tells which file an example came from.
  return [(f"{prefix} {i}", f"{prefix.upper()}_{i}") for i in range(n)]


def _write(path, pairs):
  path.parent.mkdir(parents=True, exist_ok=True)
  return write_pairs(path, pairs)


def _make_run(run):
  """A run directory: data/, methods csl (+ a selector subset) and geca."""
  _write(run / "data" / "train.tsv", _pairs("orig", 10))
  _write(run / "data" / "test.tsv", _pairs("test", 3))
  _write(run / "csl" / "candidates.tsv", _pairs("cand", 5))
  _write(run / "csl" / "synthetic.tsv", _pairs("csl", 30))
  _write(run / "csl" / "sample" / "samples.tsv", _pairs("stage", 2))
  _write(run / "csl" / "random_4" / "synthetic.tsv", _pairs("rand", 4))
  _write(run / "geca" / "synthetic.tsv", _pairs("geca", 5))
  _write(run / "notes" / "candidates.tsv", _pairs("note", 2))  # No method.
  (run / "report.md").write_text("# report\n", encoding="utf-8")
  return run


@pytest.fixture
def run(tmp_path):
  """`t_run`, registered from a run directory; unregistered afterwards."""
  names = registry.register_run(_make_run(tmp_path / "t_run"),
                                vocabulary=BYTES)
  yield names
  registry.unregister_dataset("t_run")


def _texts(name, split="train", n=None, **kwargs):
  """[(decoded inputs, decoded targets)] drawn from a task or mixture (as
  the trainer builds them, without AutoGraph; test_seqio_tasks draws with
  it, as T5X does)."""
  with input_pipeline.without_autograph():
    ds = seqio.get_mixture_or_task(name).get_dataset(
        sequence_length=LENGTHS, split=split, **kwargs)
  if n is not None:
    ds = ds.take(n)
  return [(BYTES.decode(ex["inputs"].tolist()),
           BYTES.decode(ex["targets"].tolist()))
          for ex in ds.as_numpy_iterator()]


def _sources(name, n=1000):
  """How many of n shuffled draws came from each file (input prefix)."""
  drawn = _texts(name, n=n, shuffle=True, seed=0, num_epochs=None)
  assert len(drawn) == n
  return collections.Counter(text.split()[0] for text, _ in drawn)


def _rates(mixture_name):
  mixture = seqio.get_mixture_or_task(mixture_name)
  return {task.name: mixture.get_rate(task) for task in mixture.tasks}


def _registered():
  return seqio.TaskRegistry.names() | seqio.MixtureRegistry.names()


def test_run_registers_every_method_and_selector(run):
  assert run.original == "t_run"
  assert run.reversed == "t_run_reversed"
  # The csl names stay what the T5X gin files name.
  assert (run.synthetic, run.mixture) == ("t_run_csl_synthetic",
                                          "t_run_csl_mixture")
  assert run.methods == {
      m: (f"t_run_{m}_synthetic", f"t_run_{m}_mixture")
      for m in ("csl", "csl_random_4", "geca")}
  assert run.all_mixture == "t_run_all_mixture"
  assert set(run.task_names()) == {
      "t_run", "t_run_reversed", "t_run_csl_synthetic",
      "t_run_csl_random_4_synthetic", "t_run_geca_synthetic"}
  assert set(run.mixture_names()) == {
      "t_run_csl_mixture", "t_run_csl_random_4_mixture", "t_run_geca_mixture",
      "t_run_all_mixture"}
  assert {n for n in _registered() if n.startswith("t_run")} == set(
      run.task_names() + run.mixture_names())
  assert set(seqio.get_mixture_or_task("t_run").splits) == {
      "train", "test", "validation"}  # validation: test, without a dev set
  # Each method's task reads its own synthetic.tsv, and nothing else.
  for method, prefix in (("csl", "csl"), ("csl_random_4", "rand"),
                         ("geca", "geca")):
    got = _texts(run.methods[method][0], shuffle=False)
    assert {text.split()[0] for text, _ in got} == {prefix}


def test_mixture_components_and_rates(run):
  for method, (synthetic, mixture) in run.methods.items():
    assert _rates(mixture) == {"t_run": 1.0, synthetic: 1.0}, method
  # Selector subsets stay out of the all-mixture: csl would count twice.
  assert _rates("t_run_all_mixture") == {
      "t_run": 1.0, "t_run_csl_synthetic": 0.5, "t_run_geca_synthetic": 0.5}


def test_all_mixture_draws_original_half_and_methods_equally(run):
  del run  # Registered.
  # 10 original, 30 csl, 5 geca pairs; rates, not sizes, set the shares.
  counts = _sources("t_run_all_mixture")
  assert set(counts) == {"orig", "csl", "geca"}
  assert 0.45 <= counts["orig"] / 1000 <= 0.55
  assert 0.20 <= counts["csl"] / 1000 <= 0.30
  assert 0.20 <= counts["geca"] / 1000 <= 0.30


def test_mixture_eval_split_is_the_original_test_split(run):
  for mixture in run.mixture_names():
    got = _texts(mixture, "test", shuffle=False, num_epochs=1)
    assert sorted(got) == sorted(_pairs("test", 3)), mixture


def test_reversed_swaps_inputs_and_targets(run):
  for split, prefix, n in (("train", "orig", 10), ("test", "test", 3)):
    got = _texts(run.reversed, split, shuffle=False)
    assert got == [(o, i) for i, o in _pairs(prefix, n)]


def test_rates_are_configurable(tmp_path):
  run_dir = _make_run(tmp_path / "t_rates")
  try:
    names = registry.register_run(
        run_dir, vocabulary=BYTES, original_rate=2.0,
        synthetic_rate={"geca": 3.0, "csl": lambda task: 1.0})
    assert _rates(names.methods["geca"][1]) == {
        "t_rates": 2.0, "t_rates_geca_synthetic": 3.0}
    assert _rates(names.methods["csl_random_4"][1]) == {
        "t_rates": 2.0, "t_rates_csl_random_4_synthetic": 1.0}
    # Each of n methods gets its rate / n, callables too.
    assert _rates(names.all_mixture) == {
        "t_rates": 2.0, "t_rates_csl_synthetic": 0.5,
        "t_rates_geca_synthetic": 1.5}
    names = registry.register_run(run_dir, vocabulary=BYTES, synthetic_rate=3)
    assert 0.20 <= _sources(names.mixture)["orig"] / 1000 <= 0.30
  finally:
    registry.unregister_dataset("t_rates")


def test_a_method_that_trains_on_the_union_is_mixed_by_size(tmp_path):
  """T5X's mixtures as the experiment runner's rows: a method whose
  summary.json says `mixing: union` (pcfg_bt, primaug, augzero) is sampled
  in proportion to the sizes (10 original, 5 geca), the others 1:1, its
  selector subsets too; explicit rates still win."""
  import json  # pylint: disable=g-import-not-at-top
  run_dir = _make_run(tmp_path / "t_union")
  (run_dir / "geca" / "summary.json").write_text(
      json.dumps({"method": "geca", "mixing": "union"}), encoding="utf-8")
  (run_dir / "csl" / "summary.json").write_text(
      json.dumps({"method": "csl", "mixing": "equal"}), encoding="utf-8")
  try:
    assert registry.union_methods(run_dir) == ["geca"]
    names = registry.register_run(run_dir, vocabulary=BYTES)
    assert _rates(names.methods["geca"][1]) == {
        "t_union": 10.0, "t_union_geca_synthetic": 5.0}
    assert _rates(names.methods["csl"][1]) == {
        "t_union": 10.0, "t_union_csl_synthetic": 10.0}
    assert _rates(names.methods["csl_random_4"][1]) == {
        "t_union": 10.0, "t_union_csl_random_4_synthetic": 10.0}
    names = registry.register_run(run_dir, vocabulary=BYTES,
                                  synthetic_rate=1.0)
    assert _rates(names.methods["geca"][1]) == {
        "t_union": 1.0, "t_union_geca_synthetic": 1.0}
  finally:
    registry.unregister_dataset("t_union")


def test_register_dataset_with_several_methods(tmp_path):
  run_dir = _make_run(tmp_path / "run")
  try:
    names = registry.register_dataset(
        "t_multi", run_dir / "data", vocabulary=BYTES,
        synthetic_tsv=run_dir / "csl" / "synthetic.tsv",
        synthetic={"geca": run_dir / "geca" / "synthetic.tsv",
                   "csl_random_4": str(run_dir / "csl" / "random_4" /
                                       "synthetic.tsv")})
    assert set(names.methods) == {"csl", "geca", "csl_random_4"}
    assert names.mixture == "t_multi_csl_mixture"
    # Without all_methods, every method is in the all-mixture.
    assert _rates(names.all_mixture) == {
        "t_multi": 1.0, "t_multi_csl_synthetic": 1 / 3,
        "t_multi_geca_synthetic": 1 / 3,
        "t_multi_csl_random_4_synthetic": 1 / 3}
    names = registry.register_dataset(
        "t_multi", run_dir / "data", vocabulary=BYTES,
        synthetic={"geca": run_dir / "geca" / "synthetic.tsv"})
    assert (names.synthetic, names.mixture) == (None, None)
    assert _rates(names.all_mixture) == {
        "t_multi": 1.0, "t_multi_geca_synthetic": 1.0}
  finally:
    registry.unregister_dataset("t_multi")


def test_bad_methods_are_clear_errors_and_change_nothing(run, tmp_path):
  data = tmp_path / "t_run" / "data"
  geca = tmp_path / "t_run" / "geca" / "synthetic.tsv"
  before = _registered()
  for synthetic, kwargs, message in (
      ({"GeCA": geca}, {}, "a method name is"),
      ({"all": geca}, {}, "a method name is"),
      ({"csl": geca}, {"synthetic_tsv": geca}, "both as synthetic_tsv"),
      ({"geca": tmp_path / "nope.tsv"}, {}, "no such synthetic data file"),
      ({"geca": geca}, {"all_methods": ["csl"]}, "all_methods: csl not"),
      ({"geca": geca}, {"synthetic_rate": {"gcea": 2.0}},
       "synthetic_rate: gcea not"),
  ):
    with pytest.raises(ValueError, match=message):
      registry.register_dataset("t_run", data, vocabulary=BYTES,
                                synthetic=synthetic, **kwargs)
  assert _registered() == before
  assert "t_run_geca_mixture" in before and run.methods


def test_register_again_replaces_and_unregister_removes_all(run, tmp_path):
  # Without geca/ now: its names must go, not linger from the first run.
  geca = tmp_path / "t_run" / "geca"
  (geca / "synthetic.tsv").unlink()
  geca.rmdir()
  again = registry.register_run(tmp_path / "t_run", vocabulary=BYTES)
  assert set(again.methods) == {"csl", "csl_random_4"}
  assert not {"t_run_geca_synthetic", "t_run_geca_mixture"} & _registered()
  assert _rates(again.all_mixture) == {"t_run": 1.0,
                                       "t_run_csl_synthetic": 1.0}
  registry.unregister_dataset("t_run")
  assert not {n for n in _registered() if n.startswith("t_run")}
  registry.unregister_dataset("t_run")  # Nothing left: no error.


def test_run_without_methods(tmp_path):
  _write(tmp_path / "t_bare" / "data" / "dev.tsv", _pairs("dev", 2))
  try:
    names = registry.register_run(tmp_path / "t_bare", vocabulary=BYTES)
    assert names == ("t_bare", None, None, "t_bare_reversed", {}, None, {})
    assert list(seqio.get_mixture_or_task("t_bare_reversed").splits) == [
        "dev", "validation"]
  finally:
    registry.unregister_dataset("t_bare")
  with pytest.raises(ValueError, match="none of train.tsv"):
    registry.register_run(tmp_path)


def test_run_name_and_method_directories_are_sanitized(tmp_path):
  run_dir = _make_run(tmp_path / "t_run-2")
  _write(run_dir / "Pcfg-BT" / "synthetic.tsv", _pairs("pcfg", 3))
  (run_dir / "Pcfg-BT" / "programs").mkdir()
  (run_dir / "Pcfg-BT" / "programs" / "programs.txt").write_text("a b\n")
  try:
    names = registry.register_run(f"{run_dir}/", vocabulary=BYTES)
    assert names.original == "t_run_2"
    assert "pcfg_bt" in names.methods
    # The programs task is named as pcfg_bt tells its user to name it.
    assert names.programs == {"pcfg_bt": "t_run_2_pcfg_bt_programs"}
    assert registry.programs_task_name(run_dir, "Pcfg-BT") == (
        "t_run_2_pcfg_bt_programs")
    assert registry.register_run(run_dir, "t_named",
                                 vocabulary=BYTES).original == "t_named"
  finally:
    registry.unregister_dataset("t_run_2")
    registry.unregister_dataset("t_named")


def test_register_from_env_reads_run_and_old_layouts(tmp_path, monkeypatch):
  _make_run(tmp_path / "t_env_run")
  # A flat dataset directory and an older `augment --out` directory.
  _write(tmp_path / "t_env_flat" / "train.tsv", _pairs("flat", 3))
  _write(tmp_path / "t_env_flat" / "synthetic.tsv", _pairs("fsyn", 3))
  _write(tmp_path / "t_env_old" / "data" / "train.tsv", _pairs("old", 3))
  _write(tmp_path / "t_env_old" / "samples" / "samples.tsv",
         _pairs("osyn", 3))
  (tmp_path / "t_env_empty").mkdir()
  monkeypatch.setenv(registry.ENV_DATA, f"{tmp_path},{tmp_path / 't_env_run'}")
  try:
    got = {n.original: n for n in registry.register_from_env(
        vocabulary=BYTES)}
    assert set(got) == {"t_env_flat", "t_env_old", "t_env_run"}
    assert set(got["t_env_run"].methods) == {"csl", "csl_random_4", "geca"}
    for name, prefix in (("t_env_flat", "fsyn"), ("t_env_old", "osyn")):
      assert set(got[name].methods) == {"csl"}
      assert got[name].mixture == f"{name}_csl_mixture"
      assert got[name].all_mixture == f"{name}_all_mixture"
      texts = _texts(got[name].synthetic, shuffle=False)
      assert sorted(texts) == sorted(_pairs(prefix, 3))
  finally:
    for name in ("t_env_flat", "t_env_old", "t_env_run"):
      registry.unregister_dataset(name)


def test_malformed_line_in_reversed_or_method_task_names_file_and_line(
    tmp_path):
  run_dir = _make_run(tmp_path / "t_badrun")
  for path in (run_dir / "data" / "train.tsv",
               run_dir / "geca" / "synthetic.tsv"):
    with open(path, "a", encoding="utf-8") as f:
      f.write("no tab here\n")
  names = registry.register_run(run_dir, vocabulary=BYTES)
  try:
    for task, path, line in (
        (names.reversed, run_dir / "data" / "train.tsv", 11),
        (names.methods["geca"][0], run_dir / "geca" / "synthetic.tsv", 6)):
      with pytest.raises(tf.errors.InvalidArgumentError) as e:
        _texts(task, shuffle=False)
      assert f"{path}:{line}" in str(e.value)
      assert "no tab here" in str(e.value)
  finally:
    registry.unregister_dataset("t_badrun")


def test_method_that_made_nothing_does_not_empty_the_mixtures(tmp_path):
  # A method may make nothing (GECA with one wug on SCAN length): an empty
  # RUN/geca/synthetic.tsv. SeqIO's mixtures stop at their first empty
  # component, so NAME_geca_mixture and NAME_all_mixture gave no example at
  # all (T5X and `csl-jax train`: end of data at the first batch).
  run = _make_run(tmp_path / "t_run")
  (run / "geca" / "synthetic.tsv").write_text("\n", encoding="utf-8")
  names = registry.register_run(run, vocabulary=BYTES)
  try:
    assert set(names.methods) == {"csl", "csl_random_4", "geca"}
    assert _texts("t_run_geca_synthetic", shuffle=False) == []
    # The method's mixture is the original data alone, ...
    assert _rates("t_run_geca_mixture") == {"t_run": 1.0}
    assert set(_sources("t_run_geca_mixture")) == {"orig"}
    # ... and the all-mixture's synthetic half goes to the methods with
    # pairs, so original:synthetic stays 1:1.
    assert _rates("t_run_all_mixture") == {
        "t_run": 1.0, "t_run_csl_synthetic": 1.0}
    counts = _sources("t_run_all_mixture")
    assert set(counts) == {"orig", "csl"}
    assert 0.45 <= counts["orig"] / 1000 <= 0.55
  finally:
    registry.unregister_dataset("t_run")
