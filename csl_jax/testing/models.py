"""Small CSL models with random parameters, for tests."""

from typing import Sequence

import numpy as np

from csl_jax.model import contexts
from csl_jax.model.csl_model import CSLModel
from csl_jax.qcfg.rules import Rule, parse_rules

# A tiny QCFG whose derivations can be counted by hand (`walk twice and run`).
TOY_RULES = parse_rules("""\
NT_1 twice ### NT_1 NT_1
NT_1 and NT_2 ### NT_1 NT_2
walk ### W
run ### R
""")
# An output CFG of TOY_RULES' outputs (text for parse_output_cfg).
TOY_OUTPUT_CFG = "Q -> A | A A | A B\nA -> W\nB -> R\n"


def random_model(rules: Sequence[Rule], seed: int = 0, num_states: int = 2,
                 max_nts: int = 2) -> CSLModel:
  """A model over `rules` with standard-normal logits drawn from `seed`."""
  rng = np.random.default_rng(seed)
  params = {"rule": rng.normal(size=(num_states, len(rules))),
            "context": rng.normal(size=(contexts.num_contexts(rules),
                                        num_states))}
  return CSLModel.from_params(rules, params, max_nts, num_states)
