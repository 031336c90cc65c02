"""SCAN* (Zhou et al. 2023 App. A.2): grammar, precedence, splits."""

import random

import pytest

from csl_jax.data import registry
from csl_jax.data import scan_star
from csl_jax.data import tsv
from csl_jax.errors import InputError

VERBS = scan_star.primitives()


def _tree(tokens):
  """A binary tree with `and` below `after` in precedence, built by
  precedence climbing: the independent interpreter the generator is
  checked against."""
  def climb(pos, min_prec):
    left, pos = tokens_clause(pos)
    while pos < len(tokens) and _PREC[tokens[pos]] >= min_prec:
      op = tokens[pos]
      right, pos = climb(pos + 1, _PREC[op] + 1)
      left = (op, left, right)
    return left, pos

  def tokens_clause(pos):
    end = pos
    while end < len(tokens) and tokens[end] not in _PREC:
      end += 1
    return tokens[pos:end], end

  tree, _ = climb(0, 0)
  return tree


_PREC = {"and": 1, "after": 2}


def _meaning(tree):
  if isinstance(tree, list):  # a clause
    times = {"twice": 2, "thrice": 3}.get(tree[-1], 1)
    v = tree[:-1] if times > 1 else tree
    act = [f"I_{v[0].upper()}"]
    turn = [f"I_TURN_{v[-1].upper()}"]
    if len(v) == 1:
      one = act
    elif len(v) == 2:
      one = turn + act
    elif v[1] == "opposite":
      one = turn + turn + act
    else:
      one = (turn + act) * 4
    return one * times
  op, left, right = tree
  return (_meaning(left) + _meaning(right) if op == "and"
          else _meaning(right) + _meaning(left))


@pytest.mark.parametrize("command, actions", [
    ("walk", "I_WALK"),
    ("p7 opposite left twice", "I_TURN_LEFT I_TURN_LEFT I_P7 " * 2),
    ("jump around right", "I_TURN_RIGHT I_JUMP " * 4),
    # `after` binds tighter: walk and (run after jump).
    ("walk and run after jump", "I_WALK I_JUMP I_RUN"),
    # (walk after run) and jump.
    ("walk after run and jump", "I_RUN I_WALK I_JUMP"),
    ("walk after run after look", "I_LOOK I_RUN I_WALK"),
    ("walk and run and look after jump left thrice",
     "I_WALK I_RUN " + "I_TURN_LEFT I_JUMP " * 3 + "I_LOOK"),
])
def test_interpret_by_hand(command, actions):
  assert scan_star.interpret(command) == actions.strip()


@pytest.mark.parametrize("command", [
    "turn left", "walk and", "after walk", "walk twice twice", "walk around",
    "walk and and run", "", "p200", "walk left right"])
def test_non_commands_are_input_errors(command):
  with pytest.raises(InputError):
    scan_star.interpret(command)


def test_generated_pairs_agree_with_a_precedence_parser():
  rng = random.Random(0)
  examples = scan_star.generate(rng, 300, 1, 40, VERBS)
  assert len({e.input for e in examples}) == 300
  for e in examples:
    assert e.output == " ".join(_meaning(_tree(e.input.split())))
  conjunctions = [sum(t in scan_star.CONJUNCTIONS for t in e.input.split())
                  for e in examples]
  assert max(conjunctions) >= 5  # any number of conjunctions


def test_two_hundred_primitives_and_no_turn():
  assert len(set(VERBS)) == 200 and VERBS[:4] == scan_star.SCAN_VERBS
  assert "turn" not in VERBS
  assert scan_star.action("p199") == "I_P199"


def test_halving_keeps_the_most_leading_clauses_by_hand():
  def halve(command):
    h = scan_star.halve(tsv.Example(command, scan_star.interpret(command)),
                        VERBS)
    return h and h.input
  # 7 tokens: at most 3 kept; `walk and run twice` would be 4.
  assert halve("walk and run twice after look left") == "walk"
  # 8 tokens: at most 4.
  assert halve("walk and run after look left twice") == "walk and run"
  assert halve("walk and run and look and jump") == "walk and run"
  assert halve("walk around left twice") is None  # no clause fits in 2


def test_length_split_bounds_and_determinism():
  train, test = scan_star.length_split(31, num_train=400, num_test=100)
  assert train and test
  assert all(0 < len(e.input.split()) <= 31 for e in train)
  assert all(31 < len(e.input.split()) <= 62 for e in test)
  assert not {e.input for e in train} & {e.input for e in test}
  assert all(e.output == scan_star.interpret(e.input) for e in train + test)
  again = scan_star.length_split(31, num_train=400, num_test=100)
  assert again == (train, test)
  other = scan_star.length_split(31, num_train=400, num_test=100, seed=1)
  assert other != (train, test)
  top, top_test = scan_star.length_split(250, num_train=400, num_test=100)
  assert len(top) == 400 and len(top_test) == 100
  assert all(250 < len(e.input.split()) <= 500 for e in top_test)
  with pytest.raises(InputError):
    scan_star.length_split(40)


def test_jump_split_difficulty_knobs_keep_one_test_set():
  verbs = set(VERBS)
  train, test = scan_star.jump_split(20, num_train=300, num_test=80,
                                     max_primitives_per_example=2)
  with_jump = [e for e in train if "jump" in e.input.split()]
  assert all(e.input == "jump" for e in with_jump) and len(with_jump) == 30
  assert all(len(e.input.split()) <= 20 for e in train)
  assert all(len(verbs & set(e.input.split())) <= 2 for e in train)
  assert all("jump" in e.input.split() and len(e.input.split()) >= 2
             for e in test)
  _, same_test = scan_star.jump_split(62, num_train=300, num_test=80)
  assert same_test == test


def test_prepare_writes_the_split(tmp_path):
  summary = registry.prepare(str(tmp_path), "scan_star", "jump", None,
                             {"max_len": 12, "num_train": 50,
                              "num_test": 10})
  assert summary["num_train"] == 50 and summary["num_test"] == 10
  rows = tsv.read_tsv(str(tmp_path / "train.tsv"))
  assert all(e.output == scan_star.interpret(e.input) for e in rows)
