"""Exact-match and BLEU metrics and the postprocessor for the SeqIO tasks.

`normalize`, `exact_match` and `bleu` are `csl_jax.evaluation`'s,
re-exported so that every method reports the same number.
"""

from typing import Any, Union

from csl_jax.evaluation import bleu, exact_match, normalize

__all__ = ["bleu", "exact_match", "normalize", "strip_text"]


def strip_text(output: Union[str, bytes], example: Any = None,
               is_target: bool = False) -> str:
  """SeqIO postprocess_fn: the normalized text of a prediction or target."""
  del example, is_target  # Same treatment for both.
  return normalize(output)
