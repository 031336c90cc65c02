"""Fitting CSL's parameters: maximize log p(x, y) over the forests (Adam).

Forests are built once by the Numba CKY core; the inside pass is jitted JAX.
Training stops at `num_steps` or when the loss has not improved by
`tolerance` (relative) for `patience` passes. Checkpoints (params, optimizer
state, step, loss history and the fingerprint of the rules, data, max_nts and
config) are written atomically as msgpack; a run resumes from one only if the
fingerprint matches, and then ends with the same parameters, bit for bit, as
an uninterrupted run.
"""

import collections
import dataclasses
import functools
import hashlib
import json
import os
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from absl import logging
import flax.serialization
import gin
import jax
import jax.numpy as jnp
import numpy as np
import optax

from csl_jax import configs
from csl_jax.cky import forest as forest_lib
from csl_jax.cky import forest_shards
from csl_jax.cky.grammar_arrays import encode_qcfg
from csl_jax.errors import InputError
from csl_jax.files import atomic_write_bytes
from csl_jax.model import contexts
from csl_jax.model import inside
from csl_jax.model import rule_shapes
from csl_jax.model.forest_arrays import Layout, PaddedForests, common_shape
from csl_jax.model.source_forests import source_forest_batch
from csl_jax.qcfg.rules import Rule, format_rule
from csl_jax.stop_request import StopRequest


@gin.configurable
@dataclasses.dataclass(frozen=True)
class FitConfig:
  num_states: int = 2  # |S|; the paper uses 2-4 for SCAN, 32-64 otherwise
  learning_rate: float = 0.05
  num_steps: int = 2000
  batch_size: int = 0  # distinct examples per step; 0: all in one batch
  init_scale: float = 0.1
  seed: int = 0
  batch_rule_normalizer: bool = False  # p(r|s) over the batch's rules
  tolerance: float = 1e-5  # relative loss gain over `patience` passes
  patience: int = 100
  checkpoint_every: int = 200
  max_unary: int = 2  # unary-source chains unrolled for log p(x)
  # Start from several initializations, keep the one with the lowest loss
  # after `restart_steps`: the likelihood has poor local optima (SCAN: a
  # basin, decided early, in which p(y | x) stays ambiguous; BENCHMARKS
  # "Issue 4 — CSL's parametric model and parser", "Why several
  # initializations").
  num_restarts: int = 8
  restart_steps: int = 50
  # p(r | s) = p(shape(r) | s) p(r | shape(r)): rules of one shape (e.g.
  # all `t ### T` words) share their context preferences (rule_shapes.py).
  tie_rule_shapes: bool = False

  def __post_init__(self):
    configs.check_types(self)
    configs.check_ranges(
        self, num_states=configs.AT_LEAST_ONE,
        learning_rate=configs.POSITIVE_FINITE,
        num_steps=configs.AT_LEAST_ONE, batch_size=configs.NON_NEGATIVE,
        init_scale=configs.NON_NEGATIVE_FINITE,
        tolerance=configs.NON_NEGATIVE_FINITE,
        patience=configs.AT_LEAST_ONE, checkpoint_every=configs.AT_LEAST_ONE,
        max_unary=configs.NON_NEGATIVE, num_restarts=configs.AT_LEAST_ONE,
        restart_steps=configs.NON_NEGATIVE)


def init_params(num_rules: int, num_contexts: int, num_states: int,
                scale: float, seed: int, num_shapes: Optional[int] = None
                ) -> Dict[str, np.ndarray]:
  """theta_{s, r} ("rule") and theta_{r_p, i, s} ("context"); with
  `num_shapes`, "rule" is theta_{s, shape} and "lexical" the within-shape
  logits. NumPy arrays: the jitted step takes them as they are (no
  conversion program to compile)."""
  rng = np.random.default_rng(seed)
  params = {
      "rule": (scale * rng.standard_normal(
          (num_states, num_shapes or num_rules))).astype(np.float32),
      "context": (scale * rng.standard_normal(
          (num_contexts, num_states))).astype(np.float32),
  }
  if num_shapes:
    params["lexical"] = (scale * rng.standard_normal(num_rules)).astype(
        np.float32)
  return params


def _init_state(optimizer, params):
  """`optimizer.init(params)` as NumPy zeros: optax builds its state with
  eager JAX ops, a small program each to compile on a first run. Adam's
  state is zeros (moments and step count)."""
  shapes = jax.eval_shape(optimizer.init, params)
  return jax.tree_util.tree_map(lambda s: np.zeros(s.shape, s.dtype), shapes)


def untied(params, rule_class) -> Dict[str, jnp.ndarray]:
  """The model as per-rule logits {"rule": [S, R], "context"}."""
  if "lexical" not in params:
    return params
  return {"rule": rule_shapes.tied_rule_logits(
      params["rule"], params["lexical"], rule_class),
          "context": params["context"]}


# XLA's CPU backend (jaxlib 0.10) hands reductions to YNNPACK, whose split
# of a long reduction over the intra-op threads differs between one thread
# and several: the README main command's fit under `taskset -c 0` (or on a
# 1-CPU machine) ended with parameters slightly off the 2-core box's, and
# its synthetic.tsv in another order. XLA's own reduction loops add in an
# order fixed at compile time on any number of threads, and the SCAN fit's
# steps ran faster with them on 2 cores (BENCHMARKS.md "Issue 17 → A fit's
# bytes on any number of threads"). So every program of the fit is compiled
# with YNNPACK for dots only (of the default's dots, convolutions and
# reductions: the fit has no dot or convolution). The persistent compilation
# cache keys these options: no program compiled without them is reused.
FIT_COMPILER_OPTIONS = {
    "xla_cpu_experimental_ynn_fusion_type":
        "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT"}
fit_jit = functools.partial(jax.jit, compiler_options=FIT_COMPILER_OPTIONS)

# One compiled program, not ~20 eager ones (a first run compiles each).
_untied_jit = fit_jit(untied)


class Dataset:
  """Distinct training pairs with counts, their forests and batches.

  Pairs longer than max_source_len / max_target_len tokens (pair forests
  grow as n^2 m^2: one 5,000-token line exhausts memory) are an InputError
  naming `source` and the pair's 1-based number, or with `skip_too_long`
  are left out and counted in `num_too_long`.
  """

  def __init__(self, rules: Sequence[Rule], pairs, max_nts: int,
               batch_size: int = 0, *,
               max_source_len: int = forest_lib.DEFAULT_MAX_SOURCE_LEN,
               max_target_len: int = forest_lib.DEFAULT_MAX_TARGET_LEN,
               skip_too_long: bool = False, source: Optional[str] = None,
               forest_builder: Optional[Callable] = None):
    """`forest_builder(grammar, pairs, rules)` -> ForestBatch replaces the
    one-call build (e.g. `forest_shards.build_sharded`)."""
    pairs = _within_bounds(pairs, max_source_len, max_target_len,
                           skip_too_long, source)
    self.num_too_long = pairs.num_too_long
    counts = collections.Counter((tuple(x), tuple(y)) for x, y in pairs)
    self.pairs = sorted(counts)
    self.counts = np.array([counts[p] for p in self.pairs], np.float32)
    self.grammar = encode_qcfg(rules, max_nts)
    self.ctx_index = contexts.context_index(rules, self.grammar.max_nts)
    start = time.time()
    if forest_builder:
      self.forests = forest_builder(self.grammar, self.pairs, rules)
    else:
      self.forests = forest_shards.build_in_pieces(
          self.grammar, self.pairs, "fit forests")
    self.forest_seconds = time.time() - start
    derivable = np.diff(self.forests.node_offsets) > 0
    self.usable = np.flatnonzero(derivable)
    self.num_underivable = int((~derivable).sum())
    size = batch_size or max(len(self.usable), 1)
    chunks = [self.usable[i:i + size]
              for i in range(0, len(self.usable), size)]
    # One shape for every batch: one compiled training step, not one per
    # batch (a compile costs more than the padding; BENCHMARKS "Issue 17 →
    # COGS fit").
    layouts = [Layout(self.forests, c, self.ctx_index) for c in chunks]
    shape = common_shape([l.shape() for l in layouts])
    self.batches: List[PaddedForests] = [
        l.pad(self.counts[c], shape)
        for l, c in zip(layouts, chunks, strict=True)]
    # From the batches' own edges (padding edges carry rule 0, in no
    # derivation: they would put it in every batch's normalizer).
    self.rule_masks = [np.bincount(l.edge_rule, minlength=len(rules)) > 0
                       for l in layouts]


class _Kept(list):
  """Pairs within the length bounds; `num_too_long` were left out."""
  num_too_long = 0


def _within_bounds(pairs, max_source_len: int, max_target_len: int,
                   skip_too_long: bool, source: Optional[str]) -> _Kept:
  kept = _Kept()
  for i, (x, y) in enumerate(pairs):
    if len(x) <= max_source_len and len(y) <= max_target_len:
      kept.append((x, y))
    elif skip_too_long:
      kept.num_too_long += 1
    else:
      raise InputError(
          f"example {i + 1} has {len(x)} input and {len(y)} output tokens, "
          f"more than the bound {max_source_len}/{max_target_len} (raise "
          "max_source_len/max_target_len or skip such examples with "
          "skip_too_long)", source, i + 1)
  return kept


# FitConfig fields that do not change the fitted parameters: a checkpoint
# written under other values is still resumed (`max_unary` only matters to
# `average_log_likelihoods`).
_BOOKKEEPING_FIELDS = ("checkpoint_every", "max_unary")


def fingerprint(rules: Sequence[Rule], data: Dataset, max_nts: int,
                config: FitConfig) -> str:
  """sha256 of everything that determines `fit`'s result: the rules in
  order (they index the parameters), the distinct pairs with their counts,
  `max_nts` and the config less `_BOOKKEEPING_FIELDS`."""
  settings = {k: v for k, v in dataclasses.asdict(config).items()
              if k not in _BOOKKEEPING_FIELDS}
  key = {"rules": [format_rule(r) for r in rules],
         "pairs": [[" ".join(x), " ".join(y), int(c)]
                   for (x, y), c in zip(data.pairs, data.counts, strict=True)],
         "max_nts": max_nts, "config": settings}
  return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def _main_start(config: FitConfig) -> int:
  """The step at which the single-model loop starts (after `_restarts`)."""
  return min(config.restart_steps, config.num_steps) \
      if config.num_restarts > 1 else 0


def _pass_means(history, num_batches: int, start: int, end: int
                ) -> List[float]:
  """The convergence test's per-pass mean losses after steps start+1..end,
  as `fit`'s loop computes them (history[i] is step i + 1)."""
  return [float(np.mean([l for _, l in history[s - num_batches:s]]))
          for s in range(start + 1, end + 1) if s % num_batches == 0]


def _converged(epochs: List[float], config: FitConfig) -> bool:
  """The last `patience` passes gained less than `tolerance` (relative)."""
  if len(epochs) <= config.patience:
    return False
  gain = epochs[-config.patience - 1] - epochs[-1]
  return gain < config.tolerance * max(abs(epochs[-1]), 1.0)


def _loss(params, forests, rule_mask, rule_class):
  ll = inside.log_likelihood(untied(params, rule_class), forests, rule_mask)
  w = forests.weights
  return -(w * ll).sum() / jnp.maximum(w.sum(), 1.0)


def _as_jax(p: PaddedForests):
  return jax.tree_util.tree_map(jnp.asarray, p)


def fit(rules: Sequence[Rule], pairs, config: FitConfig, max_nts: int = 4,
        checkpoint: Optional[str] = None,
        on_step: Optional[Callable[[int, float], None]] = None, **bounds):
  """Returns (params, history of (step, loss), dataset); params are
  per-rule logits {"rule": [S, R], "context": [C, S]} (see `untied`).
  `bounds`: max_source_len, max_target_len, skip_too_long, source (see
  `Dataset`; the dataset's `num_too_long` counts skipped pairs) and
  forest_builder."""
  data = Dataset(rules, pairs, max_nts, config.batch_size, **bounds)
  if not len(data.usable):
    raise InputError("the grammar derives none of the training pairs "
                     "(was it induced from this data?)")
  optimizer = optax.adam(config.learning_rate)
  rule_class, num_shapes = None, None
  if config.tie_rule_shapes:
    classes, shapes = rule_shapes.shape_classes(rules)
    rule_class, num_shapes = jnp.asarray(classes), len(shapes)
  params = init_params(len(rules), contexts.num_contexts(rules),
                       config.num_states, config.init_scale, config.seed,
                       num_shapes)
  opt_state = _init_state(optimizer, params)
  step = 0
  history: List[Tuple[int, float]] = []
  key = fingerprint(rules, data, max_nts, config)
  if checkpoint and os.path.exists(checkpoint):
    with open(checkpoint, "rb") as f:
      try:
        state = flax.serialization.msgpack_restore(f.read())
      except ValueError:  # torn or not msgpack: as another run's, redone
        state = None
    if not isinstance(state, dict):
      state = {}
    if state.get("fingerprint") == key:
      params = {k: jnp.asarray(state["params"][k]) for k in params}
      opt_state = flax.serialization.from_state_dict(opt_state,
                                                     state["opt_state"])
      step = int(state["step"])
      history = [(int(s), l) for s, l in
                 np.asarray(state["history"]).reshape(-1, 2).tolist()]
      logging.info("resumed from %s at step %d", checkpoint, step)
    else:
      # Another grammar, data or config: its parameters are not this fit's.
      logging.warning("ignoring %s: written for other rules, data or "
                      "config; starting afresh", checkpoint)
  elif checkpoint:
    # Said, not left to the stage cache's "resuming": a run killed during
    # the restarts (never checkpointed) is redone from step 0 here. Worded
    # to be true of a fresh run too, which cannot be told apart.
    logging.info("fit: starting at step 0, no checkpoint at %s%s",
                 checkpoint, f" (the restarts, steps 1-{_main_start(config)}"
                 f", write none: a run stopped in them starts again)"
                 if config.num_restarts > 1 else "")

  use_mask = config.batch_rule_normalizer
  train_step = functools.partial(
      _train_step, rule_class=rule_class,
      learning_rate=np.float32(config.learning_rate), use_mask=use_mask)

  batches = [_as_jax(b) for b in data.batches]
  masks = [jnp.asarray(m) for m in data.rule_masks]
  # Per-pass mean losses of the single-model loop; on resume, recomputed
  # from the history exactly as the loop computed them (same floats).
  epochs = _pass_means(history, len(batches), _main_start(config), step)

  def save(step):
    if checkpoint:
      atomic_write_bytes(checkpoint, flax.serialization.msgpack_serialize({
          "fingerprint": key,
          "params": {k: np.asarray(v) for k, v in params.items()},
          "opt_state": flax.serialization.to_state_dict(opt_state),
          "step": step, "history": np.asarray(history, np.float64)}))

  def finished(step):
    # A checkpoint written when the run converged is final.
    return (step > _main_start(config) and step % len(batches) == 0 and
            _converged(epochs, config))

  if step < config.num_steps and not finished(step):
    # Compiling the step takes most of the time before the first one (COGS:
    # BENCHMARKS "Issue 10 → A pass over progress, TensorBoard and
    # resuming"): said, not a silent wait.
    logging.info("fit: forests of %d distinct pairs in %.1fs, %d batch(es);"
                 " the first step compiles the training step",
                 len(data.pairs), data.forest_seconds, len(batches))
  if step == 0 and config.num_restarts > 1:
    # Not checkpointed: a run killed in here starts again from step 0.
    params, opt_state, step = _restarts(rules, config, optimizer, batches,
                                        masks, use_mask, history, on_step,
                                        rule_class, num_shapes)
  done = finished(step)
  # SIGTERM, or a first Ctrl-C, checkpoints the step reached and stops (the
  # restarts above are not checkpointed: there Ctrl-C stops at once).
  with StopRequest(interrupt=True, what="fit") as stop:
    while step < config.num_steps and not done:
      k = step % len(batches)
      params, opt_state, loss = train_step(params, opt_state, batches[k],
                                           masks[k])
      step += 1
      loss = float(loss)
      history.append((step, loss))
      if on_step:
        on_step(step, loss)
      if not np.isfinite(loss):
        raise FloatingPointError(f"loss is {loss} at step {step}")
      # One pass over all batches is the unit of convergence: stop when the
      # last `patience` passes improved the loss by less than `tolerance`
      # (relative).
      if k == len(batches) - 1:
        epochs.append(float(np.mean([l for _, l in history[-len(batches):]])))
        if _converged(epochs, config):
          logging.info("converged at step %d (loss %.6f)", step, epochs[-1])
          break
      if step % config.checkpoint_every == 0:
        save(step)
      if stop.requested and step < config.num_steps:
        save(step)
        stop.stop(step)
    save(step)
  if rule_class is not None:
    params = _untied_jit(params, rule_class)
  return params, history, data


# The jitted steps live at module level, keyed on their static settings, so
# that fits in one process (resumes, hard-EM refits, tests) share compiles.
# The learning rate is an argument, not a static setting: a sweep over it
# (or a rerun with another) reuses the compiled step.
@functools.partial(fit_jit, static_argnames=("use_mask",))
def _train_step(params, opt_state, forests, rule_mask, rule_class,
                learning_rate, *, use_mask):
  loss, grads = jax.value_and_grad(_loss)(
      params, forests, rule_mask if use_mask else None, rule_class)
  updates, opt_state = optax.adam(learning_rate).update(grads, opt_state,
                                                        params)
  return optax.apply_updates(params, updates), opt_state, loss


def _restarts(rules, config, optimizer, batches, masks, use_mask, history,
              on_step, rule_class, num_shapes):
  """Trains `num_restarts` initializations for `restart_steps` steps;
  returns the best one's (params, opt_state, step).

  Each initialization takes `_train_step` in turn: the fit compiles one
  program, not a second vmapped one, and on CPU the turns are faster than
  the vmapped step (BENCHMARKS "Issue 17 → The first run's JAX programs")."""
  train_step = functools.partial(
      _train_step, rule_class=rule_class,
      learning_rate=np.float32(config.learning_rate), use_mask=use_mask)
  params = [init_params(len(rules), contexts.num_contexts(rules),
                        config.num_states, config.init_scale,
                        config.seed * 1000 + r, num_shapes)
            for r in range(config.num_restarts)]
  opt_states = [_init_state(optimizer, p) for p in params]
  step = 0
  recent = []
  while step < min(config.restart_steps, config.num_steps):
    k = step % len(batches)
    losses = []
    for r in range(config.num_restarts):  # dispatched before any is read
      params[r], opt_states[r], loss = train_step(params[r], opt_states[r],
                                                  batches[k], masks[k])
      losses.append(loss)
    step += 1
    recent.append(np.array([float(l) for l in losses]))
    best_loss = float(np.min(recent[-1]))
    history.append((step, best_loss))
    if on_step:
      on_step(step, best_loss)
  # Judge on a full pass over the batches.
  judged = np.mean(recent[-len(batches):], axis=0)
  best = int(np.argmin(judged))
  logging.info("restarts: losses %s, keeping %d",
               np.round(judged, 4).tolist(), best)
  return params[best], opt_states[best], step


def average_log_likelihoods(
    params, rules, data: Dataset, pairs, max_unary: int = 2,
    max_source_len: int = forest_lib.DEFAULT_MAX_SOURCE_LEN,
    max_target_len: int = forest_lib.DEFAULT_MAX_TARGET_LEN
    ) -> Dict[str, float]:
  """Mean log p(x, y) and log p(y | x) over derivable `pairs` (Table 8).

  Pairs over the length bounds are left out (these are figures, not
  training) and counted in "num_too_long".
  """
  grammar = data.grammar
  pairs = _within_bounds(pairs, max_source_len, max_target_len, True, None)
  batch = forest_shards.build_in_pieces(grammar, pairs,
                                        "log-likelihood forests")
  ok = [b for b in range(len(pairs))
        if batch.node_offsets[b + 1] > batch.node_offsets[b]]
  if not ok:
    return {"log_p_xy": float("nan"), "log_p_y_given_x": float("nan"),
            "num_derivable": 0, "num_too_long": pairs.num_too_long}
  sources = source_forest_batch(grammar, [" ".join(pairs[b][0]) for b in ok],
                                max_unary)
  joint, marginal = _score(params, [(batch, ok),
                                    (sources, list(range(len(ok))))],
                           data.ctx_index)
  return {"log_p_xy": float(np.mean(joint)),
          "log_p_y_given_x": float(np.mean(joint - marginal)),
          "num_derivable": len(ok), "num_too_long": pairs.num_too_long}


_log_likelihood_jit = fit_jit(inside.log_likelihood)


def _score(params, groups, ctx_index, chunk: int = 4096):
  """log p of each example of each (forest batch, examples) group, in
  chunks padded to one shape (one compiled pass for all)."""
  layouts = [[Layout(batch, examples[i:i + chunk], ctx_index)
              for i in range(0, len(examples), chunk)]
             for batch, examples in groups]
  shape = common_shape([l.shape() for group in layouts for l in group])
  out = []
  for group in layouts:
    scores = [np.asarray(_log_likelihood_jit(params, _as_jax(
        l.pad(np.ones(len(l.roots)), shape))))[:len(l.roots)]
              for l in group]
    out.append(np.concatenate(scores))
  return out
