"""Exact-match metric and its postprocessor for the SeqIO tasks."""

from typing import Any, Dict, Sequence, Union


def normalize(text: Union[str, bytes]) -> str:
  """Decodes bytes and collapses whitespace, so "A  B " equals "A B"."""
  if isinstance(text, bytes):
    text = text.decode("utf-8")
  return " ".join(text.split())


def strip_text(output: Union[str, bytes], example: Any = None,
               is_target: bool = False) -> str:
  """SeqIO postprocess_fn: the normalized text of a prediction or target."""
  del example, is_target  # Same treatment for both.
  return normalize(output)


def exact_match(targets: Sequence[Union[str, bytes]],
                predictions: Sequence[Union[str, bytes]]
                ) -> Dict[str, float]:
  """Percentage of predictions equal to their target, up to whitespace."""
  if len(targets) != len(predictions):
    raise ValueError(f"{len(targets)} targets but {len(predictions)} "
                     "predictions")
  if not targets:
    return {"exact_match": float("nan")}
  hits = sum(normalize(t) == normalize(p)
             for t, p in zip(targets, predictions))
  return {"exact_match": 100.0 * hits / len(targets)}
