"""Inside scores of packed forests under CSL's model, in JAX (log space).

p(r | r_p, i) = sum_s p(r | s) p(s | r_p, i) (Eq. 4), so the inside score of
a node is kept per latent state s: beta(v, s) = sum over edges e at v of
p(r_e | s) * prod_i sum_s' p(s' | r_e, i) beta(child_i, s'), and
log p(x, y) = log sum_s p(s | ROOT) beta(root, s). Levels are filled in
order, each a contiguous block (`forest_arrays`). The twin is
`inside_reference.py`.
"""

from typing import Dict, Optional

import jax
import jax.numpy as jnp

from csl_jax.model.contexts import ROOT

NEG = -1e30  # finite "log 0": keeps gradients free of inf - inf


def log_probs(params: Dict[str, jnp.ndarray],
              rule_mask: Optional[jnp.ndarray] = None):
  """(log p(r | s) [S, R], log p(s | context) [C, S]). With `rule_mask`, the
  p(r | s) normalizer runs over the masked rules only (paper B.2's batch
  approximation for large grammars)."""
  logits = params["rule"]
  if rule_mask is not None:
    logits = jnp.where(rule_mask[None, :], logits, NEG)
  return (jax.nn.log_softmax(logits, axis=1),
          jax.nn.log_softmax(params["context"], axis=1))


def segment_logsumexp(scores, segments, num_segments):
  """logsumexp of `scores` within each segment (empty ones: about NEG)."""
  top = jax.ops.segment_max(scores, segments, num_segments)
  top = jax.lax.stop_gradient(jnp.where(jnp.isfinite(top), top, NEG))
  total = jax.ops.segment_sum(jnp.exp(scores - top[segments]), segments,
                              num_segments)
  # A non-empty segment sums to >= 1 (its max); empty ones are dummies.
  return top + jnp.log(jnp.maximum(total, 1e-30))


def log_likelihood(params, forests, rule_mask: Optional[jnp.ndarray] = None
                   ) -> jnp.ndarray:
  """log p(x, y) of each example in a `PaddedForests` batch ([B])."""
  log_rule, log_state = log_probs(params, rule_mask)
  beta = jnp.full((forests.num_nodes, log_rule.shape[0]), NEG,
                  log_rule.dtype)
  for e0, e_size, n0, n_size, s0, s_size in forests.blocks:
    rules = forests.edge_rule[e0:e0 + e_size]
    messages = jnp.zeros(e_size, log_rule.dtype)
    if s_size:  # edges with children: one message per child slot
      child = forests.slot_child[s0:s0 + s_size]
      ctx = forests.slot_ctx[s0:s0 + s_size]
      each = jax.nn.logsumexp(
          log_state[jnp.maximum(ctx, 0)] + beta[jnp.maximum(child, 0)],
          axis=-1)
      messages = jax.ops.segment_sum(
          jnp.where(child >= 0, each, 0.0),
          forests.slot_edge[s0:s0 + s_size], e_size)
    scores = log_rule[:, rules].T + messages[:, None]
    fresh = segment_logsumexp(scores, forests.edge_parent[e0:e0 + e_size],
                               n_size)
    beta = jax.lax.dynamic_update_slice(beta, fresh, (n0, 0))
  return jax.nn.logsumexp(log_state[ROOT][None, :] + beta[forests.roots],
                          axis=-1)
