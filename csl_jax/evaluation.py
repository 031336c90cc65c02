"""Exact match: the one definition every method and report shares.

Strings are compared after `normalize` (bytes decoded, whitespace folded),
and accuracies are percentages (0-100), as in the papers' tables.
"""

from typing import Dict, Optional, Sequence, Union

Text = Union[str, bytes]


def normalize(text: Text) -> str:
  """Decodes bytes and collapses whitespace, so "A  B " equals "A B"."""
  if isinstance(text, bytes):
    text = text.decode("utf-8")
  return " ".join(text.split())


def matches(target: Optional[Text], prediction: Optional[Text]) -> bool:
  """Exact match up to whitespace; a missing prediction (None) never does."""
  if target is None or prediction is None:
    return False
  return normalize(target) == normalize(prediction)


def exact_match(targets: Sequence[Text],
                predictions: Sequence[Text]) -> Dict[str, float]:
  """Percentage of predictions equal to their target, up to whitespace."""
  if len(targets) != len(predictions):
    raise ValueError(f"{len(targets)} targets but {len(predictions)} "
                     "predictions")
  if not targets:
    return {"exact_match": float("nan")}
  hits = sum(matches(t, p) for t, p in zip(targets, predictions))
  return {"exact_match": 100.0 * hits / len(targets)}
