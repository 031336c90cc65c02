"""What a training run's summary says of its whole run, kept beside each
checkpoint so that a resumed run reports what the uninterrupted one would:
the first loss, the last losses, the steady-state rate. A process sees only
its own steps; without this a run resumed near its end averaged fewer
losses, and one resumed when finished reported none."""

import os
from typing import Any, Dict, Iterable, List, Optional

from csl_jax.files import atomic_write_json
from csl_jax.files import read_json

LAST = 10  # losses averaged as the run's final loss


class LossRecord:
  """The run's losses and timed steps up to a step, one JSON file per kept
  checkpoint (`<dir>/<step>.json`)."""

  def __init__(self, directory: str, start: int):
    self._dir = directory
    self._start = start
    path = os.path.join(directory, f"{start}.json")
    # A run from before these records: its own steps only.
    saved = read_json(path) if start and os.path.exists(path) else {}
    self._first: Optional[float] = saved.get("first_loss")
    self._last: List[List[float]] = saved.get("last_losses", [])
    self._timed = int(saved.get("timed_steps", 0))
    self._seconds = float(saved.get("steady_seconds", 0.0))

  def totals(self, losses: List[float], timed_steps: int,
             steady_seconds: float) -> Dict[str, Any]:
    """The run's record after this process's `losses` (one per step from
    `start`, in order), timed steps and their seconds."""
    tail = losses[-LAST:]
    offset = self._start + len(losses) - len(tail)  # the step before tail
    last = self._last + [[offset + i + 1, loss] for i, loss in
                         enumerate(tail)]
    first = self._first if self._first is not None else (
        losses[0] if losses else None)
    return {"first_loss": first, "last_losses": last[-LAST:],
            "timed_steps": self._timed + timed_steps,
            "steady_seconds": self._seconds + steady_seconds}

  def save(self, step: int, totals: Dict[str, Any],
           keep: Iterable[int] = ()) -> None:
    """Writes the record at `step`; removes those of steps not in `keep`."""
    os.makedirs(self._dir, exist_ok=True)
    atomic_write_json(os.path.join(self._dir, f"{step}.json"), totals)
    keep = {int(k) for k in keep} | {step}
    for name in os.listdir(self._dir):
      stem = name[:-len(".json")]
      if name.endswith(".json") and stem.isdigit() and int(stem) not in keep:
        os.remove(os.path.join(self._dir, name))


def metrics(totals: Dict[str, Any], batch_size: int) -> Dict[str, Any]:
  """The summary's loss and rate fields of a record (`LossRecord.totals`)."""
  out: Dict[str, Any] = {}
  if totals["last_losses"]:
    losses = [loss for _, loss in totals["last_losses"]]
    out.update(first_loss=totals["first_loss"], final_loss=losses[-1],
               mean_last_loss=sum(losses) / len(losses))
  if totals["timed_steps"]:
    # Steps that compiled nothing, data preparation included.
    out["examples_per_second"] = (totals["timed_steps"] * batch_size /
                                  max(totals["steady_seconds"], 1e-9))
  return out
