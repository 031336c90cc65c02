"""Exact match, the coverage breakdown of the paper's Tables 2/7, and the
CSL + other-system ensemble (CSL where it parses, else the other)."""

import io
import os
from typing import Dict, List, NamedTuple, Optional, Sequence

from csl_jax.errors import InputError
from csl_jax.files import atomic_write_text


class Prediction(NamedTuple):
  input: str
  prediction: Optional[str]  # None: no output (no parse)
  target: Optional[str]


def write_predictions(path: str, predictions: Sequence[Prediction]) -> None:
  """`input<TAB>prediction<TAB>target`; an empty prediction is no parse."""
  atomic_write_text(path, "".join(
      f"{p.input}\t{p.prediction or ''}\t{p.target or ''}\n"
      for p in predictions))


def read_predictions(path: str) -> List[Prediction]:
  """Reads 2 (input, prediction) or 3 (+ target) columns."""
  out = []
  try:
    with io.open(os.fspath(path), encoding="utf-8") as f:
      for line_number, line in enumerate(f, start=1):
        parts = line.rstrip("\n").split("\t")
        if len(parts) not in (2, 3) or not parts[0].strip():
          raise InputError("expected input<TAB>prediction[<TAB>target]",
                           os.fspath(path), line_number)
        target = parts[2].strip() if len(parts) == 3 else ""
        out.append(Prediction(parts[0].strip(), parts[1].strip() or None,
                              target or None))
  except FileNotFoundError:
    raise InputError("no such file", os.fspath(path)) from None
  return out


def _accuracy(items) -> Optional[float]:
  items = list(items)
  if not items:
    return None
  return sum(p.prediction == p.target for p in items) / len(items)


def breakdown(csl: Sequence[Prediction],
              other: Optional[Sequence[Prediction]] = None
              ) -> Dict[str, Optional[float]]:
  """Coverage (share with a CSL output), CSL accuracy overall and on the
  covered part; with `other`: its accuracy on covered / not covered inputs
  and the ensemble's accuracy."""
  if any(p.target is None for p in csl):
    raise InputError("predictions need a target column to be scored")
  covered = [p for p in csl if p.prediction is not None]
  out = {
      "num_examples": len(csl),
      "coverage": len(covered) / len(csl) if csl else None,
      "accuracy": _accuracy(csl),
      "accuracy_on_covered": _accuracy(covered),
  }
  if other is not None:
    if [p.input for p in other] != [p.input for p in csl]:
      raise InputError("the other system's predictions are not for the same "
                       "inputs in the same order")
    with_target = [q._replace(target=p.target) for p, q in zip(csl, other)]
    out["other_accuracy"] = _accuracy(with_target)
    out["other_accuracy_on_covered"] = _accuracy(
        q for p, q in zip(csl, with_target) if p.prediction is not None)
    out["other_accuracy_on_not_covered"] = _accuracy(
        q for p, q in zip(csl, with_target) if p.prediction is None)
    out["ensemble_accuracy"] = _accuracy(
        p if p.prediction is not None else q
        for p, q in zip(csl, with_target))
  return out
