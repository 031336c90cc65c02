"""Method pcfg_bt: PCFG programs counted by hand, backtranslated candidates,
per-stage caching. Tiny grammar, tiny reverse model; no network."""

import json
import os
import re
import shutil

import pytest

pytest.importorskip("tensorflow")

# pylint: disable=g-import-not-at-top
from csl_jax.errors import InputError
from csl_jax.methods import base
from csl_jax.methods.pcfg_bt import PCFGBT
from csl_jax.methods.pcfg_bt import PCFGBTConfig
from csl_jax.methods.pcfg_bt import method as pcfg_bt
from csl_jax.pipeline import cache
from csl_jax.seq2seq import models
from csl_jax.seq2seq import train as train_lib
import tasks
# pylint: enable=g-import-not-at-top

# Language: 3 single actions and 9 pairs, 12 programs.
GRAMMAR = "S -> V | V V\nV -> walk | jump | run\n"
TRAIN = [("do walk", "walk"), ("do jump", "jump"),
         ("do walk walk", "walk walk"), ("do jump walk", "jump walk")]
TEST = [("do run", "run"), ("do run jump", "run jump")]
MODEL = models.Seq2SeqConfig(d_model=16, num_heads=2, d_ff=32, num_layers=1,
                             dropout=0.0, max_input_len=16, max_target_len=16)
STEPS = train_lib.TrainConfig(batch_size=4, num_steps=6, warmup_steps=1,
                              log_every=3, checkpoint_every=6)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
  """(directory, run data); its workdir "w" is shared by the tests, so the
  reverse model trains once."""
  tmp_path = tmp_path_factory.mktemp("pcfg_bt")
  data = tmp_path / "data"
  data.mkdir()
  for name, rows in (("train", TRAIN), ("test", TEST)):
    (data / f"{name}.tsv").write_text(
        "".join(f"{x}\t{y}\n" for x, y in rows), encoding="utf-8")
  (tmp_path / "actions.cfg").write_text(GRAMMAR, encoding="utf-8")
  splits = {s: str(data / f"{s}.tsv") for s in ("train", "test")}
  return tmp_path, base.RunData(str(data), splits)


def _run(method, run_data, workdir):
  return {s.name: cache.run_stage(s, s.path(workdir))
          for s in method.stages(run_data, workdir)}


def _run_programs(method, run_data, workdir):
  """Only the `programs` stage (the others do not depend on the PCFG)."""
  stage = method.stages(run_data, workdir)[0]
  return {"programs": cache.run_stage(stage, os.path.join(workdir, "p"))}


def _method(tmp_path, **kw):
  kw = {"max_consecutive_duplicates": 2000, "beam_size": 2, **kw}
  config = PCFGBTConfig(grammar=str(tmp_path / "actions.cfg"), **kw)
  return PCFGBT(config, MODEL, STEPS)


def _programs(summary):
  with open(summary["programs"]["programs"], encoding="utf-8") as f:
    return f.read().splitlines()


def test_uniform_and_train_programs_by_hand(run):
  tmp_path, run_data = run
  workdir = str(tmp_path / "w")
  uniform = _run(_method(tmp_path), run_data, workdir)
  assert not any(s["cached"] for s in uniform.values())
  acts = ["walk", "jump", "run"]
  assert sorted(_programs(uniform)) == sorted(
      acts + [f"{a} {b}" for a in acts for b in acts])
  assert uniform["programs"]["new_programs"] == 12 - 4
  # P_train: `run` never occurs in the training outputs, so its production
  # has probability 0: the 2 + 4 programs over walk and jump.
  trained = _run_programs(_method(tmp_path, distribution="train"), run_data,
                         workdir)
  assert sorted(_programs(trained)) == sorted(
      ["walk", "jump"] + [f"{a} {b}" for a in ("walk", "jump")
                          for b in ("walk", "jump")])
  # P_uniform over the training outputs' tokens: `run` goes, 1/2 each of
  # walk and jump; the report says so. The default's stage key is the one
  # it had before the option.
  known = _run_programs(_method(tmp_path, known_tokens_only=True), run_data,
                        str(tmp_path / "k"))
  assert sorted(_programs(known)) == sorted(_programs(trained))
  assert known["programs"]["estimate"] == {"productions_used": 4,
                                           "productions": 5}
  for option in ("known_tokens_only", "uniform_factored"):
    assert option not in _method(tmp_path).stages(run_data,
                                                  workdir)[0].config
  assert _method(tmp_path, uniform_factored=True).stages(
      run_data, workdir)[0].config["uniform_factored"] is True
  # Backtranslations by beam search are keyed on what beam search returns
  # (a finished beam first since session 33); greedy ones keep their key.
  from csl_jax.seq2seq import config as seq2seq_config  # pylint: disable=g-import-not-at-top
  def backtranslate(method):
    return next(s for s in method.stages(run_data, workdir)
                if s.name == "backtranslate")
  assert backtranslate(_method(tmp_path)).config[
      "beam_search"] == seq2seq_config.BEAM_SEARCH_VERSION
  assert "beam_search" not in backtranslate(_method(tmp_path,
                                                    beam_size=1)).config
  # P_test (oracle): only the test outputs' productions.
  oracle = _run_programs(_method(tmp_path, distribution="test"), run_data,
                        workdir)
  assert oracle["programs"]["oracle"]
  assert sorted(_programs(oracle)) == sorted(
      ["run", "jump", "run run", "run jump", "jump run", "jump jump"])


def test_candidates_pair_each_program_with_its_backtranslation(run):
  tmp_path, run_data = run
  summary = _run(_method(tmp_path), run_data, str(tmp_path / "w"))
  bt = summary["backtranslate"]
  with open(bt["candidates"], encoding="utf-8") as f:
    rows = [line.split("\t") for line in f.read().splitlines()]
  programs = _programs(summary)
  assert bt["num_candidates"] + bt["num_empty_utterances"] == len(programs)
  assert [p for _, p in rows] == [p for p in programs
                                  if p in {q for _, q in rows}]
  assert all(u.strip() for u, _ in rows) and bt["num_programs_cut"] == 0
  assert summary["reverse_model"]["steps"] == STEPS.num_steps
  # The reverse model scored on the run's test part (program -> utterance).
  assert bt["eval"]["part"] == "test" and bt["eval"]["num_examples"] == 2
  assert 0.0 <= bt["eval"]["exact_match"] <= 100.0
  assert 0.0 <= bt["eval"]["bleu"] <= 100.0
  labels = [label for label, _ in _method(tmp_path).report_rows(summary)]
  assert ("Backtranslated pairs (left out: empty, programs cut to the "
          "reverse model's input)") in labels
  assert "Backtranslation exact match / BLEU on test (beam 2)" in labels


def test_tables_5_and_6_of_the_augmented_training_set_by_hand(run,
                                                              monkeypatch):
  """Y&K Table 5 against the test part, with and without the pairs, and
  Table 6's perplexity of the test outputs under the PCFG, counted by
  hand from TRAIN, TEST and the 12 programs."""
  tmp_path, run_data = run
  summary = _run(_method(tmp_path), run_data, str(tmp_path / "w"))
  st = summary["statistics"]
  with open(summary["backtranslate"]["candidates"], encoding="utf-8") as f:
    pairs = [line.split("\t") for line in f.read().splitlines()]
  out = st["output"]
  # Original outputs: walk, jump, walk walk, jump walk (6 tokens / 4).
  # Test outputs `run` and `run jump`: bigrams <s> run, run </s>, run jump,
  # jump </s>; the training outputs have only `jump </s>`.
  assert out["original"] == {"average_length": 1.5, "bigram_coverage": 0.25,
                             "instance_coverage": 0.0,
                             "instance_examples": 0.0}
  programs = [p for _, p in pairs]
  outputs = [y for _, y in TRAIN] + programs
  assert out["augmented"]["average_length"] == pytest.approx(
      sum(len(y.split()) for y in outputs) / len(outputs))
  covered = {"run", "run jump"} & set(programs)
  assert out["augmented"]["instance_coverage"] == len(covered) / 2
  # Inputs: the original `do ...` never says `run`.
  assert st["input"]["original"]["instance_coverage"] == 0.0
  assert st["input"]["original"]["average_length"] == 2.5
  # Uniform PCFG: p(S -> V) = 1/2, p(V -> x) = 1/3, so p(run) = 1/6 and
  # p(run jump) = 1/2 * 1/9 = 1/18: perplexity exp(log(6 * 18) / 3).
  px = st["perplexity"]
  assert (px["of"], px["zero_probability"], px["scored"]["outputs"]) == (
      2, 0, 2)
  assert px["value"] == px["scored"]["value"] == pytest.approx(
      108 ** (1 / 3))
  # P_train (walk, jump, walk walk, jump walk) scores neither `run` nor
  # `run jump`: no output every distribution scores.
  assert px["common"] == {"value": None, "outputs": 0}
  rows = dict(_method(tmp_path).report_rows(summary))
  assert any(label.startswith("Table 5, outputs") for label in rows)
  label = next(k for k in rows if k.startswith("Per-token perplexity"))
  assert rows[label] == (f"{108 ** (1 / 3):.3f} (0 of 2 with p = 0) / "
                         f"{108 ** (1 / 3):.3f} (2) / — (0)")
  # P_train gives `run` probability 0: no test output counts. The PCFG is
  # estimated once, by the programs stage; statistics reads its file.
  from csl_jax.pcfg import pcfg as pcfg_lib  # pylint: disable=g-import-not-at-top
  estimates = []
  real = pcfg_lib.estimate
  monkeypatch.setattr(pcfg_lib, "estimate",
                      lambda *a, **k: estimates.append(1) or real(*a, **k))
  trained = _run(_method(tmp_path, distribution="train"), run_data,
                 str(tmp_path / "w"))
  assert len(estimates) == 1
  assert trained["statistics"]["perplexity"] == {
      "value": None, "zero_probability": 2, "of": 2,
      "scored": {"value": None, "outputs": 0},
      "common": {"value": None, "outputs": 0}}
  # The pipeline publishes backtranslate's candidates, which it names.
  assert list(summary)[-2:] == ["backtranslate", "statistics"]
  assert st["candidates_from"] == "backtranslate"
  assert "candidates" not in st


def test_only_changed_stages_rerun(run):
  tmp_path, run_data = run
  workdir = str(tmp_path / "c")
  _run(_method(tmp_path), run_data, str(tmp_path / "w"))  # trained once
  shutil.copytree(tmp_path / "w", workdir)
  again = _run(_method(tmp_path), run_data, workdir)
  assert all(s["cached"] for s in again.values())
  # `statistics` reruns when the candidates' bytes change, whichever
  # setting changed them.
  def fresh(summaries):
    return [n for n, s in summaries.items()
            if not s["cached"] and n != "statistics"]
  beam = _run(_method(tmp_path, beam_size=1), run_data, workdir)
  assert fresh(beam) == ["reverse_eval", "backtranslate"]
  seed = _run(_method(tmp_path, beam_size=1, seed=3), run_data, workdir)
  assert fresh(seed) == ["programs", "backtranslate"]
  # Another variant of the run (P_train) reuses the one reverse model and
  # its scores on the eval part.
  other = _run(_method(tmp_path, beam_size=1, distribution="train"),
               run_data, str(tmp_path / "t"))
  assert fresh(other) == ["programs", "backtranslate"]
  assert other["backtranslate"]["eval"] == beam["backtranslate"]["eval"]
  assert not other["statistics"]["cached"]
  assert other["reverse_model"]["model"] == str(
      tmp_path / "pcfg_bt_reverse_model" / "model")


def test_reverse_eval_is_a_shared_stage_only_with_an_eval_part(run):
  """The reverse model's scores: a stage beside the model (every variant's
  backtranslate reads its scores.json); with no eval part, no such stage
  and backtranslate reads none."""
  tmp_path, run_data = run
  workdir = str(tmp_path / "e" / "pcfg_bt")
  scored = {s.name: s for s in _method(tmp_path).stages(run_data, workdir)}
  assert list(scored) == ["programs", "reverse_model", "reverse_eval",
                          "backtranslate", "statistics"]
  eval_dir = scored["reverse_eval"].path(workdir)
  assert eval_dir == str(tmp_path / "e" / pcfg_bt.REVERSE_EVAL_DIR)
  assert scored["reverse_eval"].config["eval_part"] == "test"
  assert os.path.join(eval_dir, "scores.json") in scored[
      "backtranslate"].inputs
  config = _method(tmp_path).config
  plain = {s.name: s for s in PCFGBT(config, MODEL, STEPS, eval_part=None
                                     ).stages(run_data, workdir)}
  assert list(plain) == ["programs", "reverse_model", "backtranslate"]
  assert not any(p.endswith("scores.json")
                 for p in plain["backtranslate"].inputs)
  assert plain["backtranslate"].config == scored["backtranslate"].config


def test_another_vocabulary_retrains_the_reverse_model(run, monkeypatch):
  tmp_path, run_data = run
  before = {s.name: s.config for s in _method(tmp_path).stages(
      run_data, str(tmp_path / "v"))}
  monkeypatch.setenv("CSL_JAX_EXTRA_IDS", "3")
  after = {s.name: s.config for s in _method(tmp_path).stages(
      run_data, str(tmp_path / "v"))}
  assert before["programs"] == after["programs"]
  assert before["reverse_model"] != after["reverse_model"]
  assert before["backtranslate"] != after["backtranslate"]


def test_word_vocabulary_and_swapped_lengths(run):
  """reverse_vocabulary "word": one piece per token of the training pairs
  (programs of many bytes are a few words); the reverse model's lengths
  can be set apart from the Seq2SeqConfig's (the forward model's)."""
  tmp_path, run_data = run
  method = _method(tmp_path, reverse_vocabulary="word",
                   reverse_max_input_len=4, reverse_max_target_len=5)
  summary = _run(method, run_data, str(tmp_path / "word" / "pcfg_bt"))
  model_dir = summary["reverse_model"]["model"]
  model, _ = train_lib.load_config(model_dir)
  assert (model.max_input_len, model.max_target_len) == (4, 5)
  assert model.d_model == MODEL.d_model
  vocab = tasks.vocab.get_vocabulary(
      "sentencepiece", os.path.join(tmp_path, "word",
                                    "pcfg_bt_reverse_model", "spm.model"))
  # pad, EOS, unk + do, walk, jump (run is only in the test part).
  assert vocab.encode("do jump walk") == [vocab.encode(w)[0] for w in
                                         ("do", "jump", "walk")]
  bt = summary["backtranslate"]
  # "walk walk" is 2 words + EOS <= 4: no program cut.
  assert bt["num_programs_cut"] == 0
  with open(bt["candidates"], encoding="utf-8") as f:
    rows = [line.split("\t") for line in f.read().splitlines()]
  # (6 training steps: most utterances come out empty, and are dropped.)
  assert bt["num_candidates"] + bt["num_empty_utterances"] == 12
  assert all(len(u.split()) <= 5 for u, _ in rows)
  assert bt["eval"]["num_examples"] == 2  # scored in the word vocabulary
  with pytest.raises(InputError, match="reverse_vocabulary"):
    PCFGBTConfig(grammar="x.cfg", reverse_vocabulary="bpe")


def test_reverse_num_steps_trains_only_the_reverse_model_longer(run):
  tmp_path, run_data = run
  settings = (("p", {}), ("q", {"reverse_num_steps": 50}))
  plain, longer = ({s.name: s.config for s in _method(tmp_path, **kw).stages(
      run_data, str(tmp_path / name))} for name, kw in settings)
  assert plain["programs"] == longer["programs"]  # the same samples
  assert plain["reverse_model"]["train"]["num_steps"] == STEPS.num_steps
  assert longer["reverse_model"]["train"] == dict(
      plain["reverse_model"]["train"], num_steps=50)
  assert longer["backtranslate"]["model_steps"] == 50
  with pytest.raises(InputError, match="reverse_num_steps"):
    PCFGBTConfig(grammar="x.cfg", reverse_num_steps=-1)


def test_reverse_seed_retrains_only_the_reverse_model(run):
  """An experiment binds reverse_seed per seed (synthetic_seed_params):
  each seed's reverse model is its own, the programs are the seed's
  sampling alone."""
  tmp_path, run_data = run
  settings = (("p", {}), ("s", {"reverse_seed": 7}),
              ("z", {"reverse_seed": STEPS.seed}))
  plain, seeded, same = ({s.name: s.config for s in _method(
      tmp_path, **kw).stages(run_data, str(tmp_path / name))}
                         for name, kw in settings)
  assert plain["programs"] == seeded["programs"] == same["programs"]
  assert seeded["reverse_model"]["train"] == dict(
      plain["reverse_model"]["train"], seed=7)
  assert same["reverse_model"] == plain["reverse_model"]  # None: binding's
  with pytest.raises(InputError, match="reverse_seed"):
    PCFGBTConfig(grammar="x.cfg", reverse_seed="1")


def test_reverse_absolute_positions_change_only_the_reverse_model(run):
  tmp_path, run_data = run
  settings = (("p", {}), ("a", {"reverse_absolute_positions": True}),
              ("n", {"reverse_absolute_positions": False}))
  plain, on, off = ({s.name: s.config for s in _method(tmp_path, **kw).stages(
      run_data, str(tmp_path / name))} for name, kw in settings)
  assert plain["programs"] == on["programs"] == off["programs"]
  assert plain["reverse_model"]["model"]["absolute_positions"] == (
      MODEL.absolute_positions)  # None: the binding's
  assert on["reverse_model"]["model"]["absolute_positions"] is True
  assert off["reverse_model"]["model"]["absolute_positions"] is False
  assert on["reverse_model"]["model"] == dict(
      off["reverse_model"]["model"], absolute_positions=True)
  with pytest.raises(InputError, match="reverse_absolute_positions"):
    PCFGBTConfig(grammar="x.cfg", reverse_absolute_positions="yes")


def test_reverse_buckets_change_only_the_reverse_model(run):
  tmp_path, run_data = run
  settings = (("p", {}), ("b", {"reverse_num_buckets": 8,
                                "reverse_max_distance": 16}))
  plain, clipped = ({s.name: s.config for s in _method(tmp_path, **kw).stages(
      run_data, str(tmp_path / name))} for name, kw in settings)
  assert plain["programs"] == clipped["programs"]
  assert (plain["reverse_model"]["model"]["num_buckets"],
          plain["reverse_model"]["model"]["max_distance"]) == (
              MODEL.num_buckets, MODEL.max_distance)  # 0: the binding's
  assert clipped["reverse_model"]["model"] == dict(
      plain["reverse_model"]["model"], num_buckets=8, max_distance=16)
  assert clipped["reverse_model"]["train"] == plain["reverse_model"]["train"]
  for name in ("reverse_num_buckets", "reverse_max_distance"):
    with pytest.raises(InputError, match=name):
      PCFGBTConfig(grammar="x.cfg", **{name: -1})


def test_bad_settings_are_clear_errors(run):
  tmp_path, run_data = run
  with pytest.raises(InputError, match="distribution"):
    PCFGBTConfig(grammar="x.cfg", distribution="zipf")
  # Refused before the reverse model trains, not after.
  for name, value in (("num_samples", -5), ("beam_size", 0),
                      ("decode_batch_size", 0), ("max_depth", 0),
                      ("max_consecutive_duplicates", 0),
                      ("reverse_max_input_len", -1), ("seed", -1),
                      ("reverse_seed", -2)):
    with pytest.raises(InputError, match=f"pcfg_bt {name} must be >="):
      PCFGBTConfig(grammar="x.cfg", **{name: value})
  with pytest.raises(InputError, match="needs a CFG of the programs"):
    PCFGBT(PCFGBTConfig()).stages(run_data, str(tmp_path / "x"))
  no_test = base.RunData(run_data.directory, {"train": run_data.train})
  with pytest.raises(InputError, match="'test' part"):
    _method(tmp_path, distribution="test").stages(no_test,
                                                   str(tmp_path / "y"))
  # No program of the grammar uses only the training outputs' tokens.
  other = tmp_path / "fly.cfg"
  other.write_text("S -> fly | fly S\n", encoding="utf-8")
  method = PCFGBT(PCFGBTConfig(grammar=str(other), known_tokens_only=True),
                  MODEL, STEPS)
  with pytest.raises(InputError, match=r"fly\.cfg: no string of the "
                     r"grammar's start category 'S' .*train\.tsv"):
    _run_programs(method, run_data, str(tmp_path / "z"))
  # P_train over a grammar that parses none of the training outputs: said
  # so, naming the grammar and the data (not "the start category has no
  # production of positive probability").
  with pytest.raises(InputError, match=r"fly\.cfg: none of the 4 train "
                     r"outputs parses.*train\.tsv"):
    _run_programs(PCFGBT(PCFGBTConfig(grammar=str(other),
                                      distribution="train"), MODEL, STEPS),
                  run_data, str(tmp_path / "z2"))
  assert "pcfg_bt" in base.names()
  for distribution in ("train", "uniform", "test"):
    method = base.get(f"pcfg_bt_{distribution}")
    assert method.name == f"pcfg_bt_{distribution}"
    assert method.config.distribution == distribution


def test_bundled_reverse_model_trains_there_and_is_imported(run, tmp_path):
  # pylint: disable=g-import-not-at-top
  from csl_jax.seq2seq import bundle
  from csl_jax.seq2seq import decode
  # pylint: enable=g-import-not-at-top
  base_dir, run_data = run
  box = str(tmp_path / "bundle")
  method = _method(base_dir)
  method.bundle = box
  workdir = str(tmp_path / "w")
  stages = method.stages(run_data, workdir)
  assert [s.name for s in stages] == ["programs", "backtranslate",
                                      "statistics"]
  cache.run_stage(stages[0], stages[0].path(workdir))
  with pytest.raises(bundle.Pending):
    cache.run_stage(stages[1], stages[1].path(workdir))
  (cell,) = bundle.pending_cells(box)
  assert cell.startswith("pcfg_bt/")
  bundle.run_bundle(box, progress=False)
  summary = cache.run_stage(stages[1], stages[1].path(workdir))
  assert summary["reverse_model"]["steps"] == STEPS.num_steps
  labels = dict(method.report_rows({"programs": cache.run_stage(
      stages[0], stages[0].path(workdir)), "backtranslate": summary}))
  assert labels["Reverse model steps / loss"].startswith(
      f"{STEPS.num_steps:,} / ")
  assert summary["eval"]["part"] == "test"
  assert summary["eval"]["num_examples"] == 2
  # The utterances are what the bundle's reverse model decodes here.
  with open(os.path.join(workdir, "programs", "programs.txt"),
            encoding="utf-8") as f:
    programs = f.read().splitlines()
  model, params = train_lib.load_params(
      os.path.join(box, "cells", cell, "train"))
  utterances, _ = decode.translate(
      model, params, tasks.vocab.get_vocabulary(), programs,
      model.config.max_input_len, model.config.max_target_len, 64, 2)
  with open(summary["candidates"], encoding="utf-8") as f:
    got = [tuple(line.split("\t")) for line in f.read().splitlines()]
  assert got == [(u, p) for u, p in zip(utterances, programs) if u.strip()]
  # Another reverse model setting re-exports the same cell: its old outputs
  # are never imported, and no stale cell is left to train.
  other = _method(base_dir, beam_size=1)
  other.bundle = box
  stage = other.stages(run_data, workdir)[1]
  with pytest.raises(bundle.Pending):
    cache.run_stage(stage, stage.path(workdir))
  assert bundle.pending_cells(box) == [cell]


def test_bundled_outputs_of_fewer_programs_are_an_error(run, tmp_path):
  """A cell's outputs.npz with fewer decoded programs than programs.txt
  (a file of another export, or cut short) is an InputError naming it,
  not a candidates.tsv silently short of the programs it dropped."""
  # pylint: disable=g-import-not-at-top
  from csl_jax.seq2seq import arrays
  from csl_jax.seq2seq import bundle
  # pylint: enable=g-import-not-at-top
  base_dir, run_data = run
  box = str(tmp_path / "bundle")
  method = _method(base_dir)
  method.bundle = box
  workdir = str(tmp_path / "w")
  programs_stage, backtranslate = method.stages(run_data, workdir)[:2]
  cache.run_stage(programs_stage, programs_stage.path(workdir))
  with pytest.raises(bundle.Pending):
    cache.run_stage(backtranslate, backtranslate.path(workdir))
  (cell,) = bundle.pending_cells(box)
  bundle.run_bundle(box, progress=False)
  npz = os.path.join(box, bundle.CELLS_DIR, cell, bundle.PREDICTIONS_FILE)
  parts = arrays.load(npz)
  decoded = parts["programs"]
  assert len(decoded) > 1
  parts["programs"] = arrays.Ragged.from_rows(
      [decoded.row(i) for i in range(len(decoded) - 1)])
  arrays.save(npz, parts)
  # Cut short beside its outputs.json: the bundle says they differ.
  with pytest.raises(InputError, match=re.escape(npz) + r": \d+ "
                     r"predictions of part programs for the \d+ examples"):
    cache.run_stage(backtranslate, backtranslate.path(workdir))
  # Both of another export (they agree): pcfg_bt counts the programs.
  done = os.path.join(os.path.dirname(npz), bundle.OUTPUTS_FILE)
  with open(done, encoding="utf-8") as f:
    record = json.load(f)
  record["parts"]["programs"]["num_examples"] = len(decoded) - 1
  with open(done, "w", encoding="utf-8") as f:
    json.dump(record, f)
  with pytest.raises(InputError, match=re.escape(npz) + r": \d+ decoded "
                     r"programs for the \d+ programs"):
    cache.run_stage(backtranslate, backtranslate.path(workdir))
  assert not os.path.exists(os.path.join(backtranslate.path(workdir),
                                         "candidates.tsv"))


def test_write_candidates_takes_an_utterance_per_program(tmp_path):
  """The utterances are the programs' own, one each: a count that differs
  is a programming error, not candidates dropped."""
  with pytest.raises(ValueError):
    pcfg_bt._write_candidates(  # pylint: disable=protected-access
        str(tmp_path), ["a", "b", "c"], ["x", "y"], [False] * 3, 1)
  assert not os.path.exists(tmp_path / "candidates.tsv")


def test_programs_cut_to_the_reverse_input_are_left_out(tmp_path):
  """A program longer than the reverse model reads gets its prefix's
  utterance: the pair would be wrong, so it is not a candidate."""
  import seqio  # pylint: disable=g-import-not-at-top
  from csl_jax.data import tsv  # pylint: disable=g-import-not-at-top
  programs = ["ab", "abc", "a"]
  # Bytes and EOS: 3, 4, 2 ids against an input of 3.
  cut, unknown = pcfg_bt._program_checks(  # pylint: disable=protected-access
      seqio.ByteVocabulary(), programs, 3)
  assert cut == [False, True, False]
  summary = pcfg_bt._write_candidates(  # pylint: disable=protected-access
      str(tmp_path), programs, ["x y", "z", " "], cut, 1)
  assert [tuple(r) for r in tsv.read_tsv(summary["candidates"])] == [
      ("x y", "ab")]
  assert (summary["num_candidates"], summary["num_empty_utterances"],
          summary["num_programs_cut"]) == (1, 1, 1)
  # A word vocabulary's unknown token: counted (bytes know every text).
  assert unknown == 0

  class Words:
    unk_id = 2

    def encode(self, text):
      return [3 if w in ("a", "b") else self.unk_id for w in text.split()]

  assert pcfg_bt._program_checks(  # pylint: disable=protected-access
      Words(), ["a b", "a m5", "m7"], 10)[1] == 2


def test_outputs_the_grammar_does_not_parse_are_reported(tmp_path, caplog):
  """P_train counts only the outputs the grammar parses; the others are
  logged and get a report row, not dropped unseen."""
  (tmp_path / "g.cfg").write_text(GRAMMAR, encoding="utf-8")
  train = tmp_path / "train.tsv"
  train.write_text("a\twalk\nb\tfly\nc\twalk jump walk\nd\tjump\n",
                   encoding="utf-8")
  config = PCFGBTConfig(grammar=str(tmp_path / "g.cfg"), distribution="train",
                        max_consecutive_duplicates=200)
  with caplog.at_level("WARNING"):
    p = pcfg_bt.sample_programs(str(tmp_path / "p"), str(tmp_path / "g.cfg"),
                                str(train), None, config)
  assert (p["estimate"]["num_unparsed"], p["estimate"]["num_outputs"]) == (2, 4)
  assert "2 of 4 outputs of" in caplog.text and "'fly'" in caplog.text
  b = {"num_candidates": 0, "num_empty_utterances": 0, "num_programs_cut": 0,
       "reverse_model": {"steps": 1, "first_loss": 1.0, "final_loss": 1.0},
       "preview": ["walk twice\tWALK WALK"]}
  rows = PCFGBT(config).report_rows({"programs": p, "backtranslate": b})
  by_label = dict(rows)
  assert by_label["train outputs the grammar does not parse (not counted)"] \
      == "2 of 4, e.g. fly"
  # In words, and a preview without a tab (it would split the table).
  words = {"num": "the number asked", "duplicates": "a run of duplicates"}
  assert by_label["PCFG sampling stopped by / rejected over depth"] == \
      f"{words[p['sampling']['stopped_by']]} / {p['sampling']['rejected']:,}"
  assert ("Backtranslation preview", "walk twice ▷ WALK WALK") in rows


def _t5x_infer_line(program, prediction):
  """A line as T5X's infer.write_inferences_to_file writes it (mode
  'predict', pretokenized features only)."""
  import json  # pylint: disable=g-import-not-at-top
  return json.dumps({"inputs": {"inputs_pretokenized": program,
                                "targets_pretokenized": ""},
                     "prediction": prediction}) + "\n"


def test_t5x_reverse_model_waits_for_its_predictions_then_reads_them(
    run, tmp_path, capsys, clear_gin):
  """reverse_model 't5x': `augment` samples the programs and stops (exit 3)
  saying what T5X must run; T5X sees them as a task; its predictions, once
  there, are the candidates."""
  # pylint: disable=g-import-not-at-top
  import seqio
  import json
  from csl_jax.cli import main as cli
  from csl_jax.data import tsv
  # pylint: enable=g-import-not-at-top
  del clear_gin
  src, _ = run
  out = tmp_path / "toy"
  argv = ["augment", "--dataset", "tsv", "--data_dir", str(src / "data"),
          "--method", "pcfg_bt_uniform", "--out", str(out),
          f"--gin.pcfg_bt.PCFGBTConfig.grammar='{src / 'actions.cfg'}'",
          "--gin.pcfg_bt.PCFGBTConfig.reverse_model='t5x'",
          "--gin.pcfg_bt.PCFGBTConfig.max_consecutive_duplicates=2000"]
  assert cli.main(argv) == 3
  said = capsys.readouterr().err
  infer_dir = out / "pcfg_bt_uniform" / "t5x_infer"
  for text in ("12 programs wait for a T5X reverse model", "toy_reversed",
               "--gin_file=gin/t5x/<dataset>_reversed.gin (write one",
               "REVERSE_DIR/checkpoint_1009900",
               "--gin.MIXTURE_OR_TASK_NAME=\\\"toy_pcfg_bt_uniform_programs",
               f"--gin.INFER_OUTPUT_DIR=\\\"{infer_dir}\\\""):
    assert text in said
  assert not (out / "pcfg_bt_uniform" / "synthetic.tsv").exists()
  with open(out / "pcfg_bt_uniform" / "programs" / "programs.txt",
            encoding="utf-8") as f:
    programs = f.read().splitlines()
  # The task T5X decodes: every program as an input, the targets EOS alone.
  names = tasks.register_run(str(out))
  try:
    task = names.programs["pcfg_bt_uniform"]
    assert task == "toy_pcfg_bt_uniform_programs"
    examples = list(seqio.get_mixture_or_task(task).get_dataset(
        {"inputs": 32, "targets": 4}, split="programs",
        shuffle=False).as_numpy_iterator())
  finally:
    tasks.unregister_dataset(names.original)
  assert task not in seqio.TaskRegistry.names()
  assert [e["inputs_pretokenized"].decode() for e in examples] == programs
  assert all(list(e["targets"]) == [1] for e in examples)  # EOS
  # Its predictions (in another order, beside T5X's .COMPLETED marker).
  infer_dir.mkdir()
  shard = infer_dir / f"{task}-predict.jsonl-00000-of-00001"
  shard.write_text("".join(_t5x_infer_line(p, "do " + p)
                           for p in reversed(programs)), encoding="utf-8")
  (infer_dir / (shard.name + ".COMPLETED")).write_text("")
  assert cli.main(argv) == 0
  assert (f"csl-jax augment: done; the report is {out / 'report.html'}"
          in capsys.readouterr().out)
  # The candidates in the programs' order; the training file in a random
  # one (the pipeline's `_publish_shuffled`).
  assert [tuple(r) for r in tsv.read_tsv(
      str(out / "pcfg_bt_uniform" / "candidates.tsv"))] == [
          ("do " + p, p) for p in programs]
  assert sorted(tuple(r) for r in tsv.read_tsv(
      str(out / "pcfg_bt_uniform" / "synthetic.tsv"))) == sorted(
          ("do " + p, p) for p in programs)
  with open(out / "pcfg_bt_uniform" / "summary.json", encoding="utf-8") as f:
    summary = json.load(f)
  assert summary["stages"]["programs"]["cached"]
  assert ["Reverse model", f"T5X (t5x.infer's {shard.name})"] in summary[
      "report_rows"]
  # Another infer output (a changed prediction) is read again.
  shard.write_text("".join(_t5x_infer_line(p, "say " + p) for p in programs),
                   encoding="utf-8")
  assert cli.main(argv) == 0
  assert tsv.read_tsv(str(out / "pcfg_bt_uniform" / "candidates.tsv"))[0][
      0] == "say " + programs[0]
  assert {r[0] for r in tsv.read_tsv(
      str(out / "pcfg_bt_uniform" / "synthetic.tsv"))} == {
          "say " + p for p in programs}


def test_t5x_predictions_that_do_not_fit_are_clear_errors(tmp_path):
  from csl_jax.methods.pcfg_bt import t5x_infer  # pylint: disable=g-import-not-at-top
  # A built-in dataset's run names its reverse config (the data stage's
  # summary says which dataset).
  (tmp_path / "summary.json").write_text('{"dataset": "scan"}')
  assert pcfg_bt._reverse_gin(str(tmp_path)) == "gin/t5x/scan_reversed.gin"  # pylint: disable=protected-access
  good = tmp_path / "p-predict.jsonl-00000-of-00001"
  good.write_text(_t5x_infer_line("walk", "do walk") +
                  _t5x_infer_line("jump", "do jump"), encoding="utf-8")
  assert t5x_infer.prediction_files(str(tmp_path)) == [str(good)]
  assert t5x_infer.prediction_files(str(tmp_path / "none")) == []
  predictions = t5x_infer.read_predictions([str(good)])
  assert t5x_infer.utterances_for(["jump", "walk"], predictions, "D") == [
      "do jump", "do walk"]
  with pytest.raises(InputError, match=r"^D: 1 of 3 programs have no "
                     r"prediction \(first: 'run'\)"):
    t5x_infer.utterances_for(["jump", "walk", "run"], predictions, "D")
  with pytest.raises(InputError, match=r"^D: 1 predictions are for programs "
                     r"not in this run's programs.txt \(first: 'walk'\)"):
    t5x_infer.utterances_for(["jump"], predictions, "D")
  bad = tmp_path / "bad.jsonl"
  for text, message in (
      ('{"prediction": "x"}\n', "not a t5x.infer prediction"),
      ("not json\n", "not a t5x.infer prediction"),
      ('{"inputs": {"inputs_pretokenized": 3}, "prediction": "x"}\n',
       "inputs_pretokenized and prediction must be strings"),
      (_t5x_infer_line("walk", "go"), "a second, different prediction for "
       f"'walk' \\(the first at {re.escape(str(good))}:1\\)")):
    bad.write_text(_t5x_infer_line("run", "do run") + text, encoding="utf-8")
    with pytest.raises(InputError, match=f"^{re.escape(str(bad))}:2: "
                       f"{message}"):
      t5x_infer.read_predictions([str(good), str(bad)])
  with pytest.raises(InputError, match="reverse_model 'moses': one of flax, "
                     "t5x"):
    PCFGBTConfig(grammar="x.cfg", reverse_model="moses")


def test_bench_reverse_budget_scores_commands_by_their_actions(
    load_script, tmp_path):
  """The reverse-model probe's shares, counted by hand: of four decoded
  commands, three are SCAN commands, two of those evaluate to their
  program, and one is written with the held-out `jump twice`."""
  bench = load_script("bench_reverse_budget", "benchmarks")
  rows = [("I_JUMP I_JUMP", "jump twice", "jump twice"),        # right
          ("I_JUMP I_JUMP", "jump twice", "jump and jump"),     # right
          ("I_TURN_LEFT I_WALK", "walk left", "walk right"),    # wrong
          ("I_JUMP", "jump", "jump jump")]                      # no command
  path = tmp_path / "predictions.tsv"
  path.write_text("".join("\t".join(r) + "\n" for r in rows),
                  encoding="utf-8")
  assert bench.correct(str(path)) == (0.75, 0.5, 0.0)
  assert bench.correct(str(path), r"jump twice") == (0.75, 0.5, 0.25)


def test_bench_reverse_budget_holds_out_a_construction(load_script,
                                                       tmp_path):
  """--hold_out: training keeps SCAN length's pairs whose command does not
  match; the test holds only matching ones, as (program, command)."""
  bench = load_script("bench_reverse_budget", "benchmarks")
  pattern = r"(walk|run|jump|look) around (left|right) twice"
  data = bench.make_data(str(tmp_path), 16, 50, pattern)
  def rows(part):
    with open(os.path.join(data, f"{part}.tsv"), encoding="utf-8") as f:
      return [line.rstrip("\n").split("\t") for line in f]
  train, test = rows("train"), rows("test")
  assert len(test) == 50
  assert all(re.search(pattern, command) for _, command in test)
  assert not any(re.search(pattern, command) for _, command in train)
  assert any(c.startswith("turn around left twice") for _, c in train)
  assert len(train) + 2120 == 16990  # counted with the same regex


def test_bench_scan_bt_correct_counts_new_programs_apart(load_script):
  """Five backtranslated pairs, counted by hand: three right (one of them a
  program new to training), one wrong, one not a SCAN command (new)."""
  bench = load_script("bench_scan_bt_correct", "benchmarks")
  known = {"I_JUMP I_JUMP", "I_TURN_LEFT I_WALK"}
  pairs = [("jump twice", "I_JUMP I_JUMP"),                   # right, known
           ("walk left", "I_TURN_LEFT I_WALK"),               # right, known
           ("walk right", "I_TURN_LEFT I_WALK"),              # wrong, known
           ("jump thrice", "I_JUMP I_JUMP I_JUMP"),           # right, new
           ("jump jump", "I_JUMP I_JUMP I_JUMP I_JUMP")]      # no command, new
  assert bench.score(pairs, known) == {"n": 5, "right": 3, "new": 2,
                                       "new_right": 1,
                                       "new_by_length": {3: [1, 1],
                                                         4: [1, 0]}}


def test_bench_scan_bt_correct_splits_new_programs_by_a_pattern(load_script):
  """New programs whose every gold command says `around ... thrice` apart
  from the rest, counted by hand; SCAN's grammar gives the gold commands."""
  bench = load_script("bench_scan_bt_correct", "benchmarks")
  golds = bench.gold_commands()
  around3 = " ".join(["I_TURN_LEFT", "I_WALK"] * 12 + ["I_JUMP"])
  assert sorted(golds[around3]) == ["jump after walk around left thrice",
                                    "walk around left thrice and jump"]
  both = "I_TURN_LEFT I_WALK I_TURN_LEFT I_WALK"       # walk left twice, ...
  assert len(golds[both]) > 1 and not all(
      re.search("around", g) for g in golds[both])
  pairs = [("jump after walk around left thrice", around3),  # all: right
           ("walk around left twice and jump thrice", around3),   # wrong
           ("walk left twice", both),                     # other: right
           ("jump twice", "I_JUMP I_JUMP")]               # known: left out
  split = bench.score_pattern(pairs, {"I_JUMP I_JUMP"}, golds,
                              re.compile("around (left|right) thrice"))
  assert split == {"all": [2, 1, 1], "other": [1, 1, 0]}


def test_perplexity_rows_compare_over_one_set_of_outputs():
  """P_train's figure was over the outputs it scores and the others' over
  all theirs: rows over different sets. By hand: S -> V | V V, V -> walk |
  jump | run; training outputs walk, jump, walk jump; test walk, run.
  Uniform: p(walk) = p(run) = 1/2 * 1/3 = 1/6. P_train: S -> V 2/3,
  V -> walk 1/2, run 0: p(walk) = 1/3, p(run) = 0."""
  # pylint: disable=g-import-not-at-top
  from csl_jax.methods.pcfg_bt.method import _perplexities
  from csl_jax.pcfg import pcfg as pcfg_lib
  from csl_jax.qcfg.output_cfg import parse_output_cfg
  # pylint: enable=g-import-not-at-top
  cfg = parse_output_cfg("S -> V | V V\nV -> walk | jump | run\n")
  train, test = ["walk", "jump", "walk jump"], ["walk", "run"]
  uniform = _perplexities(pcfg_lib.uniform(cfg), cfg, test, train)
  assert uniform["value"] == uniform["scored"]["value"] == pytest.approx(6)
  assert uniform["common"] == {"value": pytest.approx(6), "outputs": 1}
  trained = _perplexities(pcfg_lib.estimate(cfg, train)[0], cfg, test,
                          train)
  assert (trained["value"], trained["zero_probability"]) == (None, 1)
  assert trained["scored"] == trained["common"] == {
      "value": pytest.approx(3), "outputs": 1}
  # Training outputs the grammar does not parse: no P_train to compare
  # over, said, while P_uniform's own figures stand.
  alone = _perplexities(pcfg_lib.uniform(cfg), cfg, test, ["fly", "swim"],
                        "G on T")
  assert alone["common"] == {"value": None, "outputs": 0}
  assert alone["value"] == pytest.approx(6)


def test_y_and_k_settings_of_the_grids():
  """Y&K concatenate the synthetic pairs with the original ones (§4: COGS,
  SCAN), decode with beam 4 (App. B.2), and sample GeoQuery's uniform PCFG
  in their XNonterm | XTerm factorization."""
  # pylint: disable=g-import-not-at-top
  import gin
  from csl_jax import assets
  from csl_jax.cli import experiment
  # pylint: enable=g-import-not-at-top
  assert base.get("pcfg_bt_uniform").mixing == "union"
  experiment.register_configurables()
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  for name in ("scan_pcfg_bt", "cogs_pcfg_bt"):
    gin.clear_config()
    try:
      gin.add_config_file_search_path(root)
      gin.parse_config_files_and_bindings(
          [f"gin/experiments/{name}.gin"], [], finalize_config=False)
      beam = gin.query_parameter("experiment.beam_size")
    finally:
      gin.clear_config()
    assert beam == 4, name
  gin.clear_config()
  try:
    gin.parse_config_file(assets.resolve("gin/pcfg_bt/geoquery.gin"))
    config = PCFGBTConfig()
  finally:
    gin.clear_config()
  assert config.uniform_factored and config.distribution == "uniform"
