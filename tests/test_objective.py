"""Occurrence kernel, pair statistics and the induction objective."""

import math

import hypothesis
from hypothesis import strategies as st
import numpy as np
import pytest

from csl_jax.induction.objective import Objective, ObjectiveConfig
from csl_jax.induction import statistics_reference
from csl_jax.induction.statistics import PairStatistics
from csl_jax.qcfg import occurrence_kernel
from csl_jax.qcfg import occurrence_reference
from csl_jax.qcfg.occurrence import OccurrenceIndex
from csl_jax.qcfg.occurrence_reference import occurs
from csl_jax.qcfg.rules import nt_index, parse_rule

# --- the occurrence kernel against its twin ----------------------------------

VOCAB = ["x", "y", "z"]
PATTERN_SYMBOLS = VOCAB + ["w", "NT_1", "NT_2", "NT_3"]  # w never occurs

token_lists = st.lists(st.sampled_from(VOCAB), min_size=1, max_size=8)
patterns = st.lists(st.sampled_from(PATTERN_SYMBOLS), min_size=1,
                    max_size=4).map(tuple)


def kernel_occurs(pattern, tokens):
  vocab = {t: i for i, t in enumerate(PATTERN_SYMBOLS)}
  codes = np.array([-nt_index(p) if nt_index(p) else vocab[p]
                    for p in pattern], np.int32)
  flat = np.array([vocab[t] for t in tokens], np.int32)
  offsets = np.array([0, len(tokens)], np.int64)
  num_nts = max([nt_index(p) for p in pattern] + [0])
  return bool(occurrence_kernel.match_examples(
      flat, offsets, np.zeros(1, np.int64), codes, num_nts)[0])


@hypothesis.settings(max_examples=400, deadline=None)
@hypothesis.given(patterns, token_lists)
def test_kernel_matches_twin(pattern, tokens):
  assert kernel_occurs(pattern, tokens) == occurs(pattern, tokens)


@hypothesis.settings(max_examples=150, deadline=None)
@hypothesis.given(st.lists(token_lists, min_size=1, max_size=5), patterns)
def test_match_examples_matches_twin(sequences, pattern):
  vocab = {t: i for i, t in enumerate(PATTERN_SYMBOLS)}
  codes = np.array([-nt_index(p) if nt_index(p) else vocab[p]
                    for p in pattern], np.int32)
  flat = np.array([vocab[t] for seq in sequences for t in seq], np.int32)
  offsets = np.zeros(len(sequences) + 1, np.int64)
  offsets[1:] = np.cumsum([len(seq) for seq in sequences])
  candidates = np.arange(len(sequences), dtype=np.int64)
  num_nts = max([nt_index(p) for p in pattern] + [0])
  args = (flat, offsets, candidates, codes, num_nts)
  assert (occurrence_kernel.match_examples(*args).tolist()
          == occurrence_reference.match_examples(*args).tolist())


@hypothesis.settings(max_examples=150, deadline=None)
@hypothesis.given(st.lists(token_lists, min_size=1, max_size=6),
                  st.lists(patterns, min_size=1, max_size=4))
def test_occurrence_index_matches_twin(sequences, pattern_list):
  index = OccurrenceIndex(sequences)
  for pattern in pattern_list:
    expected = [b for b, seq in enumerate(sequences) if occurs(pattern, seq)]
    got = index.occurrences(pattern)
    assert got.tolist() == expected
    assert index.occurrences(pattern).tolist() == expected  # cached
  # Repeated sequences are matched once but reported at every position.
  repeated = sequences + sequences[::-1] + sequences[:1]
  index = OccurrenceIndex(repeated)
  assert len(index) == len(repeated)
  for pattern in pattern_list:
    expected = [b for b, seq in enumerate(repeated) if occurs(pattern, seq)]
    assert index.occurrences(pattern).tolist() == expected


@hypothesis.settings(max_examples=200, deadline=None)
@hypothesis.given(st.sets(st.integers(0, 40)), st.sets(st.integers(0, 40)))
def test_intersect_sorted_is_set_intersection(a, b):
  a_arr = np.array(sorted(a), np.int64)
  b_arr = np.array(sorted(b), np.int64)
  got = occurrence_kernel.intersect_sorted(a_arr, b_arr)
  assert got.tolist() == sorted(a & b)
  assert got.tolist() == occurrence_reference.intersect_sorted(
      a_arr, b_arr).tolist()
  assert got.dtype == np.int64


def test_hand_made_occurrences():
  cases = [
      (("NT_1", "NT_1"), "J J", True),
      (("NT_1", "NT_1"), "J W", False),
      (("NT_1", "NT_1"), "J W J W", True),  # NT_1 = J W
      (("NT_1", "NT_1"), "J W J", False),
      (("NT_1", "x", "NT_1"), "a b x a b c", True),
      (("NT_1", "x", "NT_1"), "a b x b a", True),  # NT_1 = b
      (("NT_1", "x", "NT_1"), "a x b", False),
      (("NT_1", "NT_2", "NT_1"), "a b a", True),
      (("NT_1", "NT_2", "NT_1"), "a a", False),  # NT_2 non-empty
      (("NT_1", "twice"), "jump twice", True),
      (("twice",), "jump twice", True),
      # An NT at the edge needs a token of its own.
      (("twice", "NT_1"), "jump twice", False),
      (("NT_1", "jump"), "jump twice", False),
      (("NT_1", "jump"), "walk jump twice", True),
      (("NT_1",), "a", True),
      (("NT_1", "NT_2"), "a", False),
  ]
  for pattern, text, expected in cases:
    tokens = text.split()
    assert occurs(pattern, tokens) == expected, (pattern, text)
    index = OccurrenceIndex([tokens])
    assert bool(index.occurrences(pattern).size) == expected, (pattern, text)


# --- pair statistics on a tiny dataset ---------------------------------------

PAIRS = [
    ("jump twice".split(), "JUMP JUMP".split()),
    ("walk twice".split(), "WALK WALK".split()),
    ("jump".split(), "JUMP".split()),
    ("walk and jump twice".split(), "WALK JUMP JUMP".split()),
    ("jump and jump".split(), "JUMP JUMP".split()),
]
TWICE = ("NT_1", "twice")
DOUBLE = ("NT_1", "NT_1")


def test_pair_statistics_by_hand():
  stats = PairStatistics(PAIRS)
  assert stats.num_examples == 5
  # NT_1 twice: inputs 0, 1, 3. NT_1 NT_1: outputs 0, 1, 3, 4.
  assert stats.source.occurrences(TWICE).tolist() == [0, 1, 3]
  assert stats.target.occurrences(DOUBLE).tolist() == [0, 1, 3, 4]
  assert stats.counts(TWICE, DOUBLE) == (3, 4, 3)
  assert stats.conditionals(TWICE, DOUBLE) == (3 / 4, 1.0)
  # jump / JUMP: inputs 0, 2, 3, 4; outputs 0, 2, 3, 4.
  assert stats.counts(("jump",), ("JUMP",)) == (4, 4, 4)
  # jump / WALK: inputs 0, 2, 3, 4; outputs 1, 3; both 3.
  assert stats.counts(("jump",), ("WALK",)) == (4, 2, 1)
  assert stats.conditionals(("jump",), ("WALK",)) == (1 / 2, 1 / 4)
  # Two NTs: any input of length >= 2.
  assert stats.counts(("NT_1", "NT_2"), DOUBLE) == (4, 4, 4)
  # Edge NT needs a token: twice NT_1 never occurs.
  assert stats.counts(("twice", "NT_1"), DOUBLE) == (0, 4, 0)
  assert stats.conditionals(("twice", "NT_1"), DOUBLE) == (0.0, 0.0)
  # Unknown token.
  assert stats.counts(("NT_1", "thrice"), ("RUN",)) == (0, 0, 0)
  assert stats.conditionals(("NT_1", "thrice"), ("RUN",)) == (0.0, 0.0)


def test_pair_statistics_sample_is_seeded_subset():
  a = PairStatistics(PAIRS, sample_size=3, seed=7)
  b = PairStatistics(PAIRS, sample_size=3, seed=7)
  assert a.num_examples == b.num_examples == 3
  assert a.counts(TWICE, DOUBLE) == b.counts(TWICE, DOUBLE)
  full = PairStatistics(PAIRS, sample_size=10)
  assert full.num_examples == 5


# Pairs over a small vocabulary, with repeats (distinct sequences are
# matched once and counted with their multiplicity).
pair_lists = st.lists(st.sampled_from([(("x",), ("y",)), (("x", "y"), ("y", "y")),
                                       (("y", "x", "y"), ("z",)),
                                       (("x", "x"), ("z", "y", "z"))]) |
                      st.tuples(token_lists.map(tuple), token_lists.map(tuple)),
                      min_size=1, max_size=6)


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(pair_lists, patterns, patterns)
def test_pair_counts_kernel_matches_twin(pairs, alpha, beta):
  stats = PairStatistics(pairs)
  # Again and crossed: patterns' hits come from the cache.
  for a, b in ((alpha, beta), (alpha, beta), (beta, alpha), (alpha, alpha),
               (beta, beta)):
    assert stats.counts(a, b) == statistics_reference.pair_counts(
        pairs, a, b), (a, b)
  assert not stats._mark.any()  # pylint: disable=protected-access


def test_pair_counts_with_more_than_64_tokens_matches_twin():
  # 64 tokens are bits of a word a sequence; the rest go by binary search:
  # a vocabulary of 150, Zipf-like, exercises both and their mix.
  rng = np.random.default_rng(0)
  vocab = [f"w{i}" for i in range(150)]
  weights = 1.0 / np.arange(1, 151)
  weights /= weights.sum()

  def sequence():
    return tuple(rng.choice(vocab, size=rng.integers(1, 12), p=weights))

  pairs = [(sequence(), sequence()) for _ in range(300)]
  stats = PairStatistics(pairs)
  side = stats._src  # pylint: disable=protected-access
  assert (side[10] >= 0).sum() == 64 and (side[10] < 0).sum() > 64

  def pattern(seq):
    lo = int(rng.integers(0, len(seq)))
    part = list(seq[lo:lo + int(rng.integers(1, 6))])
    for k in range(int(rng.integers(0, 3))):  # some tokens become NTs
      part[int(rng.integers(0, len(part)))] = f"NT_{k + 1}"
    return tuple(part)

  for _ in range(400):
    x, y = pairs[int(rng.integers(0, len(pairs)))]
    alpha, beta = pattern(x), pattern(y)
    assert stats.counts(alpha, beta) == statistics_reference.pair_counts(
        pairs, alpha, beta), (alpha, beta)


# --- the objective -----------------------------------------------------------


def test_rule_cost_by_hand():
  config = ObjectiveConfig(terminal_cost=1.5, nonterminal_cost=0.5,
                           source_given_target=2.0,
                           target_given_source=0.25)
  objective = Objective(config, PairStatistics(PAIRS))
  rule = parse_rule("NT_1 twice ### NT_1 NT_1")
  size = (0.5 + 1.5) + (0.5 + 0.5)
  correlation = 2.0 * math.log(3 / 4) + 0.25 * math.log(1.0)
  assert objective.correlation(rule) == correlation
  assert objective.rule_cost(rule) == size - correlation
  assert objective.rule_cost(rule) == 3.0 - 2.0 * math.log(0.75)
  # jump ### WALK: p(jump | WALK) = 1/2, p(WALK | jump) = 1/4.
  rule2 = parse_rule("jump ### WALK")
  cost2 = 3.0 - (2.0 * math.log(1 / 2) + 0.25 * math.log(1 / 4))
  assert objective.rule_cost(rule2) == cost2
  assert objective.total([rule, rule2]) == (
      (3.0 - 2.0 * math.log(0.75)) + cost2)


def test_rule_cost_defaults_and_perfect_correlation():
  objective = Objective(ObjectiveConfig(), PairStatistics(PAIRS))
  # Perfectly correlated: cost is just the size.
  assert objective.rule_cost(parse_rule("jump ### JUMP")) == 2.0
  assert objective.rule_cost(parse_rule("NT_1 and NT_2 ### NT_1 NT_2")) == (
      5.0 - (math.log(2 / 4) + math.log(2 / 2)))


def test_rule_cost_never_together_is_infinite():
  objective = Objective(ObjectiveConfig(), PairStatistics(PAIRS))
  assert objective.correlation(parse_rule("twice NT_1 ### NT_1 NT_1")) == (
      -math.inf)
  assert objective.rule_cost(parse_rule("twice NT_1 ### NT_1 NT_1")) == (
      math.inf)


def test_zero_coefficient_drops_its_term():
  config = ObjectiveConfig(source_given_target=0.0, target_given_source=3.0)
  objective = Objective(config, PairStatistics(PAIRS))
  rule = parse_rule("NT_1 twice ### NT_1 NT_1")
  assert objective.rule_cost(rule) == 4.0 - 3.0 * math.log(1.0)
  rule2 = parse_rule("jump ### WALK")
  assert objective.rule_cost(rule2) == 2.0 - 3.0 * math.log(1 / 4)
  # With both coefficients zero, even a never-seen pair costs its size.
  config = ObjectiveConfig(source_given_target=0.0, target_given_source=0.0)
  objective = Objective(config, PairStatistics(PAIRS))
  assert objective.rule_cost(parse_rule("twice NT_1 ### NT_1 NT_1")) == 4.0


def test_log_base_two_is_the_authors_code():
  """The paper's Eq. 7 writes ln; the authors' objective_utils.py takes
  log2: p = 1/4 with k_beta = 3 costs 3 * 2 = 6 bits, 3 ln 4 nats."""
  rule = parse_rule("jump ### WALK")
  costs = {}
  for base in (math.e, 2.0):
    config = ObjectiveConfig(source_given_target=0.0, target_given_source=3.0,
                             log_base=base)
    costs[base] = Objective(config, PairStatistics(PAIRS)).rule_cost(rule)
  assert costs[2.0] == 2.0 + 6.0
  assert costs[math.e] == 2.0 + 3.0 * math.log(4)
  with pytest.raises(ValueError, match="log_base"):
    ObjectiveConfig(log_base=1.0)
