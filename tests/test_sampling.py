"""Forward sampling against the exact sampling distribution (the twin)."""

import collections
import math

import numpy as np
import pytest

from csl_jax.sampling import sampler
from csl_jax.sampling.sample_reference import pair_distribution
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

@pytest.mark.parametrize("temperature,bias", [(1.0, 0.0), (2.0, 1.5),
                                              (math.inf, 0.0)])
def test_empirical_frequencies_match_exact_distribution(temperature, bias):
  model = _model(1)
  config = sampler.SampleConfig(temperature=temperature, depth_bias=bias,
                                depth_bias_min_nts=1, max_depth=3, seed=7)
  p, leaf = sampler.rule_distributions(model, config)
  exact = pair_distribution(RULES, p, leaf, model.ctx_index, 3)
  assert abs(sum(exact.values()) - 1) < 1e-9
  n = 40_000
  got = sampler.sample(model, n, config)
  assert got.stats["num_samples"] == n and got.stats["failed_rate"] == 0
  _assert_drawn_as(got.pairs, exact)


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
  from csl_jax.model import contexts  # pylint: disable=g-import-not-at-top
  from csl_jax.model.csl_model import CSLModel  # pylint: disable=g-import-not-at-top
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
  p, leaf = sampler.rule_distributions(model, config)
  exact = pair_distribution(RULES, p, leaf, model.ctx_index, 3)
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
  p, _ = sampler.rule_distributions(model, config)
  want = local_distribution(
      RULES, p, model.ctx_index,
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
