"""csl_jax/pcfg: fractional production counts (kernel vs its twin, and by
hand), estimation, criticality, sampling, perplexity; the SCAN action CFG
(tasks/scan/actions.cfg) against SCAN's own outputs (Yao & Koller 2024)."""

import math

import hypothesis
from hypothesis import strategies as st
import numpy as np
import pytest

from csl_jax import assets
from csl_jax.data import scan
from csl_jax.errors import InputError
from csl_jax.pcfg import counts
from csl_jax.pcfg import counts_reference
from csl_jax.pcfg import pcfg
from csl_jax.qcfg.output_cfg import load_output_cfg
from csl_jax.qcfg.output_cfg import parse_output_cfg

# Ambiguous on purpose: S -> S S is Catalan-ambiguous, S -> A -> a and
# S -> a give every `a` two parses, B has a ternary and a mixed rule.
AMBIGUOUS = parse_output_cfg("""\
S -> S S | a | A | B
A -> a | b A
B -> a B c | a c | b S c
""")


def test_counts_by_hand():
  tables = counts.encode(AMBIGUOUS)
  # "a a": S -> S S with two ways for each S: 4 parses; S -> S S in each,
  # then per `a` half S -> a, half S -> A (-> a).
  z, c = counts.expected_counts(tables, ["a", "a"])
  assert z == 4.0
  got = dict(zip([f"{p.lhs}->{len(p.rhs)}:{p.rhs[0].name}"
                  for p in AMBIGUOUS.productions], c))
  assert got["S->2:S"] == 1.0 and got["S->1:a"] == 1.0
  assert got["S->1:A"] == 1.0 and got["A->1:a"] == 1.0
  assert counts.expected_counts(tables, ["c"]) == (0.0, pytest.approx(
      np.zeros(len(AMBIGUOUS.productions))))


@hypothesis.settings(max_examples=60, deadline=None)
@hypothesis.given(st.lists(st.sampled_from("abc"), min_size=1, max_size=6))
def test_counts_match_twin(tokens):
  z, c = counts.expected_counts(counts.encode(AMBIGUOUS), tokens)
  z_ref, c_ref = counts_reference.expected_counts(AMBIGUOUS, tokens)
  assert z == z_ref
  np.testing.assert_allclose(c, c_ref, atol=1e-9)


@hypothesis.settings(max_examples=60, deadline=None)
@hypothesis.given(st.lists(st.sampled_from("abc"), min_size=1, max_size=6),
                  st.integers(0, 10**6))
def test_weighted_counts_match_twin(tokens, seed):
  """With production probabilities: p(y) and the posterior counts, each
  parse weighted by its probability (the twin enumerates the parses)."""
  weights = np.random.default_rng(seed).uniform(0.05, 1.0,
                                                len(AMBIGUOUS.productions))
  z, c = counts.expected_counts(counts.encode(AMBIGUOUS), tokens, weights)
  z_ref, c_ref = counts_reference.expected_counts(AMBIGUOUS, tokens, weights)
  assert z == pytest.approx(z_ref, rel=1e-9, abs=1e-300)
  np.testing.assert_allclose(c, c_ref, atol=1e-9)


def test_weighted_inside_is_the_probability():
  cfg = parse_output_cfg("S -> S S | a\n")
  probs = np.array([0.25, 0.75])
  # "a a a": two trees, each p(S->S S)^2 p(a)^3.
  z, _ = counts.expected_counts(counts.encode(cfg), "a a a".split(), probs)
  assert z == pytest.approx(2 * 0.25 ** 2 * 0.75 ** 3)


def test_unary_cycle_is_an_error():
  with pytest.raises(InputError, match="unary cycle"):
    counts.encode(parse_output_cfg("S -> A | x\nA -> S\n"))


def test_estimate_relative_frequencies_and_fractional_counts():
  model, info = pcfg.estimate(AMBIGUOUS, ["a", "b a", "a c", "z"])
  p = dict(zip([" ".join(s.name for s in q.rhs) for q in AMBIGUOUS.productions
                if q.lhs == "S"], model.probs[:4]))
  # S counts: "a" 1/2 (S->a) + 1/2 (S->A); "b a" 1 (S->A); "a c" 1 (S->B).
  assert p == pytest.approx({"S S": 0.0, "a": 0.5 / 3, "A": 1.5 / 3,
                             "B": 1.0 / 3})
  assert info["num_unparsed"] == 1 and info["unparsed"] == ["z"]
  assert info["num_ambiguous"] == 1
  for lhs in ("S", "A", "B"):
    total = sum(w for q, w in zip(AMBIGUOUS.productions, model.probs)
                if q.lhs == lhs)
    assert total == pytest.approx(1.0, abs=1e-9)
  # B -> b S c never occurs: probability 0.
  assert model.probs[-1] == 0.0


def test_criticality():
  cfg = parse_output_cfg("S -> S S | a\n")
  for p in (0.1, 0.3, 0.6):
    assert pcfg.criticality(pcfg.PCFG(cfg, np.array([p, 1 - p]))) == \
        pytest.approx(2 * p)
  assert pcfg.criticality(pcfg.uniform(cfg)) == pytest.approx(1.0)
  # peers.md §2.1: the FunQL CFG is supercritical under 1/k weights.
  funql = load_output_cfg(assets.resolve("tasks/geoquery/funql.cfg"))
  assert 1.0 < pcfg.criticality(pcfg.uniform(funql)) < 1.05


def test_criticality_counts_only_what_the_start_reaches():
  # X is supercritical (3 / 2 + ... = 5/3 expected X per X) but no
  # derivation from S reaches it: S's language is finite.
  cfg = parse_output_cfg("S -> a | b\nX -> X X | X X X | c\n")
  assert pcfg.criticality(pcfg.uniform(cfg)) == 0.0
  # Reached through a production of probability 0: not reached.
  cfg = parse_output_cfg("S -> a | X\nX -> X X | c\n")
  assert pcfg.criticality(pcfg.PCFG(cfg, np.array([1.0, 0.0, 0.6, 0.4]))) \
      == 0.0
  assert pcfg.criticality(pcfg.PCFG(cfg, np.array([0.5, 0.5, 0.6, 0.4]))) \
      == pytest.approx(1.2)


def test_unbounded_sampling_of_a_supercritical_pcfg_is_refused():
  # S -> S S at 0.6: some derivations never end; without a depth bound the
  # sampler would run forever.
  wild = pcfg.PCFG(parse_output_cfg("S -> S S | a\n"), np.array([0.6, 0.4]))
  with pytest.raises(InputError, match=r"criticality 1\.200 >= 1.*max_depth"):
    pcfg.sample_unique(wild, 5, seed=0)
  assert pcfg.sample_unique(wild, 2, seed=0, max_depth=4)[0]
  with pytest.raises(InputError, match="seed must be >= 0"):
    pcfg.sample_unique(wild, 2, seed=-1, max_depth=4)


def test_estimate_with_no_parsed_output_is_an_error():
  with pytest.raises(InputError, match=r"none of the 2 train outputs parses"
                     r".*'z'"):
    pcfg.estimate(AMBIGUOUS, ["z", "c c"])


def test_language_limit_counts_every_alternative():
  cfg = parse_output_cfg("S -> a | b | c | d | e\n")
  assert len(pcfg.language(cfg, limit=5)) == 5
  with pytest.raises(ValueError, match="more than 3 strings"):
    pcfg.language(cfg, limit=3)


def test_sampling_is_unique_seeded_and_bounded():
  finite = parse_output_cfg("S -> A A\nA -> a | b | c\n")
  got, info = pcfg.sample_unique(pcfg.uniform(finite), 100, seed=3,
                                 max_consecutive_duplicates=500)
  assert sorted(got) == pcfg.language(finite) and len(got) == 9
  assert info["stopped_by"] == "duplicates" and info["rejected"] == 0
  assert got == pcfg.sample_unique(pcfg.uniform(finite), 100, seed=3,
                                   max_consecutive_duplicates=500)[0]
  # Supercritical (S -> S S at 0.6): the depth bound rejects, and says so.
  wild = pcfg.PCFG(parse_output_cfg("S -> S S | a\n"), np.array([0.6, 0.4]))
  got, info = pcfg.sample_unique(wild, 50, seed=0, max_depth=8,
                                 max_attempts=2000)
  assert info["rejected"] > 0 and 0 < info["rejection_rate"] < 1
  assert all(len(s.split()) <= 2 ** 7 for s in got)
  # Stopped by draws that gave nothing new, most of them over the bound:
  # said as rejections, not duplicates (depth <= 2: only `a` and `a a`,
  # 0.1 and 0.009 of the draws).
  wilder = pcfg.PCFG(wild.cfg, np.array([0.9, 0.1]))
  got, info = pcfg.sample_unique(wilder, 50, seed=0, max_depth=2,
                                 max_consecutive_duplicates=200)
  assert sorted(got) == ["a", "a a"] and info["stopped_by"] == "rejections"


def test_uniform_over_known_tokens_by_hand():
  cfg = parse_output_cfg("S -> A B | A C | d\nA -> a | e\nB -> b\nC -> c C | f\n")
  # Tokens {a, b, c, d}: A -> e and C -> f go; C then derives nothing of
  # them (c C only), so S -> A C goes too: S gets 1/2 each of A B and d,
  # A -> a 1, B -> b 1, C nothing.
  got = dict(zip([(p.lhs, " ".join(s.name for s in p.rhs))
                  for p in cfg.productions],
                 pcfg.uniform(cfg, {"a", "b", "c", "d"}).probs))
  assert got == {("S", "A B"): 0.5, ("S", "A C"): 0.0, ("S", "d"): 0.5,
                 ("A", "a"): 1.0, ("A", "e"): 0.0, ("B", "b"): 1.0,
                 ("C", "c C"): 0.0, ("C", "f"): 0.0}
  programs, _ = pcfg.sample_unique(pcfg.uniform(cfg, "abcd"), 10, seed=0,
                                   max_consecutive_duplicates=200)
  assert sorted(programs) == ["a b", "d"]
  with pytest.raises(InputError, match="start category 'S'"):
    pcfg.uniform(cfg, {"e"})
  # GeoQuery: the FunQL CFG's constants m2 ... m9 never occur in the data.
  funql = load_output_cfg(assets.resolve("tasks/geoquery/funql.cfg"))
  every = {s.name for p in funql.productions for s in p.rhs if s.terminal}
  known = pcfg.uniform(funql, every - {f"m{i}" for i in range(2, 10)})
  const = [w for p, w in zip(funql.productions, known.probs)
           if p.lhs == "Const"]
  assert sorted(const) == [0.0] * 8 + [0.5, 0.5]


def test_perplexity_by_hand():
  cfg = parse_output_cfg("S -> a | b S\n")
  model = pcfg.uniform(cfg)
  # "b a": 1/2 * 1/2 over 2 tokens -> per-token perplexity 2.
  assert pcfg.perplexity(model, ["b a"]) == pytest.approx(2.0)
  assert pcfg.perplexity(model, ["a b"]) == math.inf


def test_scan_action_grammar_is_exactly_scans_outputs():
  cfg = load_output_cfg(assets.resolve("tasks/scan/actions.cfg"))
  assert len(cfg.productions) == 124
  outputs = sorted({e.output for e in scan._all_examples()})  # pylint: disable=protected-access
  assert pcfg.language(cfg) == outputs and len(outputs) == 9228
  tables = counts.encode(cfg)
  # The parser agrees on a sample (every output: benchmarks/pcfg_scan.py):
  # each parses, `turn left twice` = `turn opposite left` is ambiguous.
  for output in outputs[::97]:
    assert counts.expected_counts(tables, output.split())[0] >= 1
  assert counts.expected_counts(tables, ["I_TURN_LEFT", "I_TURN_LEFT"])[0] \
      == 3  # turn opposite left; turn left twice; turn left, turn left
  assert counts.expected_counts(tables, ["I_WALK", "I_JUMP", "I_RUN"])[0] \
      == 0


def test_uniform_factored_by_hand():
  """Y&K's factorization X -> XNonterm | XTerm: half to the productions
  that may recurse. S -> S S | S a | a | b | c | A: plain 1/6 each,
  expected offspring of S 2/6 + 1/6 = 0.5; factored 1/4, 1/4 (recursing)
  and 1/8 x 4: 2/4 + 1/4 = 0.75. A -> b | c (nothing below recurses): one
  group, 1/2 each."""
  cfg = parse_output_cfg("S -> S S | S a | a | b | c | A\nA -> b | c\n")
  plain, factored = pcfg.uniform(cfg), pcfg.uniform(cfg, factored=True)
  assert pcfg.recursive_categories(cfg) == {"S"}
  rhs = [" ".join(s.name for s in p.rhs) for p in cfg.productions]
  got = dict(zip([f"{p.lhs}->{r}" for p, r in zip(cfg.productions, rhs)],
                 factored.probs))
  assert got == pytest.approx({"S->S S": 0.25, "S->S a": 0.25,
                               "S->a": 0.125, "S->b": 0.125, "S->c": 0.125,
                               "S->A": 0.125, "A->b": 0.5, "A->c": 0.5})
  assert pcfg.criticality(plain) == pytest.approx(3 / 6)
  assert pcfg.criticality(factored) == pytest.approx(0.75)
  # FunQL: supercritical under 1/k, subcritical factored.
  funql = load_output_cfg(assets.resolve("tasks/geoquery/funql.cfg"))
  assert pcfg.criticality(pcfg.uniform(funql)) > 1
  assert pcfg.criticality(pcfg.uniform(funql, factored=True)) < 0.7
  # With the training tokens, over the productions that remain.
  known = pcfg.uniform(cfg, {"a", "b"}, factored=True)
  got = dict(zip([f"{p.lhs}->{r}" for p, r in zip(cfg.productions, rhs)],
                 known.probs))
  assert got["S->c"] == 0 and got["S->a"] == pytest.approx(1 / 6)
  assert got["A->b"] == 1.0
