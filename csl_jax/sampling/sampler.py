"""Synthetic (input, output) pairs from a fitted CSL model (paper §3.2).

p(r | s) is re-tempered, p(r | s) ~ exp(theta_{s,r} / T + delta [r has more
than `depth_bias_min_nts` NTs]) (T = inf: uniform over rules, plus the
bias), mixed with p(s | context) as in the model. With an output CFG the
QCFG is intersected with it (`intersection`): derivations are drawn from
the model conditioned on a derivation the CFG annotates (each NT's output
of an output-CFG category), without rejection; `intersect_mode="local"`
draws as the authors' release does (`sample_kernel.expand_with_categories`:
no weighing of what a rule's subtrees can complete to; BENCHMARKS, Issue
17, "Which intersected sampler"). With `intersect=False`, samples the CFG
rejects are dropped and counted instead.
Attempts are capped at `max_attempts_factor` x the number asked for, so
sampling always ends; when that leaves fewer samples than asked (e.g.
`dedup` on a small grammar), the stats say so (`num_short`) and a warning is
logged, never quietly.
"""

import dataclasses
import math
import numbers
import time
from typing import Dict, List, Set, Tuple

from absl import logging
import numpy as np

from csl_jax import progress as progress_lib
from csl_jax.errors import InputError
from csl_jax.model.csl_model import CSLModel
from csl_jax.sampling import intersection
from csl_jax.sampling import sample_kernel
from csl_jax.sampling.config import SampleConfig  # pylint: disable=unused-import


# A round's kernel seed is seed * this + round (the kernel keeps its low 32
# bits: `shards.shard_seed` spaces the shards' rounds apart with it).
ROUND_SEED_MULTIPLIER = 1_000_003

_NO_JOINT = (np.zeros(1, np.int64), np.zeros(0, np.int32),
             np.zeros((0, 1), np.int32), np.zeros((1, 1, 1)), 0,
             np.zeros(1, np.int64), np.zeros(0, np.int32),
             np.zeros(0, np.int32))


def _softmax(logits, axis):
  z = logits - logits.max(axis=axis, keepdims=True)
  e = np.exp(z)
  return e / e.sum(axis=axis, keepdims=True)


def rule_distributions(model: CSLModel, config: SampleConfig
                       ) -> Tuple[np.ndarray, np.ndarray]:
  """(p(r | context) [C, R], the same restricted to NT-free rules)."""
  num_nts = np.array([r.num_nts for r in model.rules])
  bias = config.depth_bias * (num_nts > config.depth_bias_min_nts)
  if math.isinf(config.temperature):
    logits = np.zeros_like(model.rule_logits) + bias
  else:
    logits = model.rule_logits / config.temperature + bias
  p_rule = _softmax(logits, 1)  # S, R
  p_state = _softmax(model.context_logits, 1)  # C, S
  p = p_state @ p_rule
  leaf = p * (num_nts == 0)
  return p, leaf


@dataclasses.dataclass
class SampleResult:
  pairs: List[Tuple[str, str]]
  depths: List[int]
  stats: Dict[str, float]


@dataclasses.dataclass(frozen=True)
class Prepared:
  """What `sample` derives from (model, config, output CFG) apart from the
  seed: built once for many draws (`shards`: one per shard)."""
  p: np.ndarray
  cdf: np.ndarray
  leaf_cdf: np.ndarray
  num_nts: np.ndarray
  src_words: List[str]
  tgt_words: List[str]
  joint: object  # intersection.build's result, or None
  output_cfg: object  # the CFG to reject with (None when intersected)


def prepare(model: CSLModel, config: SampleConfig,
            output_cfg=None, progress: bool = False) -> Prepared:
  """`progress`: the intersection's (`intersection.build`)."""
  g = model.grammar
  p, leaf = rule_distributions(model, config)
  joint = None
  if output_cfg is not None and config.intersect:
    joint = intersection.build(model.rules, output_cfg, p, model.ctx_index,
                               config.max_depth, progress)
    output_cfg = None  # every output is valid by construction
  return Prepared(
      p, np.cumsum(p, axis=1), np.cumsum(leaf, axis=1),
      np.array([r.num_nts for r in model.rules], np.int32),
      sorted(g.source_vocab, key=g.source_vocab.get),
      sorted(g.target_vocab, key=g.target_vocab.get), joint, output_cfg)


def sample(model: CSLModel, num: int, config: SampleConfig,
           output_cfg=None, prepared: Prepared = None,
           progress: bool = False) -> SampleResult:
  """Draws `num` pairs (fewer if attempts run out: stats["num_short"] > 0,
  and a warning). `prepared`: `prepare(model, config, output_cfg)` made
  for a config that differs at most in its seed. `progress`: of the
  intersection and of the pairs drawn (a round of `config.chunk` attempts
  at a time), a line per tenth in a log file."""
  if (not isinstance(num, numbers.Integral) or isinstance(num, bool) or
      num < 1):
    raise InputError(f"the number of samples (--num) must be an integer "
                     f">= 1, got {num!r}")
  config.validate()  # Also for configs built around __post_init__.
  start = time.time()
  g = model.grammar
  prepared = prepared or prepare(model, config, output_cfg, progress)
  p, cdf, leaf_cdf = prepared.p, prepared.cdf, prepared.leaf_cdf
  num_nts = prepared.num_nts
  src_words, tgt_words = prepared.src_words, prepared.tgt_words
  joint, output_cfg = prepared.joint, prepared.output_cfg
  pairs: List[Tuple[str, str]] = []
  depths: List[int] = []
  seen: Set[Tuple[str, str]] = set()
  accepted: Dict[str, bool] = {}
  attempts = failed = rejected = duplicates = ambiguous = 0
  round_ = shown = 0
  bar = progress_lib.progress(total=num, desc="sample", unit="pair",
                              disable=not progress, mininterval=1.0)
  while len(pairs) < num and attempts < config.max_attempts_factor * num:
    want = min(config.chunk, config.max_attempts_factor * num - attempts,
               max(num - len(pairs), 1) * (2 if output_cfg or config.dedup
                                           else 1))
    seed = config.seed * ROUND_SEED_MULTIPLIER + round_
    ok, s, s_off, t, t_off, depth, _, dropped = sample_kernel.sample_batch(
        want, seed, joint is not None, cdf, leaf_cdf, num_nts, p,
        *(_NO_JOINT if joint is None else (
            joint.opt_off, joint.opt_rule, joint.opt_child, joint.z,
            joint.start, joint.rule_opt_off, joint.rule_opt,
            joint.opt_parent)),
        model.ctx_index, g.src_sym, g.src_len, g.tgt_sym, g.tgt_len,
        config.max_depth, config.max_nodes, config.max_len,
        config.intersect_mode == "local")
    round_ += 1
    attempts += want
    for b in np.flatnonzero(ok):
      if len(pairs) == num:
        break
      x = " ".join(src_words[i] for i in s[s_off[b]:s_off[b + 1]])
      y = " ".join(tgt_words[i] for i in t[t_off[b]:t_off[b + 1]])
      if output_cfg is not None:
        if y not in accepted:
          accepted[y] = output_cfg.recognizes(y.split())
        if not accepted[y]:
          rejected += 1
          continue
      if config.dedup:
        if (x, y) in seen:
          duplicates += 1
          continue
        seen.add((x, y))
      pairs.append((x, y))
      depths.append(int(depth[b]))
    failed += int((~ok).sum()) - dropped
    ambiguous += dropped
    bar.update(len(pairs) - shown)  # a round at a time
    shown = len(pairs)
  bar.close()
  num_short = num - len(pairs)
  if num_short:
    # Attempts ran out: say why, so a short file is never a surprise.
    logging.warning(
        "sampled %d of %d pairs (%d short) in %d attempts "
        "(max_attempts_factor=%d): %d duplicates (dedup), %d failed, "
        "%d rejected by the output CFG, %d dropped for their annotations",
        len(pairs), num, num_short, attempts, config.max_attempts_factor,
        duplicates, failed, rejected, ambiguous)
  stats = {
      "num_requested": num, "num_short": num_short,
      "num_samples": len(pairs), "num_attempts": attempts,
      "failed_rate": failed / max(attempts, 1),
      "cfg_rejection_rate": rejected / max(attempts, 1),
      # Intersected: derivations kept with probability 1 / (their number of
      # annotations) and dropped (`intersection`).
      "annotation_drop_rate": ambiguous / max(attempts, 1),
      "duplicate_rate": duplicates / max(attempts, 1),
      "num_distinct_inputs": len({x for x, _ in pairs}),
      "num_distinct_pairs": len(set(pairs)),
      "mean_depth": float(np.mean(depths)) if depths else 0.0,
      "intersected": joint is not None,
      "intersect_mode": config.intersect_mode if joint is not None else None,
      # Why not, where `config.intersect` asked for it: a summary's config
      # says intersect true beside intersected false.
      **({} if joint is not None else {"not_intersected_because": (
          "SampleConfig.intersect is False: outputs outside the CFG are "
          "rejected" if output_cfg is not None else
          "no output CFG (the model has none)")}),
      "seconds": time.time() - start,
  }
  return SampleResult(pairs, depths, stats)
