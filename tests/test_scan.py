"""Tests for csl_jax.data.scan (no network, no shared data)."""

import collections
import os
import shutil
import sys

import pytest

from csl_jax import errors
from csl_jax.data import scan
from csl_jax.data.tsv import Example, write_tsv
from csl_jax.errors import InputError


TL, TR = "I_TURN_LEFT", "I_TURN_RIGHT"
W, L, R, J = "I_WALK", "I_LOOK", "I_RUN", "I_JUMP"


@pytest.fixture(scope="module")
def splits():
  return {name: scan.make_split(name) for name in scan.SPLITS}


def test_number_of_commands():
  commands = scan.all_commands()
  assert len(commands) == 20910
  assert len(set(commands)) == 20910
  assert commands == sorted(commands)
  assert all(scan.is_valid_command(c) for c in commands[::97])


@pytest.mark.parametrize("command, actions", [
    ("walk", [W]),
    ("turn left", [TL]),
    ("turn right twice", [TR, TR]),
    ("jump left", [TL, J]),
    ("run right thrice", [TR, R] * 3),
    ("turn opposite left", [TL, TL]),
    ("look opposite right", [TR, TR, L]),
    ("walk around left", [TL, W] * 4),
    ("turn around right", [TR] * 4),
    ("jump around left twice", [TL, J] * 8),
    ("jump twice after walk left", [TL, W, J, J]),
    ("walk left and jump twice", [TL, W, J, J]),
    ("look and run", [L, R]),
    ("look after run", [R, L]),
    ("turn opposite right thrice and walk around left",
     [TR, TR] * 3 + [TL, W] * 4),
    ("run opposite left after walk right", [TR, W, TL, TL, R]),
])
def test_interpret(command, actions):
  assert scan.interpret(command) == " ".join(actions)
  assert scan.is_valid_command(command)


@pytest.mark.parametrize("command, mentions", [
    ("", "empty"),
    ("fly", "'fly'"),
    ("turn", "turn"),
    ("turn twice", "turn"),
    ("walk opposite", "'opposite'"),
    ("walk left left", "'left'"),
    ("walk up", "'up'"),
    ("walk left twice thrice", "'twice'"),
    ("walk and", "'and'"),
    ("after walk", "'after'"),
    ("walk and run after look", "conjunction"),
    ("walk left around right", "'right'"),
])
def test_invalid_commands_raise(command, mentions):
  with pytest.raises(InputError, match=mentions):
    scan.interpret(command)
  assert not scan.is_valid_command(command)


def test_interpretations_of_all_commands_are_consistent():
  # "x and y" = x y; "x after y" = y x, over a sample of the grammar.
  commands = scan.all_commands()
  simple = [c for c in commands if " and " not in c and " after " not in c]
  assert len(simple) == 102
  for a in simple[::7]:
    for b in simple[::11]:
      ia, ib = scan.interpret(a), scan.interpret(b)
      assert scan.interpret(f"{a} and {b}") == f"{ia} {ib}"
      assert scan.interpret(f"{a} after {b}") == f"{ib} {ia}"


def test_addprim_jump(splits):
  train, test = splits["addprim_jump"]
  counts = collections.Counter(train)
  assert counts[Example("jump", "I_JUMP")] == 1467
  assert len(train) == 14670 and len(test) == 7706
  assert all(e.input == "jump" or "jump" not in e.input.split()
             for e in train)
  assert all("jump" in e.input.split() and e.input != "jump" for e in test)
  # The primitive is exactly a tenth of the training lines.
  assert 10 * counts[Example("jump", "I_JUMP")] == len(train)


def test_addprim_turn_left(splits):
  train, test = splits["addprim_turn_left"]
  counts = collections.Counter(train)
  assert counts[Example("turn left", "I_TURN_LEFT")] == 2189
  assert len(train) == 21890 and len(test) == 1208
  assert all(" turn left " in f" {e.input} " and e.input != "turn left"
             for e in test)
  assert all(e.input == "turn left" or " turn left " not in f" {e.input} "
             for e in train)
  # "turn opposite left" does not contain the primitive "turn left".
  assert Example("turn opposite left", "I_TURN_LEFT I_TURN_LEFT") in counts


def test_length_split(splits):
  train, test = splits["length"]
  assert (len(train), len(test)) == (16990, 3920)
  train_lengths = {len(e.output.split()) for e in train}
  test_lengths = {len(e.output.split()) for e in test}
  assert max(train_lengths) == 22 == scan.LENGTH_MAX_TRAIN_ACTIONS
  assert min(test_lengths) == 24
  assert max(test_lengths) == 48
  assert {e.input for e in train} | {e.input for e in test} == set(
      scan.all_commands())


def test_simple_split_partitions_and_is_seeded(splits):
  train, test = splits["simple"]
  assert (len(train), len(test)) == (16728, 4182)
  train_in, test_in = {e.input for e in train}, {e.input for e in test}
  assert not train_in & test_in
  assert train_in | test_in == set(scan.all_commands())
  assert all(scan.interpret(e.input) == e.output for e in test)
  again = scan.make_split("simple", seed=0)
  assert again == (train, test)
  other_train, other_test = scan.make_split("simple", seed=1)
  assert {e.input for e in other_test} != test_in
  assert len(other_test) == len(test)


def test_rule_splits_deterministic_and_seed_only_orders():
  a = scan.make_split("length", seed=0)
  assert scan.make_split("length", seed=0) == a
  b = scan.make_split("length", seed=3)
  assert sorted(b[0]) == sorted(a[0]) and sorted(b[1]) == sorted(a[1])


def test_unknown_split_lists_valid_names():
  with pytest.raises(InputError, match="addprim_jump.*length"):
    scan.make_split("addprim_walk")
  with pytest.raises(InputError, match="simple"):
    scan.load_tfds("nope")


def test_examples_from_tfds_records():
  records = [
      {"commands": b"jump twice", "actions": b"I_JUMP I_JUMP"},
      {"commands": "walk left", "actions": "I_TURN_LEFT I_WALK"},
  ]
  assert scan.examples_from_tfds_records(iter(records)) == [
      Example("jump twice", "I_JUMP I_JUMP"),
      Example("walk left", "I_TURN_LEFT I_WALK"),
  ]
  with pytest.raises(InputError, match="actions"):
    scan.examples_from_tfds_records([{"commands": b"walk"}])


def test_load_local(tmp_path):
  write_tsv(tmp_path / "train.tsv", [Example("walk", "I_WALK")] * 2)
  write_tsv(tmp_path / "test.tsv", [Example("jump left", "I_TURN_LEFT I_JUMP")])
  train, test = scan.load_local(str(tmp_path))
  assert train == [Example("walk", "I_WALK")] * 2
  assert test == [Example("jump left", "I_TURN_LEFT I_JUMP")]
  with pytest.raises(InputError, match="no such file"):
    scan.load_local(str(tmp_path / "missing"))


def test_reproduce_script_passes_and_fails(tmp_path, splits, capsys,
                                           load_script):
  for name, (train, test) in splits.items():
    os.makedirs(tmp_path / name)
    write_tsv(tmp_path / name / "train.tsv", reversed(train))
    write_tsv(tmp_path / name / "test.tsv", test)
  script = load_script("reproduce_scan_splits")
  assert script.main(["x", str(tmp_path)]) == 0
  assert "ALL SPLITS MATCH" in capsys.readouterr().out
  # One fewer repetition of the primitive is a mismatch.
  train, test = splits["addprim_jump"]
  train = list(train)
  train.remove(Example("jump", "I_JUMP"))
  write_tsv(tmp_path / "addprim_jump" / "train.tsv", train)
  ok, report = script.check_rule_split("addprim_jump",
                                       str(tmp_path / "addprim_jump"))
  assert not ok
  assert "FAIL train" in report[0] and "1 lines only ours" in report[1]
  assert "OK   test" in report[2]
  # A missing split directory is reported, not a traceback, and fails.
  shutil.rmtree(tmp_path / "length")
  assert script.main(["x", str(tmp_path)]) == 1
  out = capsys.readouterr().out
  assert "no such file" in out and "MISMATCH" in out
  # A missing SCAN_DIR is one line, exit 2 (as the scripts' run_script
  # runs main), not five FAIL lines.
  with pytest.raises(SystemExit) as e:
    errors.run_script(script.main, ["x", str(tmp_path / "missing")])
  assert e.value.code == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert err == [f"{os.path.basename(sys.argv[0])}: error: "
                 f"{tmp_path / 'missing'}: no such directory (SCAN_DIR)"]
