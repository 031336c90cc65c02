"""Tests for training from token arrays (csl_jax/seq2seq/arrays.py) and the
experiment bundle (csl_jax/seq2seq/bundle.py): SeqIO's features exactly, the
mixture and bucket sampling, and a bundle's cells trained in a process
where TensorFlow and SeqIO cannot be imported, then scored by the
experiment as its own cells are."""

import argparse
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from csl_jax.testing import tf_data

seqio, tf = tf_data.seqio_and_tensorflow()

# pylint: disable=g-import-not-at-top
from csl_jax import provenance
from csl_jax.errors import InputError
from csl_jax.seq2seq import arrays
from csl_jax.seq2seq import bundle
from csl_jax.seq2seq import decode
from csl_jax.seq2seq import input_pipeline
from csl_jax.testing import files
from tasks import registry
# pylint: enable=g-import-not-at-top

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _ragged(rows):
  return arrays.Ragged.from_rows([np.array(r) for r in rows])


def test_ragged_round_trip_and_padding(tmp_path):
  data = {"inputs": _ragged([[5, 6, 1], [7, 1]]),
          "targets": _ragged([[9, 1], [3, 4, 8, 1]])}
  path = str(tmp_path / "a.npz")
  digest = arrays.save(path, data)
  assert len(digest) == 64
  back = arrays.load(path)
  assert back["inputs"].ids.dtype == np.uint16
  assert [back["targets"].row(i).tolist() for i in range(2)] == [
      [9, 1], [3, 4, 8, 1]]
  f = arrays.features(back, np.array([1, 0]), {"inputs": 4, "targets": 3})
  assert f["encoder_input_tokens"].tolist() == [[7, 1, 0, 0], [5, 6, 1, 0]]
  # Cut to the length, as the feature converter's trim does.
  assert f["decoder_target_tokens"].tolist() == [[3, 4, 8], [9, 1, 0]]
  assert f["decoder_input_tokens"].tolist() == [[0, 3, 4], [0, 9, 1]]
  assert f["decoder_loss_weights"].tolist() == [[1, 1, 1], [1, 1, 0]]
  (tmp_path / "bad.npz").write_text("not arrays")
  with pytest.raises(InputError, match="bad.npz"):
    arrays.load(str(tmp_path / "bad.npz"))


def test_features_equal_seqio_feature_converter(tmp_path):
  rows = [(f"x{'y' * (i % 9)} {i}", "z" * (1 + i % 13)) for i in range(37)]
  files.write_pairs(tmp_path / "train.tsv", rows)
  registry.register_dataset("t_arrays", tmp_path,
                            vocabulary=seqio.ByteVocabulary())
  try:
    lengths = input_pipeline.lengths(8, 10)  # some rows are cut
    want, _ = input_pipeline.materialize("t_arrays", "train", lengths)
    data = bundle._task_arrays("t_arrays", "train", lengths)  # pylint: disable=protected-access
    got = arrays.features(data, np.arange(len(rows)), lengths)
    for k in input_pipeline.FEATURES:
      np.testing.assert_array_equal(got[k], want[k], err_msg=k)
  finally:
    seqio.TaskRegistry.remove("t_arrays")


def test_task_arrays_equal_seqio_examples_across_fetch_batches(
    tmp_path, monkeypatch):
  rows = [(f"a{'b' * (i % 7)} {i}", "c" * (1 + i % 11)) for i in range(23)]
  files.write_pairs(tmp_path / "train.tsv", rows)
  registry.register_dataset("t_fetch", tmp_path,
                            vocabulary=seqio.ByteVocabulary())
  monkeypatch.setattr(bundle, "_FETCH_BATCH", 5)  # 5 batches, the last short
  try:
    lengths = input_pipeline.lengths(6, 9)
    want = decode.split_examples("t_fetch", "train", dict(lengths))
    data = bundle._task_arrays("t_fetch", "train", lengths)  # pylint: disable=protected-access
    for k in arrays.FIELDS:
      assert len(data[k]) == len(rows)
      assert data[k].ids.dtype == np.uint16
      for i, ex in enumerate(want):
        assert data[k].row(i).tolist() == ex[k].tolist(), (k, i)
  finally:
    seqio.TaskRegistry.remove("t_fetch")


@pytest.mark.parametrize("vocabulary", ["bytes", "word pieces"])
def test_texts_read_without_tf_data_tokenize_as_seqio(tmp_path, vocabulary):
  """`tasks.registry.split_texts` + `_tokenized` give SeqIO's ids: the
  original, reversed and synthetic tasks, an input prefix, rows cut to
  their lengths, spaces at the edges, non-ASCII text (a no-break
  space, which tf.strings.strip keeps) and CRLF lines."""
  rows = [(f" walk{' twice' * (i % 5)} é{i} ", f"I_WALK{' I_WALK' * (i % 7)}  ")
          for i in range(40)] + [("jump\u00a0", "I_JUMP")]
  with open(tmp_path / "train.tsv", "w", encoding="utf-8", newline="") as f:
    f.write("".join(f"{x}\t{y}\r\n" for x, y in rows))
  files.write_pairs(tmp_path / "test.tsv", rows[:5])
  synthetic = files.write_pairs(tmp_path / "synthetic.tsv", rows[5:12])
  vocab = seqio.ByteVocabulary()
  if vocabulary == "word pieces":
    from tasks import vocab as vocab_lib  # pylint: disable=g-import-not-at-top
    spm, _ = vocab_lib.train_word_vocabulary(
        [str(tmp_path / "train.tsv")], str(tmp_path / "word"))
    vocab = vocab_lib.get_vocabulary("sentencepiece", spm)
  names = registry.register_dataset("t_texts", tmp_path, vocabulary=vocab,
                                    synthetic={"m": synthetic},
                                    input_prefix="go: ")
  try:
    lengths = input_pipeline.lengths(7, 9)  # some rows are cut
    for task, split in (("t_texts", "train"), ("t_texts", "test"),
                        (names.reversed, "train"),
                        (names.methods["m"][0], "train")):
      assert registry.split_texts(task, split) is not None, task
      direct = bundle._task_arrays(task, split, lengths,  # pylint: disable=protected-access
                                   registry.split_texts)
      seqio_arrays = bundle._task_arrays(task, split, lengths)  # pylint: disable=protected-access
      for k in arrays.FIELDS:
        np.testing.assert_array_equal(direct[k].ids, seqio_arrays[k].ids)
        np.testing.assert_array_equal(direct[k].offsets,
                                      seqio_arrays[k].offsets)
    # Where only SeqIO can say: not this registry's task, a split of two
    # files, a line parse_tsv rejects.
    assert registry.split_texts("no_such_task", "train") is None
    two = registry.register_dataset(
        "t_texts2", tmp_path, synthetic={"m": str(tmp_path / "*.tsv")})
    assert registry.split_texts(two.methods["m"][0], "train") is None
    files.write_pairs(tmp_path / "test.tsv", [("a", "b"), ("c", "")])
    assert registry.split_texts("t_texts", "test") is None
  finally:
    registry.unregister_dataset("t_texts")
    registry.unregister_dataset("t_texts2")


def test_export_tokenizes_each_content_once(tmp_path, monkeypatch):
  """The same files under another directory (another seed's run) reuse
  their arrays; other contents, a prefix or other lengths do not."""
  calls = []
  real = bundle._task_arrays  # pylint: disable=protected-access
  monkeypatch.setattr(bundle, "_task_arrays", lambda *a: (
      calls.append(a), real(*a))[1])
  rows = [(f"a {i}", f"b {i}") for i in range(5)]
  for name in ("one", "two", "other"):
    (tmp_path / name).mkdir()
    files.write_pairs(tmp_path / name / "train.tsv",
                      rows if name != "other" else rows[:4])
  box = str(tmp_path / "box")
  lengths = input_pipeline.lengths(6, 6)

  def export(directory, prefix=None, size=lengths):
    registry.register_dataset("t_memo", tmp_path / directory,
                              vocabulary=seqio.ByteVocabulary(),
                              input_prefix=prefix)
    return bundle._saved_task_arrays(box, "t_memo", "train", size)  # pylint: disable=protected-access

  try:
    first = export("one")
    assert export("two") == first and len(calls) == 1
    assert export("other") != first and len(calls) == 2
    assert export("one", prefix="p: ") != first and len(calls) == 3
    assert export("one", size=input_pipeline.lengths(3, 6)) != first
    assert export("one") == first and len(calls) == 4
  finally:
    seqio.TaskRegistry.remove("t_memo")


def test_lane_environment_turns_gpu_autotuning_off_unless_set():
  env = bundle.lane_environment(4, {"XLA_FLAGS": "--xla_dump_to=/d", "A": "1"})
  assert env["XLA_FLAGS"] == "--xla_dump_to=/d --xla_gpu_autotune_level=0"
  assert env["XLA_PYTHON_CLIENT_MEM_FRACTION"] == "0.225"
  assert env["A"] == "1" and env["CSL_JAX_PROGRESS"] == "0"
  mine = {"XLA_FLAGS": "--xla_gpu_autotune_level=4"}
  assert bundle.lane_environment(2, mine)["XLA_FLAGS"] == mine["XLA_FLAGS"]
  assert bundle.lane_environment(2, {})["XLA_FLAGS"] == (
      "--xla_gpu_autotune_level=0")


def test_ragged_from_flat_checks_lengths():
  r = arrays.Ragged.from_flat(np.array([3, 4, 5]), np.array([2, 0, 1]))
  assert [r.row(i).tolist() for i in range(3)] == [[3, 4], [], [5]]
  assert arrays.Ragged.from_flat(np.array([70000]), np.array([1])
                                 ).ids.dtype == np.uint32
  with pytest.raises(ValueError, match="3 ids for rows of 2"):
    arrays.Ragged.from_flat(np.array([3, 4, 5]), np.array([2]))


def _tasks():
  a = {"inputs": _ragged([[2, 1]] * 30),
       "targets": _ragged([[3] * (1 + i % 20) + [1] for i in range(30)])}
  b = {"inputs": _ragged([[4, 1]] * 10),
       "targets": _ragged([[5] * (1 + i % 20) + [1] for i in range(10)])}
  return [a, b]


def test_batches_repeat_resume_buckets_and_rates():
  tasks, lengths = _tasks(), {"inputs": 4, "targets": 24}

  def take(n, start=0, seed=0, rates=(3.0, 1.0)):
    it = arrays.batches(tasks, rates, lengths, 8, 8, seed, start)
    return [next(it) for _ in range(n)]

  first = take(40)
  again = take(40)
  for x, y in zip(first, again):
    for k in x:
      np.testing.assert_array_equal(x[k], y[k])
  for x, y in zip(first[25:], take(15, start=25)):  # a resumed run
    for k in x:
      np.testing.assert_array_equal(x[k], y[k])
  assert any(not np.array_equal(x["decoder_target_tokens"],
                                y["decoder_target_tokens"])
             for x, y in zip(first, take(40, seed=1)))
  drawn = {3: 0, 5: 0}
  for b in first:
    n = (b["decoder_target_tokens"] > 1).sum(axis=1)  # ids before EOS
    targets = n + 1
    # One bucket per batch ([1, 9), [9, 17), [17, 25)), trimmed to it.
    buckets = set(np.searchsorted([9, 17], targets, side="right").tolist())
    assert len(buckets) == 1
    assert b["decoder_target_tokens"].shape[1] == min(
        24, 8 * (buckets.pop() + 1))
    assert b["encoder_input_tokens"].shape == (8, 4)
    for token in drawn:
      drawn[token] += int((b["decoder_target_tokens"][:, 0] == token).sum())
  share = drawn[3] / (drawn[3] + drawn[5])
  assert 0.65 < share < 0.85  # rates 3:1
  # Task b alone: its first 10 draws are one epoch, every row once.
  only_b = arrays.batch_indices([30, 10], [0.0, 1.0],
                                [np.ones(30), np.ones(10)], 10, [], 0)
  assert sorted(r for _, r in next(only_b)) == list(range(10))


@pytest.fixture
def toy_experiment(tmp_path, clear_gin):  # pylint: disable=unused-argument
  import gin  # pylint: disable=g-import-not-at-top
  from csl_jax.seq2seq import config  # pylint: disable=g-import-not-at-top,unused-import
  for k, v in {"d_model": 16, "num_heads": 2, "d_ff": 32, "num_layers": 1,
               "dropout": 0.0, "max_input_len": 6,
               "max_target_len": 6}.items():
    gin.bind_parameter(f"seq2seq.Seq2SeqConfig.{k}", v)
  for k, v in {"batch_size": 8, "num_steps": 4, "warmup_steps": 1,
               "log_every": 1, "checkpoint_every": 100,
               "bucket_width": 0}.items():
    gin.bind_parameter(f"seq2seq.TrainConfig.{k}", v)
  return files.write_reversal_toy(tmp_path)


def test_bundle_cells_train_without_tensorflow_and_score_here(
    toy_experiment, tmp_path, monkeypatch):  # pylint: disable=redefined-outer-name
  # pylint: disable=g-import-not-at-top
  from csl_jax.experiments import results
  from csl_jax.experiments import runner
  from csl_jax.seq2seq import decode
  from csl_jax.seq2seq import train as train_lib
  # pylint: enable=g-import-not-at-top
  out, box = str(tmp_path / "exp"), str(tmp_path / "bundle")

  def never(*args, **kw):
    raise AssertionError("a bundle cell was trained here")

  monkeypatch.setattr(train_lib, "train", never)
  kw = dict(dataset="tsv", splits=["toy"], data_dir=toy_experiment,
            methods=[], seeds=[0, 1], beam_size=2, decode_batch_size=16,
            bundle=box)
  first = runner.experiment(out, **kw)
  assert first["pending"] == ["toy/original/seed_0", "toy/original/seed_1"]
  assert first["records"] == []
  assert bundle.pending_cells(box) == first["pending"]
  # The accelerator's side: TensorFlow and SeqIO cannot be imported there.
  code = ("import sys; sys.modules['tensorflow'] = None; "
          "sys.modules['seqio'] = None; "
          "from csl_jax.cli import main; sys.exit(main.main("
          f"['run-bundle', {box!r}, '--lanes', '2', '--pack', "
          f"{str(tmp_path / 'back.tgz')!r}]))")
  env = dict(os.environ, PYTHONPATH=_REPO_ROOT + os.pathsep +
             os.environ.get("PYTHONPATH", ""), JAX_PLATFORMS="cpu")
  done = subprocess.run([sys.executable, "-c", code], env=env,
                        capture_output=True, text=True, check=False)
  assert done.returncode == 0, done.stderr[-2000:]
  assert bundle.pending_cells(box) == []
  # What comes back from the accelerator: the outputs and learning curves
  # alone (not the checkpoints), unpacked over the exported bundle.
  import tarfile  # pylint: disable=g-import-not-at-top
  with tarfile.open(tmp_path / "back.tgz") as tar:
    names = tar.getnames()
    for seed in (0, 1):
      cell = f"cells/toy/original/seed_{seed}"
      assert f"{cell}/outputs.json" in names
      assert f"{cell}/outputs.npz" in names
      assert any(n.startswith(f"{cell}/train/tensorboard/") for n in names)
    assert not any("checkpoints" in n for n in names)
    for cell in ("seed_0", "seed_1"):
      os.remove(os.path.join(box, "cells", "toy", "original", cell,
                             "outputs.json"))
    tar.extractall(box, filter="data")
  assert bundle.pending_cells(box) == []
  second = runner.experiment(out, **kw)
  assert "pending" not in second
  with open(os.path.join(out, results.RESULTS_JSONL)) as f:
    records = [json.loads(line) for line in f]
  assert [(r["data"], r["seed"], r["steps"]) for r in records] == [
      ("original", 0, 4), ("original", 1, 4)]
  # What was imported is what decoding the bundle's parameters here gives.
  cell = os.path.join(box, "cells", "toy", "original", "seed_1")
  model, params = train_lib.load_params(os.path.join(cell, "train"))
  rows, _ = decode.evaluate(model, params, "tsv_toy", "test",
                            input_pipeline.lengths(6, 6), 16, 2)
  with open(os.path.join(records[1]["dir"], "test", "predictions.tsv")) as f:
    assert f.read() == "".join("\t".join(r) + "\n" for r in rows)
  assert 1.0 < records[1]["perplexity_by_part"]["test"] < 2 * 259
  # Which machine and libraries trained it (a GPU's jaxlib is not ours).
  assert records[1]["device"] == "cpu"  # the lanes ran JAX_PLATFORMS=cpu
  assert records[1]["trained_by"]["packages"] == provenance.packages()
  assert records[1]["trained_by"]["command"].startswith("csl-jax run-bundle")
  assert records[1]["trained_by"]["platform_version"] == "cpu"
  # Outputs of an export with another key are never imported.
  assert bundle.outputs(box, "toy/original/seed_1", "another") is None
  # Predictions that are not of outputs.json's examples: an error naming
  # the file, not a short or KeyError'd import.
  key = bundle._read_json(os.path.join(  # pylint: disable=protected-access
      cell, bundle.CELL_FILE))["stage_key"]
  npz = os.path.join(cell, bundle.PREDICTIONS_FILE)
  whole = arrays.load(npz)
  for cut in ({}, {"test": arrays.Ragged.from_rows(
      [whole["test"].row(0)])}):
    arrays.save(npz, cut)
    with pytest.raises(InputError, match=r"outputs.npz: (no|1) predictions "
                       r"of part test for the \d+ examples outputs.json"):
      bundle.outputs(box, "toy/original/seed_1", key)
  arrays.save(npz, whole)
  assert len(bundle.outputs(box, "toy/original/seed_1", key)["parts"][
      "test"]["ids"]) == len(whole["test"])
  # Exported again with another key: the accelerator's outputs are kept
  # aside under the old key, not deleted.
  bundle._supersede(cell, "old")  # pylint: disable=protected-access
  assert bundle.pending_cells(box) == ["toy/original/seed_1"]
  assert sorted(os.listdir(os.path.join(cell, bundle.SUPERSEDED_DIR,
                                        "old"))) == [
                                            bundle.OUTPUTS_FILE,
                                            bundle.PREDICTIONS_FILE]


def test_bundle_pretrain_finetune_cell_trains_twice_there(
    toy_experiment, tmp_path, capsys):  # pylint: disable=redefined-outer-name
  # pylint: disable=g-import-not-at-top
  from csl_jax.experiments import runner
  from csl_jax.seq2seq import train as train_lib
  # pylint: enable=g-import-not-at-top
  out, box = str(tmp_path / "exp"), str(tmp_path / "bundle")
  kw = dict(dataset="tsv", splits=["toy"], data_dir=toy_experiment,
            methods=["augzero"], data=["augzero"], seeds=[0],
            regime="pretrain_finetune", finetune_steps=2, beam_size=1,
            decode_batch_size=16, bundle=box)
  assert runner.experiment(out, **kw)["pending"] == ["toy/augzero/seed_0"]
  cell = os.path.join(box, "cells", "toy", "augzero", "seed_0")
  with open(os.path.join(cell, "cell.json")) as f:
    spec = json.load(f)
  assert spec["pretrain"]["task"] == "tsv_toy_augzero_synthetic"
  assert spec["task"] == "tsv_toy"
  assert (spec["pretrain_steps"], spec["train"]["num_steps"]) == (4, 2)
  capsys.readouterr()
  bundle.run_bundle(box, progress=False)
  # One lane in this process names its device before it compiles.
  assert capsys.readouterr().out.startswith("[run-bundle] lane 0 on cpu ")
  (record,) = runner.experiment(out, **kw)["records"]
  assert record["steps"] == 2 and record["regime"] == "pretrain_finetune"
  # Fine-tuned from the pretrained parameters, as the local regime does.
  with open(os.path.join(cell, "train", "config.json")) as f:
    assert json.load(f)["init"]["step"] == 4
  assert train_lib.load_config(os.path.join(cell, "pretrain"))[1]["task"] \
      == "tsv_toy_augzero_synthetic"



def test_bundle_cell_selects_its_checkpoint_on_gooddev_there(
    toy_experiment, tmp_path):  # pylint: disable=redefined-outer-name
  import gin  # pylint: disable=g-import-not-at-top
  # pylint: disable=g-import-not-at-top
  from csl_jax.experiments import runner
  from csl_jax.seq2seq import model_selection
  from csl_jax.seq2seq import train as train_lib
  # pylint: enable=g-import-not-at-top
  gin.bind_parameter("seq2seq.TrainConfig.checkpoint_every", 2)
  out, box = str(tmp_path / "exp"), str(tmp_path / "bundle")
  kw = dict(dataset="tsv", splits=["toy"], data_dir=toy_experiment,
            methods=[], seeds=[0], beam_size=1, decode_batch_size=16,
            bundle=box)
  # Exported (and, say, trained) without a dev set first: exported again
  # with one, its training restarts (its checkpoints were never scored).
  assert runner.experiment(out, **kw)["pending"] == ["toy/original/seed_0"]
  cell = os.path.join(box, "cells", "toy", "original", "seed_0")
  os.makedirs(os.path.join(cell, "train"))
  kw["dev"] = "gooddev"
  assert runner.experiment(out, **kw)["pending"] == ["toy/original/seed_0"]
  assert not os.path.exists(os.path.join(cell, "train"))
  with open(os.path.join(cell, "cell.json")) as f:
    spec = json.load(f)
  (held,) = model_selection.gooddev_rows(10, 0.1, 0).tolist()
  dev = arrays.load(os.path.join(box, spec["dev"]))
  test = arrays.load(os.path.join(box, spec["eval"]["test"]))
  for k in arrays.FIELDS:
    assert len(dev[k]) == 1
    assert dev[k].row(0).tolist() == test[k].row(held).tolist()
  bundle.run_bundle(box, progress=False)
  (record,) = runner.experiment(out, **kw)["records"]
  with open(os.path.join(cell, "outputs.json")) as f:
    done = json.load(f)
  assert [s for s, _ in done["train"]["dev_history"]] == [2, 4]
  from csl_jax.cli import main as cli_main  # pylint: disable=g-import-not-at-top
  back = str(tmp_path / "back.tgz")
  assert cli_main.main(["run-bundle", box, "--pack", back,
                        "--pack_only"]) == 0
  import tarfile  # pylint: disable=g-import-not-at-top
  with tarfile.open(back) as tar:
    assert "cells/toy/original/seed_0/train/selection.json" in \
        tar.getnames()
  assert cli_main.main(["run-bundle", box, "--pack_only"]) == 2
  assert cli_main.main(["run-bundle", str(tmp_path), "--pack", back,
                        "--pack_only"]) == 2
  assert record["selected_step"] == done["train"]["selected_step"]
  assert record["num_eval_examples"] == {"test": 9}
  # The imported predictions are the selected parameters' here.
  model, params = train_lib.load_params(os.path.join(cell, "train"),
                                        selected=True)
  rows, _ = decode.evaluate(model, params, "tsv_toy", "test",
                            input_pipeline.lengths(6, 6), 16, 1)
  with open(os.path.join(record["dir"], "test", "predictions.tsv")) as f:
    assert f.read() == "".join("\t".join(r) + "\n" for r in rows)


def test_bundle_pcfg_bt_reverse_model_then_cells(toy_experiment, tmp_path):  # pylint: disable=redefined-outer-name
  import gin  # pylint: disable=g-import-not-at-top
  from csl_jax.experiments import runner  # pylint: disable=g-import-not-at-top
  from csl_jax.methods.pcfg_bt import method as pcfg_bt  # pylint: disable=g-import-not-at-top,unused-import
  grammar = tmp_path / "toy.cfg"
  grammar.write_text("S -> L L L\nL -> a | b | c | d\n", encoding="utf-8")
  for k, v in {"grammar": str(grammar), "num_samples": 20,
               "beam_size": 1, "max_consecutive_duplicates": 500}.items():
    gin.bind_parameter(f"pcfg_bt.PCFGBTConfig.{k}", v)
  out, box = str(tmp_path / "exp"), str(tmp_path / "bundle")
  kw = dict(dataset="tsv", splits=["toy"], data_dir=toy_experiment,
            methods=["pcfg_bt_train", "pcfg_bt_uniform"],
            data=["pcfg_bt_train", "pcfg_bt_uniform"], seeds=[0], beam_size=1,
            decode_batch_size=16, bundle=box)
  # Round 1: both variants' reverse model jobs (the cells need their
  # synthetic data), exported in one pass.
  jobs = runner.experiment(out, **kw)["pending"]
  assert len(jobs) == 2 and all(j.startswith("pcfg_bt/") for j in jobs)
  assert bundle.pending_cells(box) == sorted(jobs)
  bundle.run_bundle(box, progress=False)
  # Round 2: the cells; round 3: their records.
  assert runner.experiment(out, **kw)["pending"] == [
      "toy/pcfg_bt_train/seed_0", "toy/pcfg_bt_uniform/seed_0"]
  bundle.run_bundle(box, progress=False)
  records = runner.experiment(out, **kw)["records"]
  assert [r["data"] for r in records] == ["pcfg_bt_train", "pcfg_bt_uniform"]
  assert all(r["num_synthetic"] > 0 for r in records)


def test_arrays_trainer_trains_a_bundle_here_in_one_call(
    toy_experiment, tmp_path, monkeypatch, caplog):  # pylint: disable=redefined-outer-name
  # pylint: disable=g-import-not-at-top
  from csl_jax.experiments import runner
  from csl_jax.seq2seq import train as train_lib
  # pylint: enable=g-import-not-at-top
  out = str(tmp_path / "exp")
  kw = dict(dataset="tsv", splits=["toy"], data_dir=toy_experiment,
            methods=[], seeds=[0], beam_size=2, decode_batch_size=16)

  def never(*args, **kw):
    raise AssertionError("trained by the SeqIO trainer")

  monkeypatch.setattr(train_lib, "train", never)
  with caplog.at_level("INFO"):
    first = runner.experiment(out, trainer="arrays", **kw)
  assert "pending" not in first
  # The fresh cell, exported and trained, is taken up, not "resumed".
  cell_lines = [r.getMessage() for r in caplog.records
                if r.getMessage().startswith("stage cell: ")]
  assert not any("resum" in line for line in cell_lines)
  assert any(line.startswith("stage cell: taking up the work it exported")
             for line in cell_lines)
  assert [(r["data"], r["seed"], r["steps"]) for r in first["records"]] == [
      ("original", 0, 4)]
  with open(first["markdown"], encoding="utf-8") as f:
    assert "; trainer arrays;" in f.read()
  # The exact match beside the learning curve the bundle's trainer wrote.
  from csl_jax.experiments import plots  # pylint: disable=g-import-not-at-top
  (record,) = first["records"]
  board = os.path.join(record["dir"], "train", "tensorboard")
  assert [s for s, _ in plots.read_scalars(board, "train/loss")]
  assert plots.read_scalars(board, "eval_test/exact_match") == [
      (4, pytest.approx(record["accuracy"]))]
  box = os.path.join(out, runner.BUNDLE_DIR)
  assert bundle.pending_cells(box) == []
  # The cell an export to another bundle would make: the same key.
  exported = runner.experiment(str(tmp_path / "exp2"),
                               bundle=str(tmp_path / "box"), **kw)
  assert exported["pending"] == ["toy/original/seed_0"]
  keys = []
  for b in (box, str(tmp_path / "box")):
    with open(os.path.join(b, bundle.CELLS_DIR, "toy", "original", "seed_0",
                           bundle.CELL_FILE)) as f:
      keys.append(json.load(f)["stage_key"])
  assert keys[0] == keys[1]
  # A rerun trains nothing and records the same.
  monkeypatch.setattr(bundle, "run_cell", never)
  again = runner.experiment(out, trainer="arrays", **kw)
  assert [r["accuracy"] for r in again["records"]] == [
      r["accuracy"] for r in first["records"]]
  for bad in (dict(trainer="tfds"), dict(trainer="arrays", lanes=0)):
    with pytest.raises(InputError, match="trainer|lanes"):
      runner.experiment(out, **kw, **bad)


def test_arrays_trainer_honours_the_optimizer_options(
    toy_experiment, tmp_path):  # pylint: disable=redefined-outer-name
  """A bundle's cell carries `TrainConfig`'s optimizer options (Zhou et
  al. 2023 App. B.1's, gin/experiments/zhou_optimizer.gin) and trains with
  them: `fit` makes its optimizer and rates, Noam's of the cell's
  d_model."""
  # pylint: disable=g-import-not-at-top
  import gin
  from csl_jax.experiments import plots
  from csl_jax.experiments import runner
  from csl_jax.seq2seq import train as train_lib
  from csl_jax.seq2seq.config import TrainConfig
  # pylint: enable=g-import-not-at-top
  options = {"schedule": "noam", "learning_rate": 2.0, "warmup_steps": 2,
             "adam_b2": 0.998, "weight_decay": 0.0, "grad_clip": 5.0}
  for k, v in options.items():
    gin.bind_parameter(f"seq2seq.TrainConfig.{k}", v)
  out = str(tmp_path / "exp")
  first = runner.experiment(out, dataset="tsv", splits=["toy"],
                            data_dir=toy_experiment, methods=[], seeds=[0],
                            beam_size=1, decode_batch_size=16,
                            trainer="arrays")
  (record,) = first["records"]
  assert record["steps"] == 4
  cell = os.path.join(out, runner.BUNDLE_DIR, bundle.CELLS_DIR, "toy",
                      "original", "seed_0")
  with open(os.path.join(cell, bundle.CELL_FILE)) as f:
    spec = json.load(f)
  assert {k: spec["train"][k] for k in options} == options
  with open(os.path.join(cell, "train", train_lib.CONFIG_FILE)) as f:
    key = json.load(f)["train"]  # the run's: the options are in it
  assert {k: key[k] for k in options} == options
  rates = train_lib.learning_rates(TrainConfig(**spec["train"]), 16)
  assert rates[1] == pytest.approx(2.0 / 4 / np.sqrt(2), rel=1e-6)  # peak
  board = os.path.join(record["dir"], "train", "tensorboard")
  got = plots.read_scalars(board, "train/learning_rate")
  assert [s for s, _ in got] == [1, 2, 3, 4]
  np.testing.assert_allclose([v for _, v in got], rates, rtol=1e-6)


def test_run_bundle_stage_in_runs_a_copy_later_calls_resume(
    toy_experiment, tmp_path):  # pylint: disable=redefined-outer-name
  """A machine that keeps /tmp but not the working tree between calls: the
  bundle is copied there once (by its cells' specs) and run and packed
  there; the same call again finds the copy, with what it had done."""
  # pylint: disable=g-import-not-at-top
  from csl_jax.cli import main as cli_main
  from csl_jax.experiments import runner
  # pylint: enable=g-import-not-at-top
  out, box, kept = (str(tmp_path / "exp"), str(tmp_path / "bundle"),
                    str(tmp_path / "kept"))
  cells = ["toy/original/seed_0", "toy/original/seed_1"]
  assert runner.experiment(
      out, dataset="tsv", splits=["toy"], data_dir=toy_experiment,
      methods=[], seeds=[0, 1], beam_size=1, decode_batch_size=16,
      bundle=box)["pending"] == cells
  copy = bundle.stage(box, kept)
  assert os.path.dirname(copy) == kept and \
      os.path.basename(copy).startswith("bundle-")
  assert bundle.pending_cells(copy) == cells
  marker = os.path.join(copy, "cells", cells[0], "mark")
  open(marker, "w").close()  # what a stopped call left there
  assert bundle.stage(box, kept) == copy and os.path.exists(marker)
  # --only: the matching cells alone (the exit status speaks of them).
  assert cli_main.main(["run-bundle", box, "--stage_in", kept, "--only",
                        "*/seed_1"]) == 0
  assert bundle.pending_cells(copy) == cells[:1]
  back = str(tmp_path / "back.tgz")
  assert cli_main.main(["run-bundle", box, "--stage_in", kept, "--pack",
                        back]) == 0
  assert bundle.pending_cells(copy) == []
  assert bundle.pending_cells(box) == cells  # untouched
  import tarfile  # pylint: disable=g-import-not-at-top
  with tarfile.open(back) as tar:
    assert {f"cells/{c}/outputs.json" for c in cells} <= set(tar.getnames())
  # Exported again with other settings: another copy.
  spec = os.path.join(box, "cells", cells[1], "cell.json")
  with open(spec) as f:
    changed = dict(json.load(f), beam_size=2)
  with open(spec, "w") as f:
    json.dump(changed, f)
  other = bundle.stage(box, kept)
  assert other != copy and bundle.pending_cells(other) == cells
  with pytest.raises(InputError, match="not a bundle"):
    bundle.stage(str(tmp_path), kept)
  (tmp_path / "a_file").write_text("")
  with pytest.raises(InputError, match="cannot copy the bundle there"):
    bundle.stage(box, str(tmp_path / "a_file" / "kept"))


def test_a_failed_lane_exits_at_once_with_its_error(tmp_path):
  """A lane ends with os._exit: a thread left running cannot keep it, and
  the parent waiting for it, alive; its error is reported."""
  import time  # pylint: disable=g-import-not-at-top
  cell = tmp_path / "bundle" / "cells" / "c"
  cell.mkdir(parents=True)
  (cell / "cell.json").write_text("{}")  # no model: run_cell fails
  code = ("import threading, time; threading.Thread(target=time.sleep, "
          "args=(120,)).start(); from csl_jax.cli import main; "
          f"main.main(['run-bundle', {str(tmp_path / 'bundle')!r}, "
          "'--lanes', '2', '--lane', '0'])")
  env = dict(os.environ, PYTHONPATH=_REPO_ROOT + os.pathsep +
             os.environ.get("PYTHONPATH", ""), JAX_PLATFORMS="cpu")
  tick = time.time()
  done = subprocess.run([sys.executable, "-c", code], env=env,
                        capture_output=True, text=True, timeout=300,
                        check=False)
  assert time.time() - tick < 90
  assert done.returncode == 1 and "KeyError: 'model'" in done.stderr
  # A lane that cannot open its device says so in one line, not a
  # traceback per try (a GPU call's output keeps its last 12,000 characters).
  done = subprocess.run(
      [sys.executable, "-m", "csl_jax.cli.main", "run-bundle",
       str(tmp_path / "bundle"), "--lanes", "2", "--lane", "0"],
      env=dict(env, JAX_PLATFORMS="no_such_platform"), capture_output=True,
      text=True, timeout=300, check=False)
  assert done.returncode == 1, done.stderr
  assert done.stdout.startswith("[run-bundle] lane 0 cannot open the device "
                                "(JAX_PLATFORMS=no_such_platform): ")
  assert done.stdout.count("\n") == 1 and "Traceback" not in done.stderr


def test_an_interrupted_lane_says_so_in_one_line(monkeypatch, capsys):
  from csl_jax.cli import run_bundle  # pylint: disable=g-import-not-at-top

  def interrupted(*args, **kwargs):
    raise KeyboardInterrupt("train stopped at step 3 (checkpointed); the "
                            "same command resumes there")

  class Exited(Exception):
    pass

  def exit_(code):
    raise Exited(code)

  monkeypatch.setattr(bundle, "run_bundle", interrupted)
  monkeypatch.setattr(run_bundle.os, "_exit", exit_)
  args = argparse.Namespace(bundle="B", lanes=2, lane=1, only=None, cell=[])
  with pytest.raises(Exited) as info:
    run_bundle._lane(args)  # pylint: disable=protected-access
  assert info.value.args == (130,)
  err = capsys.readouterr().err
  assert err == ("[run-bundle] lane 1 interrupted: train stopped at step 3 "
                 "(checkpointed); the same command resumes there\n")


def test_a_failed_lane_is_started_again_for_its_own_cells(tmp_path,
                                                          monkeypatch):
  """Lane 0 fails once (a GPU it could not open) and is started again with
  the same cells; lane 1 fails every time and is given up after
  LANE_RETRIES more tries; a lane stopped by SIGTERM is not started again."""
  box = tmp_path / "bundle"
  names = [f"s/d/seed_{i}" for i in range(4)]
  for name in names:
    (box / "cells" / name).mkdir(parents=True)
    (box / "cells" / name / "cell.json").write_text("{}")
  started = []
  codes = {0: [1, 0], 1: [1, 1, 1, 0]}

  class FakeLane:
    """A lane process: exits with its next scripted code, having finished
    its cells when the code is 0."""

    def __init__(self, argv, env):
      lane = int(argv[argv.index("--lane") + 1])
      self.cells = [argv[i + 1] for i, a in enumerate(argv) if a == "--cell"]
      started.append((lane, self.cells))
      assert env["CSL_JAX_PROGRESS"] == "0"
      self.code = codes[lane].pop(0)
      if self.code == 0:
        for cell in self.cells:
          (box / "cells" / cell / "outputs.json").write_text("{}")

    def poll(self):
      return self.code

  monkeypatch.setattr(bundle.subprocess, "Popen", FakeLane)
  monkeypatch.setattr(bundle, "RETRY_PAUSE_SECONDS", 0.0)
  with pytest.raises(RuntimeError, match="1 lane"):
    bundle.run_bundle(str(box), lanes=2)
  lane0 = [cells for lane, cells in started if lane == 0]
  lane1 = [cells for lane, cells in started if lane == 1]
  assert lane0 == [["s/d/seed_0", "s/d/seed_2"]] * 2
  assert lane1 == [["s/d/seed_1", "s/d/seed_3"]] * (1 + bundle.LANE_RETRIES)
  assert bundle.pending_cells(str(box)) == ["s/d/seed_1", "s/d/seed_3"]
  # A lane stopped by a time limit is not started again.
  started.clear()
  codes.update({0: [143], 1: [0]})
  with pytest.raises(RuntimeError, match="1 lane"):
    bundle.run_bundle(str(box), lanes=2)
  assert started == [(0, ["s/d/seed_1"]), (1, ["s/d/seed_3"])]
  assert bundle.pending_cells(str(box)) == ["s/d/seed_1"]
  # A single pending cell runs in a lane too (it opens the device there,
  # and is started again if that fails).
  started.clear()
  codes.update({0: [1, 0]})
  bundle.run_bundle(str(box), lanes=2)
  assert started == [(0, ["s/d/seed_1"])] * 2
  assert bundle.pending_cells(str(box)) == []
  with pytest.raises(InputError, match="matches no cell"):
    bundle.run_bundle(str(box), lanes=2, only="*/seed_9")


def test_the_pack_is_written_as_lanes_finish_cells(tmp_path, monkeypatch):
  """While lane 1 still runs, the pack already holds lane 0's cell: a call
  killed from outside brings back what finished."""
  import tarfile  # pylint: disable=g-import-not-at-top
  box, pack = tmp_path / "bundle", str(tmp_path / "back.tgz")
  for i in range(2):
    (box / "cells" / f"s/d/seed_{i}").mkdir(parents=True)
    (box / "cells" / f"s/d/seed_{i}" / "cell.json").write_text("{}")
  seen_while_running, polls = [], []

  class FakeLane:

    def __init__(self, argv, env):
      del env
      self.cell = argv[argv.index("--cell") + 1]
      if self.cell.endswith("seed_0"):
        (box / "cells" / self.cell / "outputs.json").write_text("{}")

    def poll(self):
      if self.cell.endswith("seed_0"):
        return 0
      polls.append(1)
      if not os.path.exists(pack) and len(polls) < 100:  # fails, not hangs
        return None
      if not os.path.exists(pack):
        return 0
      with tarfile.open(pack) as tar:
        seen_while_running.append(tar.getnames())
      (box / "cells" / self.cell / "outputs.json").write_text("{}")
      return 0

  monkeypatch.setattr(bundle.subprocess, "Popen", FakeLane)
  monkeypatch.setattr(bundle, "PACK_CHECK_SECONDS", 0.0)
  bundle.run_bundle(str(box), lanes=2, pack=pack)
  assert seen_while_running == [["cells/s/d/seed_0/outputs.json"]]


def test_a_lane_started_again_while_packing(tmp_path, monkeypatch):
  """Lane 0 fails once and is started again while --pack is set, lane 1
  finishes later: the pack is still rewritten (the failure's own cells
  were once compared with the count of pending cells: a TypeError that
  left the lanes running orphaned)."""
  import tarfile  # pylint: disable=g-import-not-at-top
  box, pack = tmp_path / "bundle", str(tmp_path / "back.tgz")
  for i in range(2):
    (box / "cells" / f"s/d/seed_{i}").mkdir(parents=True)
    (box / "cells" / f"s/d/seed_{i}" / "cell.json").write_text("{}")
  tries = {0: 0}

  class FakeLane:

    def __init__(self, argv, env):
      del env
      self.lane = int(argv[argv.index("--lane") + 1])
      self.cell = argv[argv.index("--cell") + 1]
      self.polls = 0
      if self.lane == 0:
        tries[0] += 1

    def poll(self):
      self.polls += 1
      if self.lane == 0 and tries[0] == 1:
        return 1  # its first try fails
      if self.polls < 5:
        return None
      (box / "cells" / self.cell / "outputs.json").write_text("{}")
      return 0

  monkeypatch.setattr(bundle.subprocess, "Popen", FakeLane)
  monkeypatch.setattr(bundle, "RETRY_PAUSE_SECONDS", 0.0)
  monkeypatch.setattr(bundle, "PACK_CHECK_SECONDS", 0.0)
  bundle.run_bundle(str(box), lanes=2, pack=pack)
  assert tries[0] == 2 and bundle.pending_cells(str(box)) == []
  with tarfile.open(pack) as tar:  # lane 1's, written while lane 0 ran
    assert tar.getnames() == ["cells/s/d/seed_1/outputs.json"]


def test_outputs_of_an_older_export_are_not_imported(
    toy_experiment, tmp_path):  # pylint: disable=redefined-outer-name
  """A pack made before the cell was exported again (another key), then
  unpacked beside the new spec: not the new cell's results. The arrays
  trainer then trains the new spec from nothing (its old run directory
  is of another training configuration)."""
  import gin  # pylint: disable=g-import-not-at-top
  from csl_jax.experiments import runner  # pylint: disable=g-import-not-at-top
  out = str(tmp_path / "exp")
  kw = dict(dataset="tsv", splits=["toy"], data_dir=toy_experiment,
            methods=[], seeds=[0], beam_size=1, decode_batch_size=16,
            trainer="arrays")
  first = runner.experiment(out, **kw)
  assert [(r["data"], r["steps"]) for r in first["records"]] == [
      ("original", 4)]
  cell = os.path.join(out, runner.BUNDLE_DIR, "cells", "toy", "original",
                      "seed_0")
  with open(os.path.join(cell, bundle.OUTPUTS_FILE)) as f:
    old_outputs = f.read()
  gin.bind_parameter("seq2seq.TrainConfig.num_steps", 6)
  again = runner.experiment(out, **kw)
  assert [(r["data"], r["steps"]) for r in again["records"]] == [
      ("original", 6)]
  with open(os.path.join(cell, bundle.CELL_FILE)) as f:
    new_key = json.load(f)["stage_key"]
  # The old outputs come back (e.g. from an older back.tgz).
  with open(os.path.join(cell, bundle.OUTPUTS_FILE), "w") as f:
    f.write(old_outputs)
  assert bundle.outputs(os.path.join(out, runner.BUNDLE_DIR),
                        "toy/original/seed_0", new_key) is None


def test_run_bundle_pack_into_a_missing_directory_is_refused(tmp_path,
                                                             capsys):
  from csl_jax.cli import main as cli  # pylint: disable=g-import-not-at-top
  box = tmp_path / "bundle"
  (box / "cells" / "s/d/seed_0").mkdir(parents=True)
  (box / "cells" / "s/d/seed_0" / "cell.json").write_text("{}")
  assert cli.main(["run-bundle", str(box), "--pack",
                   str(tmp_path / "nodir" / "back.tgz")]) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1 and "no such directory for the pack" in err[0]
