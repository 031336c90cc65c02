"""Exact match, the coverage breakdown of the paper's Tables 2/7, and the
CSL + other-system ensemble (CSL where it parses, else the other).

Matching is `csl_jax.evaluation.matches` (whitespace folded) and every
accuracy and the coverage are percentages (0-100), as in `exact_match`.
"""

import io
import os
from typing import Dict, List, NamedTuple, Optional, Sequence

from csl_jax.errors import InputError
from csl_jax.evaluation import matches
from csl_jax.files import atomic_write_text, read_text


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
  """Reads 2 (input, prediction) or 3 (+ target) columns. Unreadable files
  (missing, a directory, not UTF-8), malformed lines and files without a
  prediction are InputErrors naming the file (and line); blank lines at the
  end are fine."""
  path = os.fspath(path)
  lines = io.StringIO(read_text(path), newline=None).read().split("\n")
  while lines and not lines[-1].strip():
    lines.pop()  # Trailing blank lines (and the final newline).
  out = []
  for line_number, line in enumerate(lines, start=1):
    parts = line.rstrip("\r").split("\t")
    if len(parts) not in (2, 3) or not parts[0].strip():
      why = ("empty line (blank lines are allowed only at the end); "
             if not line.strip() else "empty input; " if len(parts) in (2, 3)
             else f"{len(parts)} tab-separated fields; ")
      raise InputError(f"{why}expected input<TAB>prediction[<TAB>target]",
                       path, line_number)
    target = parts[2].strip() if len(parts) == 3 else ""
    out.append(Prediction(parts[0].strip(), parts[1].strip() or None,
                          target or None))
  if not out:
    raise InputError("no predictions: the file is empty", path)
  return out


def _percent(hits: int, total: int) -> Optional[float]:
  return 100.0 * hits / total if total else None


def _accuracy(items) -> Optional[float]:
  """Exact-match percentage; None for no items."""
  items = list(items)
  return _percent(sum(matches(p.target, p.prediction) for p in items),
                  len(items))


def _prediction_column_first(csl: Sequence[Prediction],
                             other: Sequence[Prediction]) -> List[Prediction]:
  """`other` as (input, prediction, target), whichever order its file had.

  `parse` writes input, prediction, target; `decode` and the experiment
  cells write input, target, prediction. A third column is read as the
  target; where the second column is the target on every line instead
  (these predictions' targets), the two are swapped. Neither: the files
  are not of the same examples (the first line that differs)."""
  if all(q.target is None for q in other):
    return list(other)  # input, prediction
  if all(matches(p.target, q.target) for p, q in zip(csl, other, strict=True)):
    return list(other)
  if all(matches(p.target, q.prediction)
         for p, q in zip(csl, other, strict=True)):
    return [q._replace(prediction=q.target, target=q.prediction)
            for q in other]
  line = next(i for i, (p, q) in enumerate(zip(csl, other, strict=True),
                                           start=1)
              if not matches(p.target, q.target))
  raise InputError(f"the other system's target {other[line - 1].target!r} "
                   f"is not {csl[line - 1].target!r}, nor is its second "
                   "column (input<TAB>prediction<TAB>target from `parse`, "
                   "or input<TAB>target<TAB>prediction from `decode`): not "
                   "the same examples", None, line)


def breakdown(csl: Sequence[Prediction],
              other: Optional[Sequence[Prediction]] = None
              ) -> Dict[str, Optional[float]]:
  """Coverage (% with a CSL output), CSL accuracy (%) overall and on the
  covered part; with `other`: its accuracy on covered / not covered inputs
  and the ensemble's accuracy."""
  if any(p.target is None for p in csl):
    raise InputError("predictions need a target column to be scored")
  covered = [p for p in csl if p.prediction is not None]
  out = {
      "num_examples": len(csl),
      "coverage": _percent(len(covered), len(csl)),
      "accuracy": _accuracy(csl),
      "accuracy_on_covered": _accuracy(covered),
  }
  if other is not None:
    if len(other) != len(csl):
      raise InputError(f"the other system has {len(other)} predictions, "
                       f"these {len(csl)}: not the same inputs")
    for line, (p, q) in enumerate(zip(csl, other, strict=True), start=1):
      if p.input != q.input:  # the first line where they part
        raise InputError(f"the other system's input {q.input!r} is not "
                         f"{p.input!r} (the same inputs, in the same order)",
                         None, line)
    other = _prediction_column_first(csl, other)
    with_target = [q._replace(target=p.target)
                   for p, q in zip(csl, other, strict=True)]
    out["other_accuracy"] = _accuracy(with_target)
    out["other_accuracy_on_covered"] = _accuracy(
        q for p, q in zip(csl, with_target, strict=True)
        if p.prediction is not None)
    out["other_accuracy_on_not_covered"] = _accuracy(
        q for p, q in zip(csl, with_target, strict=True)
        if p.prediction is None)
    out["ensemble_accuracy"] = _accuracy(
        p if p.prediction is not None else q
        for p, q in zip(csl, with_target, strict=True))
  return out
