"""IBM Model 1 and seed rules on toy corpora with known answers."""

import random

import numpy as np
import pytest

from csl_jax.data.tsv import Example
from csl_jax.induction import ibm1
from csl_jax.induction import ibm1_reference
from csl_jax.induction import seed_rules
from csl_jax.qcfg import rules as rules_lib


def _naive_ibm1(pairs, num_iterations):
  """Textbook EM over dicts, NULL included, as the reference."""
  t = {}
  for src, tgt in pairs:
    for e in [ibm1.NULL] + list(src):
      for f in tgt:
        t[(e, f)] = 1.0
  for _ in range(num_iterations):
    counts, totals = {}, {}
    for src, tgt in pairs:
      sources = [ibm1.NULL] + list(src)
      for f in tgt:
        norm = sum(t[(e, f)] for e in sources)
        for e in sources:
          c = t[(e, f)] / norm
          counts[(e, f)] = counts.get((e, f), 0.0) + c
          totals[e] = totals.get(e, 0.0) + c
    t = {k: v / totals[k[0]] for k, v in counts.items()}
  return t


def _random_corpus(seed, num_pairs=30):
  rng = random.Random(seed)
  src_words = [f"s{i}" for i in range(8)]
  tgt_words = [f"t{i}" for i in range(6)]
  return [([rng.choice(src_words) for _ in range(rng.randint(0, 5))],
           [rng.choice(tgt_words) for _ in range(rng.randint(1, 5))])
          for _ in range(num_pairs)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ibm1_matches_naive_em(seed):
  pairs = _random_corpus(seed)
  model = ibm1.train_ibm1(pairs, num_iterations=4)
  want = _naive_ibm1(pairs, 4)
  for (e, f), p in want.items():
    assert model.prob(f, e) == pytest.approx(p, abs=1e-12)
  assert len(model.keys) == len(want)


@pytest.mark.parametrize("size", [7, 100, 1 << 21])
def test_unique_ids_as_numpy_unique(size):
  # Both ways (a table over the ids' range, and a sort for large ranges).
  ids = np.random.default_rng(size).integers(0, size, 500)
  keys, inverse = ibm1._unique(ids, size)  # pylint: disable=protected-access
  want_keys, want_inverse = np.unique(ids, return_inverse=True)
  np.testing.assert_array_equal(keys, want_keys)
  np.testing.assert_array_equal(inverse, want_inverse)


def test_ibm1_probabilities_sum_to_one_per_source_word():
  model = ibm1.train_ibm1(_random_corpus(3), num_iterations=5)
  for e in model.src_vocab:
    assert sum(model.translations(e).values()) == pytest.approx(1.0)
  assert sum(model.translations(None).values()) == pytest.approx(1.0)


def test_ibm1_learns_the_classic_example():
  pairs = [("das haus".split(), "the house".split()),
           ("das buch".split(), "the book".split()),
           ("ein buch".split(), "a book".split())]
  model = ibm1.train_ibm1(pairs, num_iterations=10)
  for e, f in [("das", "the"), ("haus", "house"), ("buch", "book"),
               ("ein", "a")]:
    best = max(model.translations(e).items(), key=lambda kv: kv[1])
    assert best[0] == f
  assert model.prob("the", "das") > model.prob("house", "das")
  assert model.viterbi_alignment(["das", "haus"], ["the", "house"]) == (0, 1)
  assert model.viterbi_alignment(["ein", "haus"], ["a", "house"]) == (0, 1)
  assert model.prob("house", "unknown") == 0.0
  # An unseen target word has t = 0 everywhere: it goes to NULL.
  assert model.viterbi_alignment(["das"], ["the", "zebra"]) == (0, None)


def test_viterbi_ties_go_to_the_earliest_position_null_last():
  model = ibm1.Ibm1Model(
      src_vocab={ibm1.NULL: 0, "a": 1, "b": 2}, tgt_vocab={"x": 0},
      keys=np.array([0, 1, 2]), table=np.array([0.5, 0.5, 0.5]))
  assert model.viterbi_alignment(["b", "a"], ["x"]) == (0,)
  assert model.viterbi_alignment(["c", "a"], ["x", "x"]) == (1, 1)
  assert model.viterbi_alignment([], ["x"]) == (None,)
  assert model.viterbi_alignment(["a"], []) == ()


def test_em_kernel_matches_twin_and_the_bincount_formulation():
  pairs = _random_corpus(7)
  model = ibm1.train_ibm1(pairs, 5)
  words = {i: w for w, i in model.tgt_vocab.items()}
  sources = {i: w for w, i in model.src_vocab.items()}
  v = len(model.tgt_vocab)
  twin = ibm1_reference.em(pairs, 5)
  assert len(twin) == len(model.keys)
  for key, t in zip(model.keys.tolist(), model.table.tolist()):
    assert t == pytest.approx(twin[sources[key // v], words[key % v]],
                              rel=1e-12)
  # The same bits as the numpy EM it replaced (same order of sums).
  _, links, pair_of_link = ibm1._train(pairs, 1)  # pylint: disable=protected-access
  pair_src = model.keys // v
  table = np.full(len(model.keys), 1.0 / v)
  for _ in range(5):
    t = table[pair_of_link]
    norm = np.bincount(links.group, weights=t)
    counts = np.bincount(pair_of_link, weights=t / norm[links.group],
                         minlength=len(table))
    totals = np.bincount(pair_src, weights=counts,
                         minlength=len(model.src_vocab))
    table = counts / totals[pair_src]
  assert model.table.tolist() == table.tolist()


def test_ibm1_is_deterministic_and_checks_iterations():
  pairs = _random_corpus(4)
  m1, a1 = ibm1.train_and_align(pairs, 6)
  m2, a2 = ibm1.train_and_align(pairs, 6)
  np.testing.assert_array_equal(m1.keys, m2.keys)
  np.testing.assert_array_equal(m1.table, m2.table)
  assert a1 == a2
  # The alignments reuse the training links: the same as aligning anew.
  assert a1 == m1.viterbi_alignments(pairs)
  assert all(isinstance(i, int) for a in a1 for i in a if i is not None)
  with pytest.raises(ValueError):
    ibm1.train_ibm1(pairs, num_iterations=0)
  assert not len(ibm1.train_ibm1([], 3).keys)


GEO = [
    Example("what is the capital of m0",
            "answer ( capital ( loc_2 ( m0 ) ) )"),
    Example("which river runs through m0",
            "answer ( river ( traverse_2 ( m0 ) ) )"),
    Example("how long is the river NT_1",
            "answer ( len ( river ( NT_1 ) ) )"),
]


def test_exact_match_rules():
  got = seed_rules.exact_match_rules(GEO)
  assert [str(r) for r in got] == [
      "capital ### capital", "m0 ### m0", "river ### river"]
  assert [str(r) for r in seed_rules.exact_match_rules(GEO, min_count=2)] == [
      "m0 ### m0", "river ### river"]
  assert [str(r) for r in seed_rules.exact_match_rules(
      GEO, exclude={"m0", "river"})] == ["capital ### capital"]


# A toy COGS: lemma -> (past, participle); `fep` is irregular.
_VERBS = {"blick": ("blicked", "blicked"), "dax": ("daxed", "daxed"),
          "fep": ("fop", "fopen"), "glorp": ("glorped", "glorped"),
          "wug": ("wugged", "wugged"), "zup": ("zupped", "zupped")}
_NAMES = ["Emma", "Liam", "Ava"]
_NOUNS = ["dog", "cat", "cake", "box"]


def _noun_phrase(i):
  if i % 3 == 0:
    name = _NAMES[i // 3 % len(_NAMES)]
    return name, name
  noun = _NOUNS[i % len(_NOUNS)]
  return (f"the {noun}", f"* {noun}") if i % 2 else (f"a {noun}", noun)


def _toy_cogs():
  examples, i = [], 0
  for lemma, (past, participle) in _VERBS.items():
    examples.append(Example(lemma, lemma))
    for _ in range(6):
      (a, a_lf), (t, t_lf) = _noun_phrase(i), _noun_phrase(i + 1)
      i += 1
      examples += [
          Example(f"{a} {past} {t} .",
                  f"{lemma} ( agent = {a_lf} , theme = {t_lf} )"),
          Example(f"{t} was {participle} by {a} .",
                  f"{lemma} ( theme = {t_lf} , agent = {a_lf} )"),
          Example(f"{a} {past} .", f"{lemma} ( agent = {a_lf} )"),
          Example(f"{a} wanted to {lemma} .",
                  f"want ( agent = {a_lf} , xcomp = {lemma} ( agent = "
                  f"{a_lf} ) )"),
      ]
  return examples


_TOY_LEXICON = sorted(
    [(n, n) for n in _NAMES + _NOUNS] + [("wanted", "want")] +
    [(form, lemma) for lemma, forms in _VERBS.items()
     for form in {lemma, *forms}], key=lambda p: (p[1], p[0]))


def _pairs(rules):
  return [(r.source[0], r.target[0]) for r in rules]


def test_ibm1_lexical_rules_find_the_toy_lexicon():
  rules = seed_rules.ibm1_lexical_rules(_toy_cogs())
  assert _pairs(rules) == _TOY_LEXICON  # no <the, *>, <was, theme>, ...
  assert rules == seed_rules.ibm1_lexical_rules(_toy_cogs())


def test_ibm1_lexical_rule_criteria():
  examples = _toy_cogs()
  # `was` always marks a passive's theme; only its spelling rejects it.
  loose = _pairs(seed_rules.ibm1_lexical_rules(examples, min_shared_prefix=0))
  assert loose == sorted(_TOY_LEXICON + [("was", "theme")],
                         key=lambda p: (p[1], p[0]))
  # Verbs have 2-3 forms, nouns and names one.
  one_form = _pairs(seed_rules.ibm1_lexical_rules(examples, max_forms=1))
  assert ("cat", "cat") in one_form and ("Emma", "Emma") in one_form
  assert not any(x in _VERBS for _, x in one_form)
  excluded = _pairs(seed_rules.ibm1_lexical_rules(
      examples, exclude_targets={"dog", "fep"}))
  assert excluded == [p for p in _TOY_LEXICON if p[1] not in ("dog", "fep")]
  stats = seed_rules.ibm1_link_stats(examples)
  by_pair = {(s.source, s.target): s for s in stats}
  fop = by_pair[("fop", "fep")]
  assert (fop.count, fop.share, fop.target_in_inputs) == (12, 1.0, True)
  assert not by_pair[("was", "theme")].target_in_inputs
  assert not any(s == "the" or t == "*" for s, t in by_pair)
  assert seed_rules.select_lexical_rules(stats) == (
      seed_rules.ibm1_lexical_rules(examples))
  assert not seed_rules.select_lexical_rules(stats, min_count=100)


def test_seed_rules_save_and_load(tmp_path):
  rules = (seed_rules.exact_match_rules(GEO) +
           seed_rules.ibm1_lexical_rules(_toy_cogs()))
  path = tmp_path / "seed.qcfg"
  rules_lib.save_rules(path, rules, header="seed rules")
  assert rules_lib.load_rules(path) == rules
