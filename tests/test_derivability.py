"""Rule-level derivability with NT leaves and per-query rule masks."""

import threading

import hypothesis
from hypothesis import strategies as st
import numpy as np

from csl_jax.cky import forest
from csl_jax.cky import qcfg_reference as ref
from csl_jax.induction.derivability import RuleChecker, as_pair, leaf
from csl_jax.induction.unify import compose
from csl_jax.qcfg.rules import Rule, parse_rule, parse_rules
from csl_jax.testing.strategies import rules_strategy


def r(text):
  return parse_rule(text)


def checker_for(texts, max_nts=2, enable=True):
  rules = [r(t) for t in texts]
  checker = RuleChecker(rules, max_nts)
  if enable:
    checker.enable(rules)
  return checker


def derivable(checker, target, include=-1, exclude=-1):
  return bool(checker.rules_derivable([r(target)], [include], [exclude])[0])


def test_as_pair_uses_leaf_tokens():
  x, y = as_pair(r("NT_1 after NT_2 ### NT_2 NT_1 NT_2"))
  assert x == [leaf(1), "after", leaf(2)]
  assert y == [leaf(2), leaf(1), leaf(2)]
  assert leaf(1) != "NT_1"


def test_rule_is_not_derivable_without_itself():
  checker = checker_for(["NT_1 twice ### NT_1 NT_1"])
  assert derivable(checker, "NT_1 twice ### NT_1 NT_1")
  assert not derivable(checker, "NT_1 twice ### NT_1 NT_1", exclude=0)


def test_lexical_instance_of_repetition():
  checker = checker_for(["NT_1 twice ### NT_1 NT_1", "jump ### JUMP"])
  assert derivable(checker, "jump twice ### JUMP JUMP")
  assert not derivable(checker, "jump twice ### JUMP")
  assert not derivable(checker, "jump twice ### JUMP JUMP JUMP")
  assert not derivable(checker, "jump twice ### JUMP JUMP", exclude=0)
  assert not derivable(checker, "jump twice ### JUMP JUMP", exclude=1)
  # The NT stays abstract: NT_1 twice is derivable, a partial instance
  # (NT_1 twice ### NT_1 JUMP) is not.
  assert derivable(checker, "NT_1 twice ### NT_1 NT_1")
  assert not derivable(checker, "NT_1 twice ### NT_1 JUMP")


def test_two_nt_rule_from_a_composition():
  checker = checker_for(["NT_1 and NT_2 ### NT_1 NT_2",
                         "NT_1 twice ### NT_1 NT_1",
                         "NT_1 after NT_2 ### NT_2 NT_1"])
  assert derivable(checker, "NT_1 and NT_2 twice ### NT_1 NT_2 NT_2")
  assert derivable(checker, "NT_1 twice and NT_2 ### NT_1 NT_1 NT_2")
  # (NT_1 and NT_2) twice, the other bracketing.
  assert derivable(checker, "NT_1 and NT_2 twice ### NT_1 NT_2 NT_1 NT_2")
  assert derivable(checker,
                   "NT_1 after NT_2 twice ### NT_2 NT_2 NT_1")
  # NTs must keep their links: swapping them is not derivable.
  assert not derivable(checker, "NT_1 and NT_2 twice ### NT_2 NT_2 NT_1")
  assert not derivable(checker, "NT_1 and NT_2 ### NT_2 NT_1")
  # Without the repetition rule, neither is derivable.
  assert not derivable(checker, "NT_1 and NT_2 twice ### NT_1 NT_2 NT_2",
                       exclude=1)
  # More NTs than the checker's leaves: no leaf rule for NT_3.
  assert not derivable(checker,
                       "NT_1 and NT_2 and NT_3 ### NT_1 NT_2 NT_3")
  wide = checker_for(["NT_1 and NT_2 ### NT_1 NT_2"], max_nts=3)
  assert derivable(wide, "NT_1 and NT_2 and NT_3 ### NT_1 NT_2 NT_3")


def test_unary_source_rules():
  checker = checker_for(["NT_1 ### a NT_1", "x ### X"])
  assert derivable(checker, "x ### a X")
  assert derivable(checker, "x ### a a X")
  assert derivable(checker, "NT_1 ### a a NT_1")
  assert not derivable(checker, "x ### X a")


def test_include_and_exclude_masks():
  texts = ["NT_1 twice ### NT_1 NT_1", "jump ### JUMP", "walk ### WALK"]
  rules = [r(t) for t in texts]
  checker = RuleChecker(rules, 2)
  target = [r("jump twice ### JUMP JUMP")]
  # Nothing enabled but the leaves.
  assert not checker.rules_derivable(target)[0]
  assert checker.rules_derivable([r("walk ### WALK")], [2])[0]
  checker.enable([rules[0]])
  assert not checker.rules_derivable(target)[0]
  assert checker.rules_derivable(target, [1])[0]  # include jump
  checker.enable([rules[1]])
  out = checker.rules_derivable(target * 4, [-1, -1, 2, 1],
                                [-1, 0, -1, 1])
  # include and exclude the same rule: excluded.
  assert out.tolist() == [True, False, True, False]
  # Per-query masks do not change the enabled set.
  assert checker.rules_derivable(target)[0]
  checker.enable([rules[1]], on=False)
  assert not checker.rules_derivable(target)[0]
  assert checker.rules_derivable(target, [1])[0]


def test_large_batches_run_on_threads_with_the_same_answers(monkeypatch):
  texts = ["NT_1 twice ### NT_1 NT_1", "NT_1 and NT_2 ### NT_1 NT_2",
           "jump ### JUMP", "walk ### WALK"]
  rules = [r(t) for t in texts]
  checker = RuleChecker(rules, 2)
  checker.enable(rules)
  targets = [r(t) for t in ["jump twice ### JUMP JUMP",
                            "jump and walk ### JUMP WALK",
                            "walk twice and jump ### WALK WALK JUMP",
                            "jump twice ### JUMP"]]
  rng = np.random.RandomState(0)
  queries = [(targets[rng.randint(4)], rng.randint(-1, 4), rng.randint(-1, 4))
             for _ in range(300)]
  args = ([t for t, _, _ in queries], [i for _, i, _ in queries],
          [e for _, _, e in queries])
  threads, thread = [], threading.Thread
  monkeypatch.setattr(forest.threading, "Thread", lambda target: (
      threads.append(target) or thread(target=target)))
  monkeypatch.setattr(forest.numba, "get_num_threads", lambda: 4)
  batched = checker.rules_derivable(*args)
  assert len(threads) == 4  # 300 pairs: 4 threads, many slices each
  one_by_one = [checker.rules_derivable([t], [i], [e])[0]
                for t, i, e in queries]
  assert batched.tolist() == one_by_one
  assert 0 < batched.sum() < len(queries)


def test_example_pairs_and_empty_batch():
  checker = checker_for(["NT_1 twice ### NT_1 NT_1", "jump ### JUMP"])
  pairs = [("jump twice twice".split(), "JUMP JUMP JUMP JUMP".split()),
           ("jump twice".split(), "JUMP".split()),
           ("run".split(), "RUN".split())]
  assert checker.derivable(pairs).tolist() == [True, False, False]
  assert checker.derivable([]).shape == (0,)


# --- against the pure-Python CKY twin ----------------------------------------

LEXICAL = [Rule(("a",), ("A",)), Rule(("b",), ("B",)), Rule(("a",), ("B",))]


@st.composite
def checker_cases(draw):
  rules = draw(st.lists(rules_strategy(), min_size=1, max_size=5))
  rules += draw(st.lists(st.sampled_from(LEXICAL), max_size=3))
  rules = list(dict.fromkeys(rules))
  enabled = draw(st.lists(st.booleans(), min_size=len(rules),
                          max_size=len(rules)))
  queries = []
  for _ in range(draw(st.integers(1, 4))):
    if draw(st.booleans()):
      # A composition of two grammar rules: often derivable.
      parent = draw(st.sampled_from([q for q in rules if q.num_nts] or
                                    rules))
      child = draw(st.sampled_from(rules))
      target = parent
      if parent.num_nts:
        target = compose(parent, draw(st.integers(1, parent.num_nts)),
                         child)
      hypothesis.assume(target.num_nts <= 3)
    else:
      target = draw(rules_strategy(max_nts=3))
    include = draw(st.integers(-1, len(rules) - 1))
    exclude = draw(st.integers(-1, len(rules) - 1))
    queries.append((target, include, exclude))
  return rules, enabled, queries


@hypothesis.settings(max_examples=120, deadline=None)
@hypothesis.given(checker_cases())
def test_rule_checker_matches_reference(case):
  rules, enabled, queries = case
  max_nts = 2
  checker = RuleChecker(rules, max_nts)
  checker.enable([q for q, on in zip(rules, enabled) if on])
  targets = [t for t, _, _ in queries]
  got = checker.rules_derivable(targets, [i for _, i, _ in queries],
                                [e for _, _, e in queries])
  leaves = [Rule((leaf(k),), (leaf(k),)) for k in range(1, max_nts + 1)]
  for (target, include, exclude), value in zip(queries, got):
    live = [q for i, q in enumerate(rules)
            if (enabled[i] or i == include) and i != exclude]
    x, y = as_pair(target)
    assert bool(value) == ref.derivable(live + leaves, x, y), (
        target, include, exclude)


def test_shared_encoder_answers_as_a_checker_of_its_own():
  """Token ids shared across checkers (a search's Encoder): a checker built
  before a later one grew the vocabulary still reads the new tokens as
  unknown, and every answer equals an unshared checker's."""
  from csl_jax.induction.derivability import Encoder  # pylint: disable=g-import-not-at-top
  first = parse_rules("walk ### W\nNT_1 twice ### NT_1 NT_1\n")
  later = parse_rules("run ### R\nNT_1 and NT_2 ### NT_1 NT_2\n"
                      "walk ### W\n")
  queries = parse_rules("walk twice ### W W\nrun twice ### R R\n"
                        "walk and run ### W R\nNT_1 twice twice ### "
                        "NT_1 NT_1 NT_1 NT_1\nrun ### W\n")
  encoder = Encoder()
  shared_first = RuleChecker(first, 2, encoder)
  shared_later = RuleChecker(later, 2, encoder)  # adds run, and, R
  for shared, rules in ((shared_first, first), (shared_later, later)):
    own = RuleChecker(rules, 2)
    shared.enable(rules)
    own.enable(rules)
    assert shared.rules_derivable(queries).tolist() == \
        own.rules_derivable(queries).tolist()
  assert shared_first.rules_derivable(queries).tolist() == [
      True, False, False, True, False]
  assert shared_later.rules_derivable(queries).tolist() == [
      False, False, True, False, False]


# --- many extra rules in one chart (`rules_derivable_each`) -------------------

def test_each_extra_rule_by_hand():
  """`jump twice and walk ### JUMP JUMP WALK` without its own rule: the
  base grammar has `jump`, `walk` and `twice`; of the extras only the
  `and` rule (alone) completes a derivation, `after` has the wrong order,
  the lexical `run` rule is no use, and `jump twice` as a whole rule also
  needs `and`."""
  base = ["jump ### JUMP", "walk ### WALK", "NT_1 twice ### NT_1 NT_1",
          "jump twice and walk ### JUMP JUMP WALK"]
  extras = ["NT_1 and NT_2 ### NT_1 NT_2", "NT_1 after NT_2 ### NT_2 NT_1",
            "run ### RUN", "jump twice ### JUMP JUMP"]
  rules = [r(t) for t in base + extras]
  checker = RuleChecker(rules, 2)
  checker.enable(rules[:4])
  target = rules[3]
  got = checker.rules_derivable_each([target, target], [[4, 5, 6, 7], [3]],
                                     exclude=[3, -1])
  assert got[0].tolist() == [True, False, False, False]
  assert got[1].tolist() == [True]  # itself, not excluded
  # Excluding an extra wins, as in `rules_derivable`.
  other = r("jump and walk ### JUMP WALK")
  got = checker.rules_derivable_each([other, other], [[4], [4]],
                                     exclude=[-1, 4])
  assert [g.tolist() for g in got] == [[True], [False]]


def test_each_extra_rule_over_64_and_rows_do_not_leak():
  """More than 64 extras go in several charts; a row's extras and exclusion
  must not stay in the rule values of the next row (numba once typed the
  restored value as a float)."""
  rules = [r("jump ### JUMP"), r("NT_1 twice ### NT_1 NT_1")]
  fillers = [r(f"w{k} ### W{k}") for k in range(150)]
  everything = rules + fillers
  checker = RuleChecker(everything, 2)
  checker.enable([rules[0]])
  target = r("jump twice ### JUMP JUMP")
  extras = list(range(2, 152))
  extras.insert(100, 1)  # the one that helps, in the second chunk
  got = checker.rules_derivable_each(
      [target, target, r("jump ### JUMP"), target],
      [extras, extras, [1, 2], [1]], exclude=[-1, 0, 0, -1])
  assert np.flatnonzero(got[0]).tolist() == [100]
  assert not got[1].any()  # jump excluded: twice cannot help
  assert got[2].tolist() == [False, False]
  assert got[3].tolist() == [True]  # jump is back after the exclusions
  # One by one, the same.
  assert [bool(checker.rules_derivable([target], [e])[0]) for e in extras] \
      == got[0].tolist()


@hypothesis.settings(max_examples=120, deadline=None)
@hypothesis.given(checker_cases(), st.data())
def test_each_extra_rule_matches_reference(case, data):
  rules, enabled, queries = case
  max_nts = 2
  checker = RuleChecker(rules, max_nts)
  checker.enable([q for q, on in zip(rules, enabled) if on])
  targets = [t for t, _, _ in queries]
  extras = [data.draw(st.lists(st.integers(0, len(rules) - 1), max_size=6))
            for _ in queries]
  excludes = [e for _, _, e in queries]
  got = checker.rules_derivable_each(targets, extras, excludes)
  leaves = [Rule((leaf(k),), (leaf(k),)) for k in range(1, max_nts + 1)]
  x_y = [as_pair(t) for t in targets]
  for b, (more, exclude) in enumerate(zip(extras, excludes)):
    for k, extra in enumerate(more):
      live = [q for i, q in enumerate(rules)
              if (enabled[i] or i == extra) and i != exclude]
      assert bool(got[b][k]) == ref.derivable(live + leaves, *x_y[b]), (
          targets[b], extra, exclude)


@hypothesis.settings(max_examples=80, deadline=None)
@hypothesis.given(checker_cases())
def test_single_rule_fast_path_matches_batch(case):
  from csl_jax.induction.derivability import Encoder  # pylint: disable=g-import-not-at-top
  rules, enabled, queries = case
  checker = RuleChecker(rules, 2, Encoder())
  checker.enable([q for q, on in zip(rules, enabled) if on])
  for target, _, exclude in queries:
    for _ in range(2):  # the second time from the packed cache
      assert checker.rule_derivable(target, exclude) == bool(
          checker.rules_derivable([target], exclude=[exclude])[0])
