"""The hand-written SCAN QCFG fixture derives every SCAN pair."""

import os

import numpy as np
import pytest

from csl_jax.cky import forest
from csl_jax.cky.grammar_arrays import encode_qcfg
from csl_jax.data import scan
from csl_jax.qcfg.rules import load_rules

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "scan.qcfg")


@pytest.fixture(scope="module")
def grammar():
  return encode_qcfg(load_rules(FIXTURE))


@pytest.mark.parametrize("split", ["addprim_jump", "length"])
def test_every_pair_of_the_split_is_derivable(grammar, split):
  train, test = scan.make_split(split)
  ok = forest.derivable(grammar, train + test)
  assert ok.all(), [train[i] for i in np.flatnonzero(~ok)[:5]]
  bad = [("walk twice", "I_WALK"), ("jump left", "I_JUMP I_TURN_LEFT"),
         ("run after walk", "I_RUN I_WALK"),
         ("look thrice", "I_LOOK I_LOOK I_LOOK I_LOOK")]
  assert not forest.derivable(grammar, bad).any()


def test_every_command_parses_on_the_source_side(grammar):
  for command in scan.all_commands()[::97]:
    assert forest.parse_source(grammar, command).parses, command
  for bad in ["twice jump", "walk and", "jump opposite", "and"]:
    assert not forest.parse_source(grammar, bad).parses, bad


def test_forest_of_a_known_pair(grammar):
  # "walk left twice": only (walk left) twice; walk left has one derivation.
  f = forest.build_forest(grammar, "walk left twice".split(),
                          "I_TURN_LEFT I_WALK I_TURN_LEFT I_WALK".split())
  assert f.count_derivations() == 1
  assert tuple(f.nodes[f.root]) == (0, 3, 0, 4)
