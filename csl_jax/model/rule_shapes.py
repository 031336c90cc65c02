"""Optional tying of p(r | s) across rules of the same shape.

CSL's p(r | s) (Qiu et al., 2022, Eq. 4) gives every rule its own weight in
every context state. On SCAN addprim_jump, `jump` occurs only alone, so the
maximum-likelihood model confines `jump ### I_JUMP` to the root's state and
never samples it inside a composition, which is the recombination that the
augmentation is for; with |S| = 2 states shared by force the model does
recombine it, but cannot keep SCAN's modifiers apart (`walk twice twice`).

Tying factors p(r | s) = p(shape(r) | s) * p(r | shape(r)): states choose a
shape (the rule with each terminal replaced by a placeholder, e.g.
`t ### T` for `jump ### I_JUMP` and `walk ### I_WALK`), and the choice among
rules of one shape is shared by every state: words of one shape are
interchangeable in every context, with their overall frequencies. This is
class-based smoothing (Brown et al., 1992) applied to QCFG rules.
"""

from typing import Dict, List, Sequence, Tuple

import jax
import jax.numpy as jnp
import numpy as np

from csl_jax.model import inside
from csl_jax.qcfg.rules import Rule, nt_index

SOURCE_TERMINAL = "t"
TARGET_TERMINAL = "T"


def _side(tokens, terminal: str) -> str:
  return " ".join(t if nt_index(t) else terminal for t in tokens)


def shape(rule: Rule) -> str:
  """`NT_1 t ### T NT_1` for `NT_1 left ### I_TURN_LEFT NT_1`."""
  return (f"{_side(rule.source, SOURCE_TERMINAL)} ### "
          f"{_side(rule.target, TARGET_TERMINAL)}")


def shape_classes(rules: Sequence[Rule]) -> Tuple[np.ndarray, List[str]]:
  """([R] int32 class of each rule, the classes' shapes in first-seen
  order)."""
  ids: Dict[str, int] = {}
  out = np.array([ids.setdefault(shape(r), len(ids)) for r in rules],
                 np.int32)
  return out, list(ids)


def tied_rule_logits(shape_logits: jnp.ndarray, lexical_logits: jnp.ndarray,
                     rule_class: jnp.ndarray) -> jnp.ndarray:
  """[S, R] log p(r | s) = log p(shape | s) + log p(r | shape), usable as
  the logits theta_{s, r} of the untied model."""
  totals = inside.segment_logsumexp(lexical_logits, rule_class,
                                    shape_logits.shape[1])
  log_within = lexical_logits - totals[rule_class]
  return (jax.nn.log_softmax(shape_logits, axis=1)[:, rule_class]
          + log_within[None, :])
