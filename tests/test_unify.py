"""Rule composition and UNIFY (Qiu et al., 2022, Figure 4)."""

import itertools

import hypothesis
from hypothesis import strategies as st
import numpy as np
import pytest

from csl_jax.induction import unify_kernel, unify_kernel_reference
from csl_jax.induction.unifier import GrammarUnifier, RuleCodes
from csl_jax.induction.unify import canonical, compose, unify
from csl_jax.qcfg.rules import format_rule, parse_rule, validate_rule
from csl_jax.testing import strategies


def r(text):
  return parse_rule(text)


def rules(*texts):
  return {parse_rule(t) for t in texts}


# --- compose and canonical ---------------------------------------------------


def test_figure_4_example():
  ra = r("NT_1 and NT_2 ### NT_1 NT_2")
  rb = r("jump ### JUMP")
  rc = r("jump and NT_1 ### JUMP NT_1")
  assert compose(ra, 1, rb) == rc
  assert unify(rc, rb) == {ra}
  assert unify(rc, ra) == {rb}


def test_compose_into_second_slot():
  ra = r("NT_1 and NT_2 ### NT_1 NT_2")
  assert compose(ra, 2, r("walk ### WALK")) == r("NT_1 and walk ### NT_1 WALK")


def test_compose_substitutes_every_target_occurrence():
  assert (compose(r("NT_1 twice ### NT_1 NT_1"), 1, r("jump ### JUMP"))
          == r("jump twice ### JUMP JUMP"))
  assert (compose(r("NT_1 twice ### NT_1 NT_1"), 1,
                  r("NT_1 left ### LTURN NT_1"))
          == r("NT_1 left twice ### LTURN NT_1 LTURN NT_1"))


def test_compose_renumbers_in_source_order():
  # A 2-NT child into NT_1 of a 2-NT parent: the child's NTs come first in
  # the source and take NT_1, NT_2; the parent's NT_2 becomes NT_3.
  parent = r("NT_1 NT_2 ### NT_2 NT_1")
  child = r("NT_1 and NT_2 ### NT_2 NT_1")
  assert compose(parent, 1, child) == r(
      "NT_1 and NT_2 NT_3 ### NT_3 NT_2 NT_1")
  # Into NT_2: the parent's NT_1 keeps its number.
  assert compose(parent, 2, child) == r(
      "NT_1 NT_2 and NT_3 ### NT_3 NT_2 NT_1")
  # A child whose target reverses its NTs, into a slot the target repeats.
  parent = r("NT_1 x NT_2 ### NT_2 NT_1 NT_2")
  child = r("a NT_1 NT_2 ### B NT_2 NT_1")
  assert compose(parent, 2, child) == r(
      "NT_1 x a NT_2 NT_3 ### B NT_3 NT_2 NT_1 B NT_3 NT_2")


def test_canonical():
  assert canonical(("NT_7", "x", "NT_3"), ("NT_3", "NT_7", "NT_7")) == r(
      "NT_1 x NT_2 ### NT_2 NT_1 NT_1")
  assert canonical(("a",), ("A",)) == r("a ### A")


# --- unify: hand-made cases --------------------------------------------------


def test_quasi_synchronous_repetition():
  assert unify(r("jump twice ### JUMP JUMP"), r("jump ### JUMP")) == rules(
      "NT_1 twice ### NT_1 NT_1",
      "NT_1 twice ### NT_1 JUMP",
      "NT_1 twice ### JUMP NT_1")


def test_repetition_child_direction():
  assert unify(r("jump twice ### JUMP JUMP"),
               r("NT_1 twice ### NT_1 NT_1")) == rules("jump ### JUMP")
  # The copies of the child's target must be equal.
  assert unify(r("jump twice ### JUMP WALK"),
               r("NT_1 twice ### NT_1 NT_1")) == set()


def test_thrice_all_occurrences_or_one():
  # The parent either abstracts all (non-overlapping) occurrences or one.
  assert unify(r("jump thrice ### JUMP JUMP JUMP"), r("jump ### JUMP")) == (
      rules("NT_1 thrice ### NT_1 NT_1 NT_1",
            "NT_1 thrice ### NT_1 JUMP JUMP",
            "NT_1 thrice ### JUMP NT_1 JUMP",
            "NT_1 thrice ### JUMP JUMP NT_1"))


def test_nt_renumbering_both_directions():
  parent = r("NT_1 NT_2 ### NT_2 NT_1")
  child = r("NT_1 and NT_2 ### NT_2 NT_1")
  rc = compose(parent, 1, child)  # NT_1 and NT_2 NT_3 ### NT_3 NT_2 NT_1
  assert child in unify(rc, parent)
  assert parent in unify(rc, child)
  for r3 in unify(rc, parent) | unify(rc, child):
    assert not validate_rule(r3)


def test_nts_on_both_rules():
  # r1 = (NT_1 after NT_2) with (NT_1 left) in NT_2.
  ra = r("NT_1 after NT_2 ### NT_2 NT_1")
  rb = r("NT_1 left ### LTURN NT_1")
  rc = compose(ra, 2, rb)
  assert rc == r("NT_1 after NT_2 left ### LTURN NT_2 NT_1")
  assert unify(rc, ra) == {rb}
  assert unify(rc, rb) == {ra}


def test_child_with_terminals_around_repeated_slot():
  ra = r("NT_1 around NT_2 ### NT_2 NT_1 NT_2 NT_1")
  rb = r("left ### LTURN")
  rc = compose(ra, 2, rb)
  assert rc == r("NT_1 around left ### LTURN NT_1 LTURN NT_1")
  assert unify(rc, ra) == {rb}
  assert ra in unify(rc, rb)


def test_no_unifier():
  # Unrelated terminals.
  assert unify(r("jump ### JUMP"), r("walk ### WALK")) == set()
  # The source matches, but the target does not contain the child's target.
  assert unify(r("jump twice ### WALK WALK"), r("jump ### JUMP")) == set()
  # Target matches but source does not.
  assert unify(r("walk twice ### JUMP JUMP"), r("jump ### JUMP")) == set()
  # Same rule: r3 would have to be an identity rule.
  assert unify(r("jump ### JUMP"), r("jump ### JUMP")) == set()
  # r2 larger than r1.
  assert unify(r("jump ### JUMP"), r("jump twice ### JUMP JUMP")) == set()
  # Abstracting "NT_1 x" would leave the second NT_1 of the target without
  # a source NT.
  assert unify(r("NT_1 x y ### NT_1 X NT_1"), r("NT_1 x ### NT_1 X")) == set()
  # ... but a rule whose NTs are all inside the abstracted part is fine.
  assert unify(r("NT_1 x y ### NT_1 X Y"), r("NT_1 x ### NT_1 X")) == rules(
      "NT_1 y ### NT_1 Y")
  assert unify(r("NT_1 x ### NT_1 A"), r("x ### A")) == rules(
      "NT_1 NT_2 ### NT_1 NT_2")
  assert unify(r("NT_1 x ### A NT_1"), r("NT_1 ### A NT_1")) == rules(
      "NT_1 x ### NT_1")


def test_result_excludes_r1():
  r1 = r("NT_1 x ### NT_1 X")
  for r2 in [r("x ### X"), r("NT_1 NT_2 ### NT_1 NT_2")]:
    assert r1 not in unify(r1, r2)


def test_unary_source_parent():
  r1 = r("x ### a X")
  r2 = r("x ### X")
  r3 = r("NT_1 ### a NT_1")
  assert compose(r3, 1, r2) == r1
  assert r3 in unify(r1, r2)


def test_unary_source_child_and_rule_as_r2():
  # A unary-source r2 is fine as the parent in the child direction.
  r1 = r("x ### a X")
  assert unify(r1, r("NT_1 ### a NT_1")) == rules("x ### X")


# --- properties --------------------------------------------------------------

SRC = ["a", "b"]
TGT = ["A", "B"]


@st.composite
def valid_rules(draw, max_nts=2, max_src_terminals=2, max_tgt_extra=2):
  num_nts = draw(strategies.integers(0, max_nts))
  # No side without tokens: drawing them only to reject them was half the
  # generation time (NT_1 ### NT_1 is still drawn, and rejected).
  source = draw(strategies.token_lists(tuple(SRC), int(not num_nts),
                                       max(max_src_terminals, 1)))
  for k in range(1, num_nts + 1):
    source.insert(draw(strategies.integers(0, len(source))), f"NT_{k}")
  source = list(canonical(source, ()).source)
  nts = [f"NT_{k}" for k in range(1, num_nts + 1)]
  target = nts + draw(strategies.token_lists(tuple(TGT + nts),
                                             int(not num_nts),
                                             max(max_tgt_extra, 1)))
  target = strategies.permutation(draw, target)
  rule = canonical(source, target)
  hypothesis.assume(not validate_rule(rule))
  return rule


def _non_overlapping_subsets(starts, size):
  for count in range(1, len(starts) + 1):
    for subset in itertools.combinations(starts, count):
      if all(b - a >= size for a, b in zip(subset, subset[1:])):
        yield list(subset)


def _occurrences(segment, tokens):
  n = len(segment)
  return [i for i in range(len(tokens) - n + 1)
          if tuple(tokens[i:i + n]) == tuple(segment)]


def brute_force_unify(r1, r2):
  """All r3 of the definition, by enumeration: (children, parents) where
  each parent comes with the target occurrence sets that realize it."""
  children, parents = set(), {}
  src, tgt = r1.source, r1.target
  fresh = "NT_999"
  for i in range(len(src)):
    for j in range(i + 1, len(src) + 1):
      for a in range(len(tgt)):
        for b in range(a + 1, len(tgt) + 1):
          r3 = canonical(src[i:j], tgt[a:b])
          if (not validate_rule(r3) and r3 != r1 and any(
              compose(r2, k, r3) == r1 for k in range(1, r2.num_nts + 1))):
            children.add(r3)
      size = len(r2.target)
      for a in range(len(tgt) - size + 1):
        starts = _occurrences(tgt[a:a + size], tgt)
        for chosen in _non_overlapping_subsets(starts, size):
          target, t = [], 0
          while t < len(tgt):
            if t in chosen:
              target.append(fresh)
              t += size
            else:
              target.append(tgt[t])
              t += 1
          r3 = canonical(src[:i] + (fresh,) + src[j:], target)
          if (not validate_rule(r3) and r3 != r1 and any(
              compose(r3, k, r2) == r1 for k in range(1, r3.num_nts + 1))):
            parents.setdefault(r3, []).append(chosen)
  return children, parents


def _greedy(starts, size):
  chosen, end = [], -1
  for s in starts:
    if s >= end:
      chosen.append(s)
      end = s + size
  return chosen


def _satisfies_definition(r3, r1, r2):
  return (any(compose(r2, k, r3) == r1 for k in range(1, r2.num_nts + 1))
          or any(compose(r3, k, r2) == r1
                 for k in range(1, r3.num_nts + 1)))


@hypothesis.settings(max_examples=250, deadline=None)
@hypothesis.given(valid_rules(max_nts=2).filter(lambda r: r.num_nts),
                  valid_rules(), st.data(), valid_rules())
def test_unify_is_sound_and_child_complete(ra, rb, data, other):
  k = data.draw(st.integers(1, ra.num_nts), label="k")
  rc = compose(ra, k, rb)
  assert not validate_rule(rc)  # composing valid rules gives a valid rule
  # Soundness, for the composed pair and an unrelated rule.
  for r2 in (ra, rb, other):
    for r3 in unify(rc, r2):
      assert not validate_rule(r3)
      assert r3 != rc
      assert _satisfies_definition(r3, rc, r2)
  # Child direction: complete.
  if rb != rc:
    assert rb in unify(rc, ra)
  # Parent direction: found when ra's source is not a lone NT and the
  # target positions that the substitution produced are one position (NT_k
  # occurs once in ra's target) or the leftmost non-overlapping set of all
  # occurrences of rb's target in rc's: UNIFY abstracts one occurrence or
  # all of them, not other subsets.
  produced, offset = [], 0
  for t in ra.target:
    if t == f"NT_{k}":
      produced.append(offset)
      offset += len(rb.target)
    else:
      offset += 1
  segment = rc.target[produced[0]:produced[0] + len(rb.target)]
  starts = _occurrences(segment, rc.target)
  if ra != rc and not ra.is_unary_source and (
      len(produced) == 1 or produced == _greedy(starts, len(segment))):
    assert ra in unify(rc, rb)


@hypothesis.settings(max_examples=200, deadline=None)
@hypothesis.given(valid_rules(max_nts=1, max_src_terminals=1,
                              max_tgt_extra=1),
                  valid_rules(max_nts=2, max_src_terminals=1,
                              max_tgt_extra=2),
                  st.data(), st.booleans())
def test_unify_matches_brute_force(ra, rb, data, swap):
  """Against enumeration of all r3: nothing else is returned, every child
  is found, and a parent is found if its source is not a lone NT and one
  of its realizations abstracts a single target occurrence or the leftmost
  non-overlapping set of all of them (other subsets of the occurrences, e.g.
  the last two of JUMP JUMP JUMP for a rule with a JUMP of its own, are not
  searched)."""
  if swap:
    ra, rb = rb, ra
  hypothesis.assume(ra.num_nts)
  k = data.draw(st.integers(1, ra.num_nts), label="k")
  rc = compose(ra, k, rb)
  for r2 in (ra, rb):
    got = unify(rc, r2)
    children, parents = brute_force_unify(rc, r2)
    assert got <= children | set(parents)
    assert children <= got
    size = len(r2.target)
    for r3, realizations in parents.items():
      findable = any(
          len(chosen) == 1 or chosen == _greedy(
              _occurrences(rc.target[chosen[0]:chosen[0] + size],
                           rc.target), size)
          for chosen in realizations)
      if findable:
        assert r3 in got, (r3, realizations)


# --- the Numba kernel against unify (its twin) -------------------------------


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(valid_rules(max_nts=3, max_src_terminals=3,
                              max_tgt_extra=3).filter(lambda r: r.num_nts),
                  valid_rules(max_nts=2, max_src_terminals=2,
                              max_tgt_extra=3),
                  st.data(), valid_rules(max_nts=2))
def test_unify_kernel_matches_twin(ra, rb, data, other):
  k = data.draw(st.integers(1, ra.num_nts), label="k")
  rc = compose(ra, k, rb)
  grammar = [rc, ra, rb, other, compose(rc, 1, rb) if rc.num_nts else rc]
  unifier = GrammarUnifier(grammar, RuleCodes())
  for i, r1 in enumerate(grammar):
    union = set()
    for j, r2 in enumerate(grammar):
      if i != j:
        assert unifier.unify(i, [j]) == unify(r1, r2), (r1, r2)
        union |= unify(r1, r2)
    assert unifier.unify(i, range(len(grammar))) == union


# --- the Numba kernel against its independent twin ---------------------------
# `unify_kernel_reference` shares no code with `unify.py`, so a bug ported
# to both (the kernel is a copy of it) is caught here.


def _coded(*texts):
  """Rules as the kernel's int codes (terminals >= 0, NT_k = -k), one
  vocabulary for all."""
  vocab = {}
  code = lambda t: (-int(t[3:]) if t.startswith("NT_")
                    else vocab.setdefault(t, len(vocab)))
  out = []
  for text in texts:
    source, target = text.split(" ### ")
    out.append((tuple(code(t) for t in source.split()),
                tuple(code(t) for t in target.split())))
  return out


def _csr(grammar):
  src = [np.array(s, np.int32) for s, _ in grammar]
  tgt = [np.array(t, np.int32) for _, t in grammar]
  off = lambda sides: np.cumsum([0] + [len(x) for x in sides]).astype(
      np.int64)
  flat = lambda sides: np.concatenate(sides).astype(np.int32)
  return flat(src), off(src), flat(tgt), off(tgt)


def _kernel_unify(grammar, i, partners):
  sf, so, tf, to = unify_kernel.unify_partners(
      *_csr(grammar), i, np.array(partners, np.int64))
  return {(tuple(sf[so[q]:so[q + 1]].tolist()),
           tuple(tf[to[q]:to[q + 1]].tolist()))
          for q in range(len(so) - 1)}


# (r1, r2, every r3 of UNIFY(r1, r2)), worked out by hand.
HAND_UNIFY = [
    # Figure 4: "jump" abstracted out; r2 has no NT, so no child.
    ("jump and NT_1 ### JUMP NT_1", "jump ### JUMP",
     ["NT_1 and NT_2 ### NT_1 NT_2"]),
    ("jump and NT_1 ### JUMP NT_1", "NT_1 and NT_2 ### NT_1 NT_2",
     ["jump ### JUMP"]),
    # One occurrence, or all of them.
    ("jump twice ### JUMP JUMP", "jump ### JUMP",
     ["NT_1 twice ### NT_1 NT_1", "NT_1 twice ### NT_1 JUMP",
      "NT_1 twice ### JUMP NT_1"]),
    # Not the other subsets (e.g. NT_1 NT_1 JUMP).
    ("jump thrice ### JUMP JUMP JUMP", "jump ### JUMP",
     ["NT_1 thrice ### NT_1 NT_1 NT_1", "NT_1 thrice ### NT_1 JUMP JUMP",
      "NT_1 thrice ### JUMP NT_1 JUMP", "NT_1 thrice ### JUMP JUMP NT_1"]),
    # The child's copies must be equal.
    ("jump twice ### JUMP JUMP", "NT_1 twice ### NT_1 NT_1",
     ["jump ### JUMP"]),
    ("jump twice ### JUMP WALK", "NT_1 twice ### NT_1 NT_1", []),
    # r3 would be NT_1 ### NT_1, or r1 itself.
    ("jump ### JUMP", "jump ### JUMP", []),
    # x ### X into NT_2.
    ("NT_1 x ### NT_1 X", "NT_1 NT_2 ### NT_1 NT_2", ["x ### X"]),
    # A target NT left without its source NT.
    ("NT_1 x y ### NT_1 X NT_1", "NT_1 x ### NT_1 X", []),
    ("NT_1 x ### NT_1 A", "x ### A", ["NT_1 NT_2 ### NT_1 NT_2"]),
    ("x ### a X", "x ### X", ["NT_1 ### a NT_1"]),
    # NT_1 NT_2 swapped: a child into either slot (NT_1 and NT_2 into
    # NT_1; and NT_1 NT_2 into NT_2), and as parent the first again.
    ("NT_1 and NT_2 NT_3 ### NT_3 NT_2 NT_1", "NT_1 NT_2 ### NT_2 NT_1",
     ["NT_1 and NT_2 ### NT_2 NT_1", "and NT_1 NT_2 ### NT_2 NT_1"]),
]


@pytest.mark.parametrize("r1, r2, expected", HAND_UNIFY)
def test_unify_kernel_and_independent_twin_on_hand_cases(r1, r2, expected):
  grammar = _coded(r1, r2, *expected)
  want = set(grammar[2:])
  assert unify_kernel_reference.unify(grammar[0], grammar[1]) == want
  assert _kernel_unify(grammar, 0, [1]) == want


@hypothesis.settings(max_examples=100, deadline=None)
@hypothesis.given(valid_rules(max_nts=2).filter(lambda r: r.num_nts),
                  valid_rules(max_nts=2), st.data(), valid_rules(max_nts=2))
def test_unify_kernel_matches_independent_twin(ra, rb, data, other):
  k = data.draw(st.integers(1, ra.num_nts), label="k")
  rc = compose(ra, k, rb)
  texts = [rc, ra, rb, other, compose(rc, 1, rb) if rc.num_nts else rc]
  grammar = _coded(*[format_rule(x) for x in texts])
  flat = _csr(grammar)
  for i in range(len(grammar)):
    others = [j for j in range(len(grammar)) if j != i]
    for j in others:
      assert (_kernel_unify(grammar, i, [j]) ==
              unify_kernel_reference.unify(grammar[i], grammar[j])), (
                  texts[i], texts[j])
    assert (_kernel_unify(grammar, i, others) ==
            unify_kernel_reference.unify_partners(*flat, i, others))
