"""Tests for the SeqIO registrations in tasks/ (no network, ByteVocabulary)."""

import importlib
import itertools

import pytest

from csl_jax.testing import tf_data

seqio, tf = tf_data.seqio_and_tensorflow()
gin = pytest.importorskip("gin")

from csl_jax.errors import InputError  # pylint: disable=g-import-not-at-top
from csl_jax.testing.files import write_pairs  # pylint: disable=g-import-not-at-top
from tasks import metrics
from tasks import registry
from tasks import vocab

# Targets of up to 115 bytes must not be truncated.
LENGTHS = {"inputs": 64, "targets": 128}
_PRIMS = {"jump": "I_JUMP", "walk": "I_WALK", "run": "I_RUN", "look": "I_LOOK"}
_MODS = {"": 1, " twice": 2, " thrice": 3}
_DIRS = {"": "", " left": "I_TURN_LEFT ", " right": "I_TURN_RIGHT "}


def _scan_like():
  """85 distinct SCAN-like pairs, e.g. ("jump left twice", "...")."""
  pairs = []
  for (p, action), (d, turn), (m, n) in itertools.product(
      _PRIMS.items(), _DIRS.items(), _MODS.items()):
    pairs.append((p + d + m, " ".join([turn + action] * n)))
  pairs += [(x + " and " + y, f"{a} {b}") for (x, a), (y, b) in
            itertools.product(pairs[:7], repeat=2)]
  return pairs


@pytest.fixture
def dataset(tmp_path):
  """Registers "t_scan" (20 train, 5 test) with 60 synthetic pairs."""
  pairs = _scan_like()
  original, test, synthetic = pairs[:20], pairs[20:25], pairs[25:85]
  write_pairs(tmp_path / "train.tsv", original)
  write_pairs(tmp_path / "test.tsv", test)
  syn = write_pairs(tmp_path / "synthetic.tsv", synthetic)
  names = registry.register_dataset("t_scan", tmp_path, synthetic_tsv=syn,
                                    vocabulary=seqio.ByteVocabulary())
  yield names, original, test, synthetic
  registry.unregister_dataset("t_scan")


def _texts(name, split, n=None, **kwargs):
  """[(decoded input, example)] drawn from a task or mixture."""
  provider = seqio.get_mixture_or_task(name)
  vocabulary = provider.output_features["inputs"].vocabulary
  ds = provider.get_dataset(sequence_length=LENGTHS, split=split, **kwargs)
  if n is not None:
    ds = ds.take(n)
  return [(vocabulary.decode(ex["inputs"].tolist()), ex)
          for ex in ds.as_numpy_iterator()]


def _original_share(name, original, n=1000):
  inputs = {i for i, _ in original}
  drawn = _texts(name, "train", n, shuffle=True, seed=0, num_epochs=None)
  assert len(drawn) == n
  return sum(text in inputs for text, _ in drawn) / n


def test_names_and_splits(dataset):
  names, *_ = dataset
  assert names[:3] == ("t_scan", "t_scan_csl_synthetic", "t_scan_csl_mixture")
  assert names.methods == {"csl": names[1:3]}
  assert (names.reversed, names.all_mixture) == ("t_scan_reversed",
                                                 "t_scan_all_mixture")
  # T5X's "validation": test here (no dev.tsv).
  assert set(seqio.get_mixture_or_task("t_scan").splits) == {
      "train", "test", "validation"}
  assert list(seqio.get_mixture_or_task("t_scan_csl_synthetic").splits) == [
      "train"]


def test_mixture_draws_original_and_synthetic_one_to_one(dataset):
  _, original, _, synthetic = dataset
  known = {i for i, _ in original + synthetic}
  drawn = _texts("t_scan_csl_mixture", "train", 200, shuffle=True, seed=1,
                 num_epochs=None)
  assert {text for text, _ in drawn} <= known
  # 20 original vs 60 synthetic pairs, yet equal rates give 1:1 draws.
  assert 0.45 <= _original_share("t_scan_csl_mixture", original) <= 0.55


def test_mixture_rates_are_configurable(tmp_path, dataset):
  _, original, _, _ = dataset
  registry.register_dataset(
      "t_scan", tmp_path, synthetic_tsv=tmp_path / "synthetic.tsv",
      vocabulary=seqio.ByteVocabulary(), synthetic_rate=3.0)
  assert 0.20 <= _original_share("t_scan_csl_mixture", original) <= 0.30


def test_mixture_eval_split_is_the_original_test_split(dataset):
  _, _, test, _ = dataset
  got = _texts("t_scan_csl_mixture", "test", shuffle=False, num_epochs=1)
  assert sorted(text for text, _ in got) == sorted(i for i, _ in test)


def test_validation_is_dev_where_there_is_one(tmp_path):
  pairs = _scan_like()
  write_pairs(tmp_path / "train.tsv", pairs[:10])
  write_pairs(tmp_path / "dev.tsv", pairs[10:13])
  write_pairs(tmp_path / "test.tsv", pairs[13:20])
  registry.register_dataset("t_dev", tmp_path,
                            vocabulary=seqio.ByteVocabulary())
  try:
    assert set(seqio.get_mixture_or_task("t_dev").splits) == {
        "train", "dev", "test", "validation"}
    got = _texts("t_dev", "validation", shuffle=False)
    assert sorted(text for text, _ in got) == sorted(i for i, _ in pairs[10:13])
  finally:
    registry.unregister_dataset("t_dev")


def test_input_prefix_goes_before_every_input(tmp_path, monkeypatch):
  pairs = _scan_like()
  write_pairs(tmp_path / "train.tsv", pairs[:5])
  syn = write_pairs(tmp_path / "synthetic.tsv", pairs[5:10])
  prefix = "semanticparse: "
  monkeypatch.setenv(registry.ENV_INPUT_PREFIX, prefix)
  try:
    for kwargs in ({}, {"input_prefix": prefix}):  # The env, the argument.
      registry.register_dataset("t_prefix", tmp_path, synthetic_tsv=syn,
                                vocabulary=seqio.ByteVocabulary(), **kwargs)
      vocabulary = seqio.ByteVocabulary()
      for name, want in (("t_prefix", pairs[:5]),
                         ("t_prefix_csl_synthetic", pairs[5:10])):
        got = {(text, vocabulary.decode(ex["targets"].tolist()))
               for text, ex in _texts(name, "train", shuffle=False)}
        assert got == {(prefix + x, y) for x, y in want}
      # Backtranslation's inputs are programs: no parsing prefix.
      got = {text for text, _ in _texts("t_prefix_reversed", "train",
                                         shuffle=False)}
      assert got == {y for _, y in pairs[:5]}
    registry.register_dataset("t_prefix", tmp_path, input_prefix="",
                              vocabulary=seqio.ByteVocabulary())
    got = {text for text, _ in _texts("t_prefix", "train", shuffle=False)}
    assert got == {x for x, _ in pairs[:5]}
  finally:
    registry.unregister_dataset("t_prefix")


def test_original_task_decodes_back_to_the_tsv(dataset):
  _, original, _, _ = dataset
  task = seqio.get_mixture_or_task("t_scan")
  vocabulary = task.output_features["targets"].vocabulary
  got = []
  for _, ex in _texts("t_scan", "train", shuffle=False):
    assert ex["inputs"][-1] == ex["targets"][-1] == vocabulary.eos_id
    got.append((vocabulary.decode(ex["inputs"].tolist()),
                vocabulary.decode(ex["targets"].tolist())))
  assert sorted(got) == sorted(original)


def test_malformed_line_fails_naming_file_and_line(tmp_path):
  write_pairs(tmp_path / "train.tsv", [("jump", "I_JUMP")])
  with open(tmp_path / "train.tsv", "a", encoding="utf-8") as f:
    f.write("no tab here\n")
  registry.register_dataset("t_bad", tmp_path,
                            vocabulary=seqio.ByteVocabulary())
  try:
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
      _texts("t_bad", "train", shuffle=False)
    assert f"{tmp_path / 'train.tsv'}:2" in str(e.value)
    assert "no tab here" in str(e.value)
  finally:
    registry.unregister_dataset("t_bad")


def test_missing_data_is_a_clear_error(tmp_path):
  with pytest.raises(ValueError, match="none of train.tsv"):
    registry.register_dataset("t_none", tmp_path)
  write_pairs(tmp_path / "train.tsv", [("jump", "I_JUMP")])
  with pytest.raises(ValueError, match="no such synthetic"):
    registry.register_dataset("t_none", tmp_path,
                              synthetic_tsv=tmp_path / "nope.tsv")
  registry.unregister_dataset("t_none")


def test_reregistering_and_reloading_do_not_crash(dataset, tmp_path):
  importlib.reload(vocab)
  importlib.reload(registry)
  registry.register_dataset("t_scan", tmp_path,
                            synthetic_tsv=tmp_path / "synthetic.tsv")
  assert "t_scan_csl_mixture" in seqio.MixtureRegistry.names()


def test_register_from_env(tmp_path, monkeypatch):
  pairs = _scan_like()
  # A flat dataset directory and an `augment --out` run directory.
  (tmp_path / "t_env_a").mkdir()
  write_pairs(tmp_path / "t_env_a" / "train.tsv", pairs[:3])
  write_pairs(tmp_path / "t_env_a" / "synthetic.tsv", pairs[3:6])
  run = tmp_path / "t_env-b"
  (run / "data").mkdir(parents=True)
  (run / "samples").mkdir()
  write_pairs(run / "data" / "train.tsv", pairs[:3])
  write_pairs(run / "samples" / "samples.tsv", pairs[6:9])
  (tmp_path / "not_data").mkdir()
  monkeypatch.setenv(registry.ENV_DATA, str(tmp_path))
  try:
    got = registry.register_from_env(vocabulary=seqio.ByteVocabulary())
    assert sorted(n.mixture for n in got) == ["t_env_a_csl_mixture",
                                              "t_env_b_csl_mixture"]
    texts = _texts("t_env_b_csl_synthetic", "train", shuffle=False)
    assert sorted(t for t, _ in texts) == sorted(i for i, _ in pairs[6:9])
    # A root that is itself a dataset: its data/ is not another one.
    got = registry.register_from_env(f"{run}/", seqio.ByteVocabulary())
    assert [n[:3] for n in got] == [("t_env_b", "t_env_b_csl_synthetic",
                                     "t_env_b_csl_mixture")]
  finally:
    for name in ("t_env_a", "t_env_b"):
      registry.unregister_dataset(name)
  monkeypatch.delenv(registry.ENV_DATA)
  assert not registry.register_from_env()
  with pytest.raises(InputError, match="no such directory"):
    registry.register_from_env(str(tmp_path / "nope"))
  # Two directories whose names make one task name: refused, not one
  # silently replacing the other.
  (tmp_path / "t_env-a").mkdir()
  write_pairs(tmp_path / "t_env-a" / "train.tsv", pairs[:3])
  try:
    with pytest.raises(InputError, match=r"t_env-a and .*t_env_a .*would "
                       r"both be task t_env_a"):
      registry.register_from_env(str(tmp_path), seqio.ByteVocabulary())
  finally:
    registry.unregister_dataset("t_env_a")


def test_bom_blank_lines_and_carriage_returns_read_as_read_tsv(tmp_path):
  # The project's TSV reader takes a BOM, CRLF line ends and trailing blank
  # lines; SeqIO and split_texts must read the same pairs (a BOM glued to
  # the first token, or an assertion on the blank line, before).
  from csl_jax.data import tsv  # pylint: disable=g-import-not-at-top
  path = tmp_path / "train.tsv"
  path.write_bytes(b"\xef\xbb\xbfjump\tI_JUMP\r\nwalk twice\tI_WALK I_WALK"
                   b"\r\n\r\n  \n")
  want = [("jump", "I_JUMP"), ("walk twice", "I_WALK I_WALK")]
  assert [tuple(e) for e in tsv.read_tsv(str(path))] == want
  registry.register_dataset("t_bom", tmp_path,
                            vocabulary=seqio.ByteVocabulary())
  try:
    got = [(t, seqio.ByteVocabulary().decode(ex["targets"].tolist()))
           for t, ex in _texts("t_bom", "train", shuffle=False)]
    assert got == want
    assert registry.split_texts("t_bom", "train") == (
        [x for x, _ in want], [y for _, y in want])
  finally:
    registry.unregister_dataset("t_bom")


def test_vocabulary_from_env_and_gin(tmp_path, monkeypatch):
  for var in (vocab.ENV_VOCAB, vocab.ENV_SPM, vocab.ENV_EXTRA_IDS):
    monkeypatch.delenv(var, raising=False)
  assert vocab.get_vocabulary() == seqio.ByteVocabulary()
  # Equal arguments give the very object, as T5X compares model and task.
  assert vocab.get_vocabulary() is vocab.get_vocabulary("byte")
  monkeypatch.setenv(vocab.ENV_EXTRA_IDS, "3")
  assert vocab.get_vocabulary().extra_ids == 3
  monkeypatch.setenv(vocab.ENV_VOCAB, "sentencepiece")
  with pytest.raises(ValueError, match="needs a model path"):
    vocab.get_vocabulary()
  monkeypatch.setenv(vocab.ENV_SPM, str(tmp_path / "missing.model"))
  with pytest.raises(ValueError, match="no such SentencePiece model"):
    vocab.get_vocabulary()
  monkeypatch.setenv(vocab.ENV_VOCAB, "words")
  with pytest.raises(ValueError, match="vocabulary kind"):
    vocab.get_vocabulary()
  try:
    gin.parse_config(["tasks.vocab.get_vocabulary.kind = 'byte'",
                      "tasks.vocab.get_vocabulary.extra_ids = 5"])
    assert vocab.get_vocabulary() == seqio.ByteVocabulary(extra_ids=5)
  finally:
    gin.clear_config()


def test_trained_sentencepiece_round_trips_through_a_task(tmp_path):
  pairs = _scan_like()
  train = write_pairs(tmp_path / "train.tsv", pairs)
  model = vocab.train_sentencepiece([train], str(tmp_path / "spm"), 60)
  sp = vocab.get_vocabulary("sentencepiece", model)
  assert sp is vocab.get_vocabulary("sentencepiece", model)
  assert (sp.pad_id, sp.eos_id, sp.unk_id) == (0, 1, 2)
  registry.register_dataset("t_spm", tmp_path, vocabulary=sp)
  try:
    got = {(sp.decode(ex["inputs"].tolist()), sp.decode(ex["targets"].tolist()))
           for _, ex in _texts("t_spm", "train", shuffle=False)}
  finally:
    registry.unregister_dataset("t_spm")
  assert got == set(pairs)


def test_cli_vocab_word_model_gives_one_piece_per_word(tmp_path):
  import json  # pylint: disable=g-import-not-at-top
  from csl_jax.cli import main as cli  # pylint: disable=g-import-not-at-top
  pairs = _scan_like()
  train = str(write_pairs(tmp_path / "train.tsv", pairs))
  prefix = str(tmp_path / "v" / "words")
  assert cli.main(["vocab", "--tsv", train, "--out", prefix,
                   "--model_type", "word", "--vocab_size", "64"]) == 0
  words = {w for x, y in pairs for w in (x + " " + y).split()}
  record = json.loads((tmp_path / "v" / "words.json").read_text())
  assert record["vocab_size"] == len(words) + 3  # pad, eos, unk
  sp = vocab.get_vocabulary("sentencepiece", prefix + ".model")
  for x, y in pairs:
    for text in (x, y):
      assert len(sp.encode(text)) == len(text.split())
      assert sp.decode(sp.encode(text)) == text
  assert cli.main(["vocab", "--tsv", str(tmp_path / "missing.tsv"),
                   "--out", prefix]) == 2


def test_cli_vocab_keeps_the_words_of_a_long_line(tmp_path):
  """SentencePiece skipped a line over 4,192 bytes without a word: its
  words were left out of the vocabulary (unknown to the model)."""
  import json  # pylint: disable=g-import-not-at-top
  from csl_jax.cli import main as cli  # pylint: disable=g-import-not-at-top
  long_input = " ".join(f"w{i}" for i in range(1500))  # ~8,300 bytes
  train = str(write_pairs(tmp_path / "train.tsv",
                          [("walk", "I_WALK"), (long_input, "I_X")]))
  prefix = str(tmp_path / "words")
  assert cli.main(["vocab", "--tsv", train, "--out", prefix,
                   "--model_type", "word", "--vocab_size", "4000"]) == 0
  record = json.loads((tmp_path / "words.json").read_text())
  assert record["vocab_size"] == 1500 + 3 + 3  # + walk I_WALK I_X


def test_exact_match_and_strip_text():
  assert metrics.strip_text(b" I_JUMP  I_WALK\n") == "I_JUMP I_WALK"
  assert metrics.strip_text("a\tb", example={}, is_target=True) == "a b"
  got = metrics.exact_match(["A  B", "C", b"D"], ["A B", "C D", "D "])
  assert got == {"exact_match": pytest.approx(200 / 3)}
  with pytest.raises(ValueError):
    metrics.exact_match(["a"], [])
