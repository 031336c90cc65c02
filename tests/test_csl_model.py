"""CSLModel: the one writer and reader of a model directory, and the object
the parser and the sampler take."""

import os

import numpy as np
import pytest

from csl_jax.errors import InputError
from csl_jax.model import viterbi
from csl_jax.model.csl_model import CSLModel
from csl_jax.sampling import sampler
from csl_jax.testing.models import TOY_RULES, random_model

RULES = TOY_RULES
CFG = "S -> W\nS -> R\nS -> S S\n"


def test_save_load_round_trip(tmp_path):
  model = random_model(RULES, seed=3)
  model.save(str(tmp_path))
  assert sorted(os.listdir(tmp_path)) == ["grammar.qcfg", "model.json",
                                          "params.npz"]
  loaded = CSLModel.load(str(tmp_path))
  assert loaded.rules == model.rules and loaded.num_states == 2
  # float32 on disk: the probabilities agree to float32 precision.
  np.testing.assert_allclose(loaded.log_p, model.log_p, atol=1e-6)
  loaded.save(str(tmp_path / "again"))
  for name in ("params.npz", "grammar.qcfg", "model.json"):
    with open(tmp_path / name, "rb") as a, \
        open(tmp_path / "again" / name, "rb") as b:
      assert a.read() == b.read(), name  # a save of a load is the same bytes


def test_output_cfg_travels_with_the_model(tmp_path):
  cfg = tmp_path / "out.cfg"
  cfg.write_text(CFG)
  model = CSLModel.from_params(RULES, random_model(RULES).params(), 2, 2,
                               str(cfg))
  model.save(str(tmp_path / "m"))
  loaded = CSLModel.load(str(tmp_path / "m"))
  assert loaded.output_cfg is not None
  assert (tmp_path / "m" / "output.cfg").read_text() == CFG


def test_parse_and_sample_take_the_model():
  model = random_model(RULES, seed=1)
  inputs = ["walk twice", "walk and run", "jump"]
  assert model.parse(inputs) == viterbi.parse_batch(
      model.rules, model.grammar, model.log_p, model.ctx_index, inputs)
  assert model.parse(["walk twice"])[0].target == ("W", "W")
  config = sampler.SampleConfig(seed=5, max_depth=3)
  assert model.sample(50, config).pairs == sampler.sample(
      model, 50, config, None).pairs


def test_load_refuses_what_is_not_a_model(tmp_path):
  with pytest.raises(InputError, match="not a fitted model directory"):
    CSLModel.load(str(tmp_path))
  random_model(RULES).save(str(tmp_path))
  (tmp_path / "grammar.qcfg").write_text("walk ### W\n")  # other rules
  with pytest.raises(InputError, match="do not fit the grammar"):
    CSLModel.load(str(tmp_path))
  (tmp_path / "model.json").write_text('{"num_states": 2')  # torn
  with pytest.raises(InputError, match=r"model.json: not valid JSON"):
    CSLModel.load(str(tmp_path))


def test_batch_rule_normalizer_masks_the_batch_rules_only():
  """App. B.2's per-batch normalizer: the rules of the batch's derivations.
  Padding edges carry rule 0 (`walk ### WALK` here), which no derivation
  of these two pairs uses: it was in every batch's mask."""
  from csl_jax.model import train  # pylint: disable=g-import-not-at-top
  from csl_jax.qcfg.rules import parse_rules  # pylint: disable=g-import-not-at-top
  from csl_jax.testing import toy_language  # pylint: disable=g-import-not-at-top
  rules = parse_rules(toy_language.GRAMMAR)
  assert str(rules[0]) == "walk ### WALK"
  pairs = [("jump".split(), "JUMP".split()),
           ("look twice".split(), "LOOK LOOK".split())]
  data = train.Dataset(rules, pairs, 2)
  used = {int(r) for b in data.usable for r in data.forests[int(b)].edge_rule}
  assert set(np.flatnonzero(data.rule_masks[0]).tolist()) == used
  assert 0 not in used
