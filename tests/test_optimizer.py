"""The seq2seq trainer's optimizer options (`TrainConfig.schedule`,
`grad_clip`, `adam_b2`; Zhou et al. 2023 App. B.1's recipe,
gin/experiments/zhou_optimizer.gin): the Noam rates by hand, clipping and
b2 against optax and by hand, the keys of runs that leave them at their
defaults, and the pure-Python twin (`seq2seq.train_reference`)."""

import dataclasses
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from csl_jax.errors import InputError
from csl_jax.seq2seq import models
from csl_jax.seq2seq import train
from csl_jax.seq2seq import train_reference
from csl_jax.seq2seq.config import TrainConfig
from csl_jax.seq2seq.config import train_key

# train_key(TrainConfig()) before the options (commit e63cd52): every run
# and experiment cell trained with the defaults is keyed on these.
KEY_BEFORE = {"batch_size": 64, "num_steps": 2000, "learning_rate": 0.001,
              "warmup_steps": 100, "weight_decay": 0.01, "seed": 0,
              "bucket_width": 16}
# App. B.1: Noam, scale 2.0, d_model 256, 5,000 warm-up steps.
ZHOU = TrainConfig(num_steps=10000, learning_rate=2.0, warmup_steps=5000,
                   schedule="noam", grad_clip=5.0, adam_b2=0.998,
                   weight_decay=0.0)


def _state(params, config):
  from flax.training import train_state  # pylint: disable=g-import-not-at-top
  return train_state.TrainState.create(apply_fn=None, params=params,
                                       tx=train.make_optimizer(config))


# The optimizer's step of `train_step`, alone (on any pytree).
_apply = jax.jit(train.apply_gradients)


def _flat(tree):
  return np.concatenate([np.ravel(np.asarray(a, np.float64))
                         for a in jax.tree_util.tree_leaves(tree)])


def _steps(config, params, grads_seq, rates):
  state = _state(params, config)
  for grads, rate in zip(grads_seq, rates):
    state = _apply(state, grads, np.float32(rate))
  return state


def test_default_key_and_rates_are_unchanged():
  assert train_key(TrainConfig()) == KEY_BEFORE
  assert set(train_key(TrainConfig())) == set(KEY_BEFORE)
  # Set, each option is in the key (a run of it is another run).
  for field, value in (("schedule", "noam"), ("grad_clip", 5.0),
                       ("adam_b2", 0.998)):
    key = train_key(TrainConfig(**{field: value}))
    assert key == {**KEY_BEFORE, field: value}
  assert set(train_key(ZHOU)) == set(KEY_BEFORE) | {
      "schedule", "grad_clip", "adam_b2"}
  # The cosine rates, as optax's schedule (no model dimension needed).
  config = TrainConfig(num_steps=30, warmup_steps=4, learning_rate=2e-3)
  want = optax.warmup_cosine_decay_schedule(0.0, 2e-3, 4, 30,
                                            end_value=2e-4)
  np.testing.assert_array_equal(
      train.learning_rates(config),
      np.asarray(jax.jit(jax.vmap(want))(jnp.arange(30)), np.float32))
  np.testing.assert_array_equal(train.learning_rates(config, 256),
                                train.learning_rates(config))
  # One optimizer object per setting (one compile of the steps).
  assert train.make_optimizer(TrainConfig()) is train.make_optimizer(
      TrainConfig(seed=3, grad_clip=0))


def test_options_are_checked():
  for kw, match in ((dict(schedule="linear"), "schedule: 'linear'; one of "
                     "cosine, noam"),
                    (dict(grad_clip=-1.0), "grad_clip must be finite"),
                    (dict(grad_clip=math.inf), "grad_clip must be finite"),
                    (dict(adam_b2=1.0), r"adam_b2 must be in \[0, 1\)"),
                    (dict(adam_b2=-0.1), r"adam_b2 must be in \[0, 1\)")):
    with pytest.raises(InputError, match=match):
      TrainConfig(**kw)


def test_noam_rates_by_hand():
  rates = train.learning_rates(ZHOU, 256)
  assert rates.dtype == np.float32 and rates.shape == (10000,)
  # Step t = index + 1: 2.0 / sqrt(256) = 0.125 times
  # t = 1: 1 * 5000^-1.5; t = w = 5000: 5000^-0.5; t = 2w: 10000^-0.5.
  assert rates[0] == pytest.approx(0.125 / (5000 * math.sqrt(5000)),
                                   rel=1e-6)
  assert rates[0] == pytest.approx(3.5355339e-7, rel=1e-6)
  assert rates[4999] == pytest.approx(1.7677670e-3, rel=1e-6)  # the peak
  assert rates[9999] == pytest.approx(1.25e-3, rel=1e-6)
  assert int(np.argmax(rates)) == 4999
  assert np.all(np.diff(rates[:5000]) > 0) and np.all(
      np.diff(rates[4999:]) < 0)
  # Linear up to the peak, 1/sqrt(t) after it.
  assert rates[99] == pytest.approx(100 * rates[0], rel=1e-5)
  assert rates[7999] == pytest.approx(0.125 / math.sqrt(8000), rel=1e-6)
  # No warm-up: 1/sqrt(t) from the first step.
  none = train.learning_rates(dataclasses.replace(ZHOU, warmup_steps=0,
                                                  num_steps=4), 256)
  np.testing.assert_allclose(none, [0.125 / math.sqrt(t) for t in
                                    (1, 2, 3, 4)], rtol=1e-6)
  with pytest.raises(ValueError, match="model dimension"):
    train.learning_rates(ZHOU)


def test_rates_twin():
  for config, dim in (
      (TrainConfig(num_steps=30, warmup_steps=4, learning_rate=2e-3), None),
      (TrainConfig(num_steps=9, warmup_steps=0, learning_rate=1e-2), None),
      (TrainConfig(num_steps=5, warmup_steps=8, learning_rate=3e-3), None),
      (dataclasses.replace(ZHOU, num_steps=12000), 256),
      (TrainConfig(num_steps=40, warmup_steps=6, learning_rate=1.5,
                   schedule="noam"), 64),
      (TrainConfig(num_steps=5, warmup_steps=0, schedule="noam"), 16)):
    got = train.learning_rates(config, dim)
    want = [train_reference.learning_rate(config, s, dim)
            for s in range(config.num_steps)]
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-12)


def test_clipping_scales_the_gradients_to_the_global_norm():
  """Two steps (Adam's first is the sign of the gradient, whatever its
  size): a gradient of global norm 1 (not clipped), then one of norm
  5,000, clipped at 5 to norm 5: the step it makes is the step of the
  gradient rescaled by hand, and Adam's by hand."""
  clip = TrainConfig(grad_clip=5.0, weight_decay=0.0)
  params = {"a": jnp.zeros((1,)), "b": jnp.zeros((1,))}
  first = {"a": jnp.array([0.6]), "b": jnp.array([0.8])}
  huge = {"a": jnp.array([3000.0]), "b": jnp.array([4000.0])}  # norm 5000
  rescaled = {"a": jnp.array([3.0]), "b": jnp.array([4.0])}  # norm 5
  got = _steps(clip, params, [first, huge], [1.0, 1.0]).params
  by_hand = _steps(dataclasses.replace(clip, grad_clip=0.0), params,
                   [first, rescaled], [1.0, 1.0]).params
  np.testing.assert_allclose(_flat(got), _flat(by_hand), rtol=1e-6)
  # Adam (b 0.9, 0.999) at rate 1 from 0: the first step is -0.6 / (0.6 +
  # 1e-8) ~ -1; the second m = 0.9 * 0.06 + 0.1 * 3 = 0.354, v = 0.999 *
  # 3.6e-4 + 0.001 * 9 = 0.00935964, bias-corrected 0.354 / 0.19 over
  # sqrt(0.00935964 / 0.001999): 0.861046. The same for "b" (4/3 of "a").
  # (float32's 1 - 0.999^2 is good to 1e-5.)
  np.testing.assert_allclose(_flat(got), [-1.8610462, -1.8610462],
                             rtol=2e-5)
  # Not clipped, the huge gradient makes another step (0.744 after 1).
  unclipped = _steps(dataclasses.replace(clip, grad_clip=0.0), params,
                     [first, huge], [1.0, 1.0]).params
  np.testing.assert_allclose(_flat(unclipped), [-1.7442707, -1.7442707],
                             rtol=2e-5)
  # Below the norm, clipping changes nothing.
  small = _steps(dataclasses.replace(clip, grad_clip=1e3), params,
                 [first, rescaled], [1.0, 1.0]).params
  np.testing.assert_array_equal(_flat(small), _flat(by_hand))
  # The state is the unclipped optimizer's: checkpoints of either restore
  # into either (`load_params` restores into the default's).
  assert jax.tree_util.tree_structure(_state(params, clip).opt_state) == \
      jax.tree_util.tree_structure(_state(params, TrainConfig()).opt_state)


def _grads(seed, n):
  """`n` gradients of the tree `_params`' shape; the third is huge."""
  rng = np.random.RandomState(seed)
  out = []
  for i in range(n):
    scale = 1000.0 if i == 2 else 0.5
    out.append({"w": jnp.asarray(rng.randn(3, 2) * scale, jnp.float32),
                "b": jnp.asarray(rng.randn(4) * scale, jnp.float32)})
  return out


def _params():
  rng = np.random.RandomState(7)
  return {"w": jnp.asarray(rng.randn(3, 2), jnp.float32),
          "b": jnp.asarray(rng.randn(4), jnp.float32)}


@pytest.mark.parametrize("grad_clip", [0.0, 5.0])
def test_b2_clipping_and_no_weight_decay_reach_optax(grad_clip):
  """Weight decay 0 is Adam, bit for bit; b2 is Adam's: several steps
  (the first is b2's alone only after bias correction) against
  `optax.adam(schedule, b2=...)` itself, after `clip_by_global_norm`
  where clipping is on (the third gradient is then huge)."""
  config = TrainConfig(num_steps=5, warmup_steps=2, learning_rate=1.0,
                       schedule="noam", adam_b2=0.95, weight_decay=0.0,
                       grad_clip=grad_clip)
  rates = train.learning_rates(config, 16)
  grads = _grads(0, 5)
  if not grad_clip:
    grads[2] = jax.tree_util.tree_map(lambda g: g / 1000, grads[2])
  got = _steps(config, _params(), grads, rates)
  tx = optax.adam(lambda count: jnp.asarray(rates)[count], b2=0.95)
  if grad_clip:
    tx = optax.chain(optax.clip_by_global_norm(grad_clip), tx)

  @jax.jit
  def step(params, opt_state, g):  # compiled, as `train_step` is
    updates, opt_state = tx.update(g, opt_state, params)
    return optax.apply_updates(params, updates), opt_state

  params, opt_state = _params(), tx.init(_params())
  for g in grads:
    params, opt_state = step(params, opt_state, g)
  for a, b in zip(jax.tree_util.tree_leaves(got.params),
                  jax.tree_util.tree_leaves(params)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  # ... and b2 matters: the default's steps differ; so does clipping.
  for other in (dict(adam_b2=0.999), dict(grad_clip=0.0 if grad_clip
                                          else 0.5)):
    steps = _steps(dataclasses.replace(config, **other), _params(), grads,
                   rates)
    assert np.abs(_flat(steps.params) - _flat(params)).max() > 1e-3, other


@pytest.mark.parametrize("options", [
    dict(schedule="noam", grad_clip=5.0, adam_b2=0.998, weight_decay=0.0),
    dict(schedule="noam", grad_clip=2.0, adam_b2=0.9, weight_decay=0.01),
    dict(schedule="cosine", grad_clip=0.0, adam_b2=0.99, weight_decay=0.1),
    dict()])
def test_twin_agrees_with_the_optimizer(options):
  """`train.apply_gradients` (the update of `train_step`) and its twin
  `train_reference.adam_update`, step by step; the third gradient is huge
  (clipped where clipping is on)."""
  config = TrainConfig(num_steps=6, warmup_steps=2, learning_rate=1.0,
                       **options)
  if config.schedule == "cosine":
    config = dataclasses.replace(config, learning_rate=0.05)
  rates = train.learning_rates(config, 16)
  grads = _grads(1, 6)
  state = _state(_params(), config)
  twin = _flat(_params()).tolist()
  twin_state = train_reference.AdamState(len(twin))
  for step, g in enumerate(grads):
    state = _apply(state, g, rates[step])
    twin = train_reference.adam_update(
        twin, _flat(g), twin_state, float(rates[step]), b2=config.adam_b2,
        weight_decay=config.weight_decay, grad_clip=config.grad_clip)
    np.testing.assert_allclose(_flat(state.params), twin, rtol=1e-5,
                               atol=2e-6)
  # The twin's settings are the optimizer's: another b2 (or no clipping)
  # would not agree.
  other = _flat(_params()).tolist()
  other_state = train_reference.AdamState(len(other))
  for step, g in enumerate(grads):
    other = train_reference.adam_update(
        other, _flat(g), other_state, float(rates[step]),
        b2=0.5 * config.adam_b2, weight_decay=config.weight_decay)
  assert np.abs(_flat(state.params) - np.asarray(other)).max() > 1e-3


def test_train_step_is_clip_then_adam_on_the_noam_schedule():
  """`train_step` under App. B.1's options (clipping made to bite) is
  `optax.chain(clip_by_global_norm, adam(noam, b2))` (to float32's
  rounding: the two are compiled apart, and Adam's near-zero gradients
  tell their last bits apart); not clipping is far from it."""
  from flax.training import train_state  # pylint: disable=g-import-not-at-top
  model_config = models.Seq2SeqConfig(
      vocab_size=7, d_model=16, num_heads=2, d_ff=24, num_layers=1,
      dropout=0.0, num_buckets=8, max_distance=16, max_input_len=6,
      max_target_len=5)
  model, params = models.init_params(model_config, jax.random.PRNGKey(3))
  rng = np.random.RandomState(0)
  targets = rng.randint(1, 7, (4, 5))
  batch = {"encoder_input_tokens": jnp.asarray(rng.randint(2, 7, (4, 6))),
           "decoder_input_tokens": jnp.asarray(
               np.pad(targets, ((0, 0), (1, 0)))[:, :-1]),
           "decoder_target_tokens": jnp.asarray(targets),
           "decoder_loss_weights": jnp.ones((4, 5), jnp.float32)}
  config = TrainConfig(num_steps=3, warmup_steps=2, learning_rate=1.0,
                       schedule="noam", grad_clip=0.05, adam_b2=0.998,
                       weight_decay=0.0)
  rates = train.learning_rates(config, model_config.d_model)

  def loss(p):
    logits = model.apply({"params": p}, batch["encoder_input_tokens"],
                         batch["decoder_input_tokens"])
    return train.loss_fn(logits, batch["decoder_target_tokens"],
                         batch["decoder_loss_weights"])[0]

  assert optax.tree.norm(jax.grad(loss)(params)) > 4 * config.grad_clip

  @jax.jit
  def reference_step(state):  # one compile, as `train_step`
    return state.apply_gradients(grads=jax.grad(loss)(state.params))

  state = train_state.TrainState.create(
      apply_fn=model.apply, params=params, tx=train.make_optimizer(config))
  adam = optax.adam(lambda count: jnp.asarray(rates)[count], b2=0.998)
  want, unclipped = (train_state.TrainState.create(
      apply_fn=model.apply, params=params, tx=tx) for tx in (
          optax.chain(optax.clip_by_global_norm(config.grad_clip), adam),
          adam))
  for step in range(config.num_steps):
    state, _ = train.train_step(state, batch, jax.random.PRNGKey(0),
                                rates[step])
    want, unclipped = reference_step(want), reference_step(unclipped)
  np.testing.assert_allclose(_flat(state.params), _flat(want.params),
                             rtol=1e-4, atol=1e-4)
  assert np.abs(_flat(state.params) - _flat(unclipped.params)).max() > 0.05


def test_zhou_optimizer_gin_after_model_3layer(clear_gin):  # pylint: disable=unused-argument
  """gin/experiments/zhou_optimizer.gin, after model_3layer.gin: App.
  B.1's optimizer on its model (d_model 256: the peak ~1.8e-3 at step
  5,000), the rest of model_3layer.gin's training kept."""
  import gin  # pylint: disable=g-import-not-at-top
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  gin.parse_config_files_and_bindings(
      [os.path.join(root, "gin", "experiments", name)
       for name in ("model_3layer.gin", "zhou_optimizer.gin")], [])
  config, model_config = TrainConfig(), models.Seq2SeqConfig()
  assert dataclasses.replace(config, num_steps=ZHOU.num_steps) == \
      dataclasses.replace(ZHOU, batch_size=128, checkpoint_every=1000)
  rates = train.learning_rates(dataclasses.replace(config, num_steps=50000),
                               model_config.d_model)
  assert int(np.argmax(rates)) == 4999
  assert rates[4999] == pytest.approx(1.7677670e-3, rel=1e-6)
