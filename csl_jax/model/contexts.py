"""Context ids of CSL's model p(r | r_p, i) (Qiu et al., 2022, Eq. 3-4).

Context 0 is the root; (parent rule r, NT index i) has id
1 + offset[r] + (i - 1), with offset the running count of NTs before r.
"""

import numpy as np


ROOT = 0


def context_index(rules, max_nts: int) -> np.ndarray:
  """[R, max_nts] int32: the context id of (rule, NT i + 1); -1 past its
  NTs."""
  out = np.full((len(rules), max(max_nts, 1)), -1, np.int32)
  next_id = 1
  for r, rule in enumerate(rules):
    for i in range(rule.num_nts):
      out[r, i] = next_id
      next_id += 1
  return out


def num_contexts(rules) -> int:
  return 1 + sum(r.num_nts for r in rules)


def describe(rules, ctx: int) -> str:
  """A context as text, for logs and reports."""
  if ctx == ROOT:
    return "ROOT"
  seen = 1
  for rule in rules:
    if ctx < seen + rule.num_nts:
      return f"{rule} @ NT_{ctx - seen + 1}"
    seen += rule.num_nts
  raise ValueError(f"no context {ctx}")
