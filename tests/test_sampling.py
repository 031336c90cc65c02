"""Forward sampling against the exact sampling distribution (the twin).

The twin computes p(r | context) itself (`sample_reference.
rule_distributions`): with the sampler's `rule_distributions` on both sides,
a bug there (temperature, depth bias) passed."""

import collections
import math

import numpy as np
import pytest

from csl_jax.model import contexts
from csl_jax.model.csl_model import CSLModel
from csl_jax.sampling import sample_reference
from csl_jax.sampling import sampler
from csl_jax.sampling.sample_reference import sampler_distribution
from csl_jax.qcfg.output_cfg import parse_output_cfg
from csl_jax.testing.models import TOY_OUTPUT_CFG, TOY_RULES, random_model

RULES = TOY_RULES


def _model(seed=0, num_states=2):
  return random_model(RULES, seed, num_states)


def _assert_drawn_as(pairs, dist):
  """Each pair's count within 5 standard deviations of the binomial count
  its probability in `dist` gives (a pair outside `dist` fails)."""
  n = len(pairs)
  counts = collections.Counter(pairs)
  assert set(counts) <= set(dist)
  for pair, q in dist.items():
    sd = math.sqrt(n * q * (1 - q)) + 1
    assert abs(counts.get(pair, 0) - n * q) < 5 * sd, pair

@pytest.mark.parametrize("temperature,bias,min_nts", [
    (1.0, 0.0, 1), (2.0, 1.5, 1), (0.5, -1.0, 0), (math.inf, 0.0, 1),
    (math.inf, 1.0, 0)])
def test_empirical_frequencies_match_exact_distribution(temperature, bias,
                                                        min_nts):
  model = _model(1)
  config = sampler.SampleConfig(temperature=temperature, depth_bias=bias,
                                depth_bias_min_nts=min_nts, max_depth=3,
                                seed=7)
  exact = sampler_distribution(model, config)
  assert abs(sum(exact.values()) - 1) < 1e-9
  n = 40_000
  got = sampler.sample(model, n, config)
  assert got.stats["num_samples"] == n and got.stats["failed_rate"] == 0
  _assert_drawn_as(got.pairs, exact)


def _hand_model(rule_weights, state_weights=(1.0,)):
  """TOY_RULES with theta_{s,r} = log rule_weights[s][r] and every
  context's theta_{c,s} = log state_weights[s]."""
  num_contexts = contexts.num_contexts(RULES)
  return CSLModel.from_params(RULES, {
      "rule": np.log(np.array(rule_weights, np.float64)),
      "context": np.log(np.tile(state_weights, (num_contexts, 1)))}, 2,
                              len(state_weights))


# TOY_RULES: `NT_1 twice` (1 NT), `NT_1 and NT_2` (2 NTs), walk, run.
# (weights theta = log w, temperature, depth bias, min NTs, p(r | c)), by
# hand: p ~ w^(1/T) * e^bias on the rules with more than min NTs.
HAND_RULE_P = [
    ([[1, 4, 9, 16]], 1.0, 0.0, 1, [1 / 30, 4 / 30, 9 / 30, 16 / 30]),
    ([[1, 4, 9, 16]], 2.0, 0.0, 1, [0.1, 0.2, 0.3, 0.4]),
    ([[1, 4, 9, 16]], 0.5, 0.0, 1, [1 / 354, 16 / 354, 81 / 354,
                                    256 / 354]),
    ([[1, 4, 9, 16]], math.inf, math.log(3), 1, [1 / 6, 3 / 6, 1 / 6,
                                                 1 / 6]),
    ([[1, 4, 9, 16]], math.inf, math.log(3), 0, [3 / 8, 3 / 8, 1 / 8,
                                                 1 / 8]),
    ([[1, 4, 9, 16]], math.inf, math.log(3), 2, [0.25] * 4),
    ([[1, 4, 9, 16]], 2.0, math.log(2), 0, [2 / 13, 4 / 13, 3 / 13,
                                            4 / 13]),
]


@pytest.mark.parametrize("weights, temperature, bias, min_nts, want",
                         HAND_RULE_P)
def test_rule_distributions_by_hand(weights, temperature, bias, min_nts,
                                    want):
  model = _hand_model(weights)
  config = sampler.SampleConfig(temperature=temperature, depth_bias=bias,
                                depth_bias_min_nts=min_nts)
  leaf_want = [0, 0, want[2] / (want[2] + want[3]),
               want[3] / (want[2] + want[3])]
  p, leaf = sampler.rule_distributions(model, config)
  twin_p, twin_leaf = sample_reference.rule_distributions(
      RULES, model.rule_logits, model.context_logits, temperature, bias,
      min_nts)
  for got_p, got_leaf in ((p, leaf), (np.array(twin_p), np.array(twin_leaf))):
    assert got_p.shape == (contexts.num_contexts(RULES), 4)
    np.testing.assert_allclose(got_p, np.tile(want, (len(got_p), 1)))
    # Leaf rows, renormalized as drawn: walk and run only.
    np.testing.assert_allclose(got_leaf / got_leaf.sum(1, keepdims=True),
                               np.tile(leaf_want, (len(got_p), 1)))


def test_rule_distributions_mix_states_by_hand():
  # p(s | c) = 1/4, 3/4; p(r | s) = 1/4 each, and 1/8, 1/8, 3/8, 3/8.
  model = _hand_model([[1, 1, 1, 1], [1, 1, 3, 3]], [1.0, 3.0])
  want = [5 / 32, 5 / 32, 11 / 32, 11 / 32]
  config = sampler.SampleConfig()
  p, _ = sampler.rule_distributions(model, config)
  np.testing.assert_allclose(p, np.tile(want, (len(p), 1)))
  twin_p, _ = sample_reference.rule_distributions(
      RULES, model.rule_logits, model.context_logits, 1.0, 0.0, 1)
  np.testing.assert_allclose(twin_p, np.tile(want, (len(p), 1)))


def test_sampler_draws_a_hand_worked_distribution():
  # p = 0.1, 0.2, 0.3, 0.4 (T = 2); at max depth 2 the children are walk
  # or run, 3/7 and 4/7.
  model = _hand_model([[1, 4, 9, 16]])
  config = sampler.SampleConfig(temperature=2.0, max_depth=2, seed=5)
  w, r = 3 / 7, 4 / 7
  want = {("walk", "W"): 0.3, ("run", "R"): 0.4,
          ("walk twice", "W W"): 0.1 * w, ("run twice", "R R"): 0.1 * r,
          ("walk and walk", "W W"): 0.2 * w * w,
          ("walk and run", "W R"): 0.2 * w * r,
          ("run and walk", "R W"): 0.2 * r * w,
          ("run and run", "R R"): 0.2 * r * r}
  got = sampler_distribution(model, config)
  assert got.keys() == want.keys()
  for pair, q in want.items():
    assert got[pair] == pytest.approx(q)
  _assert_drawn_as(sampler.sample(model, 20_000, config).pairs, want)


@pytest.mark.parametrize("seed", range(6))
def test_rule_distributions_match_twin(seed):
  rng = np.random.default_rng(seed)
  model = _model(seed, num_states=int(rng.integers(1, 4)))
  for temperature in (0.3, 1.0, 2.5, math.inf):
    for min_nts in (0, 1, 2):
      bias = float(rng.normal())
      config = sampler.SampleConfig(temperature=temperature,
                                    depth_bias=bias,
                                    depth_bias_min_nts=min_nts)
      p, leaf = sampler.rule_distributions(model, config)
      twin_p, twin_leaf = sample_reference.rule_distributions(
          RULES, model.rule_logits, model.context_logits, temperature,
          bias, min_nts)
      np.testing.assert_allclose(p, twin_p, rtol=1e-12, atol=1e-15)
      np.testing.assert_allclose(leaf, twin_leaf, rtol=1e-12, atol=1e-15)


def test_uniform_temperature_and_depth_bias():
  model = _model(2)
  p, _ = sampler.rule_distributions(
      model, sampler.SampleConfig(temperature=math.inf))
  np.testing.assert_allclose(p, 0.25)
  p, _ = sampler.rule_distributions(
      model, sampler.SampleConfig(temperature=math.inf, depth_bias=math.log(3),
                                  depth_bias_min_nts=1))
  # Only the 2-NT rule gets the bias: weights 1, 3, 1, 1.
  np.testing.assert_allclose(p[0], [1 / 6, 3 / 6, 1 / 6, 1 / 6])


def test_reproducible_and_depth_limited():
  model = _model(3)
  config = sampler.SampleConfig(max_depth=2, seed=11)
  a = sampler.sample(model, 2000, config)
  b = sampler.sample(model, 2000, config)
  assert a.pairs == b.pairs
  assert max(a.depths) <= 2
  # At depth 2 only walk/run: at most one operator.
  assert all(len(x.split()) <= 3 for x, _ in a.pairs)
  c = sampler.sample(model, 2000, sampler.SampleConfig(max_depth=2, seed=12))
  assert c.pairs != a.pairs


def test_dedup_and_output_cfg_rejection_are_bounded():
  model = _model(4)
  config = sampler.SampleConfig(max_depth=2, dedup=True, seed=0,
                                max_attempts_factor=5)
  got = sampler.sample(model, 1000, config)
  # max depth 2 allows few distinct pairs: dedup stops when attempts run out.
  assert len(set(got.pairs)) == len(got.pairs) < 1000
  assert got.stats["num_attempts"] <= 5 * 1000
  assert got.stats["not_intersected_because"] == (
      "no output CFG (the model has none)")
  cfg = parse_output_cfg("Q -> W | W W | W R\n")
  got = sampler.sample(model, 500, sampler.SampleConfig(
      max_depth=3, seed=0, intersect=False), output_cfg=cfg)
  assert all(y in ("W", "W W", "W R") for _, y in got.pairs)
  assert 0 < got.stats["cfg_rejection_rate"] < 1
  assert got.stats["not_intersected_because"].startswith(
      "SampleConfig.intersect is False")


CFG = parse_output_cfg(TOY_OUTPUT_CFG)


def test_target_options_by_hand():
  from csl_jax.sampling.intersection import target_options
  assert target_options(CFG, ["NT_1", "NT_1"]) == {"Q": [("A",)]}
  assert target_options(CFG, ["NT_1", "NT_2"]) == {"Q": [("A", "A"),
                                                         ("A", "B")]}
  assert target_options(CFG, ["W"]) == {"A": [()], "Q": [()]}
  assert target_options(CFG, ["R", "NT_1"]) == {}
  # A slot may stand for any category that derives through unit rules, but
  # Q covers A (Q -> A): a child output of category A is one of Q too, so
  # (A,) would only annotate Q's derivations a second time.
  assert target_options(CFG, ["NT_1"]) == {"A": [("A",)], "B": [("B",)],
                                           "Q": [("Q",)]}


def test_long_derivations_within_max_len_are_not_lost():
  # Each node's string is kept while the tree is spelled: 30 nested nodes
  # of up to 30 tokens outgrew the scratch buffers (8 max_len + 64), and
  # such samples failed though their output fits max_len.
  from csl_jax.qcfg.rules import parse_rules  # pylint: disable=g-import-not-at-top
  rules = parse_rules("walk ### W\nNT_1 ### NT_1 x\n")
  model = CSLModel.from_params(rules, {  # p(NT_1 x) = 0.99: deep trees
      "rule": np.log([[0.01, 0.99]]),
      "context": np.zeros((contexts.num_contexts(rules), 1))}, 1, 1)
  got = sampler.sample(model, 300, sampler.SampleConfig(
      max_depth=30, max_len=30, seed=0))
  assert got.stats["failed_rate"] == 0.0
  assert max(len(y.split()) for _, y in got.pairs) == 30


@pytest.mark.parametrize("rules_text,cfg_text,mode,want,drop", [
    # Every output valid: the plain sampler's 1/2, 1/4, 1/4 at max_depth 3
    # (the last step renormalized to the NT-free rule). Before: the limit's
    # raw mass gave 0.57 / 0.29 / 0.14 with `Q -> W`, and a derivation
    # counted once per annotation 0.37 / 0.36 / 0.27 with `Q -> A; A -> W`.
    ("NT_1 please ### NT_1", "Q -> W\n", "exact",
     {"walk": 0.5, "walk please": 0.25, "walk please please": 0.25}, 0.0),
    ("NT_1 please ### NT_1", "Q -> A\nA -> W\n", "exact",
     {"walk": 0.5, "walk please": 0.25, "walk please please": 0.25}, 0.0),
    # `W X` is annotated twice (its W as A or as B), `W` once; `W X X` is
    # not valid: conditioned 2/3, 1/3 (annotations: 1/2, 1/2). Drawn
    # with weights 1/2, 1/2, half of the `W X` draws are dropped.
    ("NT_1 please ### NT_1 X", "Q -> W | A X | B X\nA -> W\nB -> W\n",
     "exact", {"walk": 2 / 3, "walk please": 1 / 3}, 0.25),
    # Local (the release's draw): where every draw can complete, local and
    # exact agree; by hand, at the root `walk` (p 1/2) and `NT_1 please`
    # (p 1/2, two tuples, (A,) and (B,), each able to complete), whose
    # child can only be `walk`: 1/2, 1/2, nothing dropped.
    ("NT_1 please ### NT_1", "Q -> W\n", "local",
     {"walk": 0.5, "walk please": 0.25, "walk please please": 0.25}, 0.0),
    ("NT_1 please ### NT_1 X", "Q -> W | A X | B X\nA -> W\nB -> W\n",
     "local", {"walk": 0.5, "walk please": 0.5}, 0.0),
])
def test_intersected_sampling_by_hand_with_unit_and_ambiguous_cfgs(
    rules_text, cfg_text, mode, want, drop):
  from csl_jax.qcfg.rules import parse_rules  # pylint: disable=g-import-not-at-top
  rules = parse_rules(f"walk ### W\n{rules_text}\n")
  model = random_model(rules, seed=0, num_states=1, max_nts=1)
  config = sampler.SampleConfig(temperature=math.inf, max_depth=3, seed=1,
                                intersect_mode=mode)
  n = 20_000
  got = sampler.sample(model, n, config, output_cfg=parse_output_cfg(
      cfg_text))
  assert got.stats["intersected"] and got.stats["num_samples"] == n
  assert got.stats["intersect_mode"] == mode
  counts = {}
  for x, _ in got.pairs:
    counts[x] = counts.get(x, 0) + 1
  assert set(counts) == set(want)
  for x, q in want.items():
    sd = math.sqrt(n * q * (1 - q))
    assert abs(counts[x] - n * q) < 5 * sd, (x, counts)
  assert got.stats["annotation_drop_rate"] == pytest.approx(drop, abs=0.02)


def test_intersected_sampling_is_the_model_conditioned_on_valid_outputs():
  model = _model(5)
  config = sampler.SampleConfig(max_depth=3, seed=3)
  exact = sampler_distribution(model, config)
  valid = {k: q for k, q in exact.items() if CFG.recognizes(k[1].split())}
  total = sum(valid.values())
  n = 30_000
  got = sampler.sample(model, n, config, output_cfg=CFG)
  assert got.stats["intersected"] and got.stats["num_attempts"] == n
  assert got.stats["cfg_rejection_rate"] == 0
  _assert_drawn_as(got.pairs, {k: q / total for k, q in valid.items()})


@pytest.mark.parametrize("seed", [5, 7])
def test_local_intersected_sampling_matches_its_twin(seed):
  from csl_jax.sampling.intersection import target_options  # pylint: disable=g-import-not-at-top
  from csl_jax.sampling.sample_reference import local_distribution  # pylint: disable=g-import-not-at-top
  model = _model(seed)
  config = sampler.SampleConfig(max_depth=3, seed=3, depth_bias=1.0,
                                intersect_mode="local")
  p, _ = sample_reference.rule_distributions(
      RULES, model.rule_logits, model.context_logits, config.temperature,
      config.depth_bias, config.depth_bias_min_nts)
  want = local_distribution(
      RULES, np.array(p), model.ctx_index,
      [target_options(CFG, rule.target) for rule in RULES], CFG.start, 3)
  assert sum(want.values()) == pytest.approx(1.0)
  n = 30_000
  got = sampler.sample(model, n, config, output_cfg=CFG)
  assert got.stats["num_attempts"] == n and got.stats["num_samples"] == n
  _assert_drawn_as(got.pairs, want)
  # Not the exact sampler's distribution on this model (or the test could
  # not tell them apart).
  exact = sampler.sample(model, n, sampler.SampleConfig(
      max_depth=3, seed=3, depth_bias=1.0), output_cfg=CFG)
  assert exact.pairs != got.pairs


def test_intersect_mode_is_checked():
  from csl_jax.errors import InputError  # pylint: disable=g-import-not-at-top
  with pytest.raises(InputError, match="intersect_mode"):
    sampler.SampleConfig(intersect_mode="loose")
