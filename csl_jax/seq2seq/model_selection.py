"""Choosing the checkpoint a run is scored with: the best exact match on a
dev set, measured at every checkpoint of the run.

GOODDEV (Zhou et al. 2023's `*_GOODDEV` option for SCAN and COGS, peers.md
§4): the dev set is a seeded random 10% of the generalization test set and
the score is reported on the other 90%. That is model selection on the
test distribution: its numbers compare only with runs of the same protocol.

The selection lives beside the run: OUT/selected.npz holds the best
parameters with their step, score and the dev set's digest in one file
(written atomically, so a kill never leaves parameters of one step labelled
with another's score); OUT/selection.json holds every score, for reports.
The trainer evaluates a checkpoint only after it is saved, so a resumed
run never holds a score of a step it will train again.

NumPy and JAX only: the bundle's accelerator side uses it as well.
"""

import hashlib
import io
import os
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from csl_jax.errors import InputError
from csl_jax.files import atomic_write_bytes, atomic_write_json, read_json

SELECTED_FILE = "selected.npz"
HISTORY_FILE = "selection.json"
GOODDEV = "gooddev"
_PARAM = "params/"


def gooddev_rows(num_examples: int, fraction: float = 0.1, seed: int = 0
                 ) -> np.ndarray:
  """Sorted indices of GOODDEV's dev rows: round(fraction * n) of the
  n test rows, drawn without replacement by `seed` (at least one, and at
  least one row left to report on)."""
  if not 0.0 < fraction < 1.0:
    raise InputError(f"dev fraction {fraction!r}: must be in (0, 1)")
  if num_examples < 2:
    raise InputError(f"GOODDEV needs at least 2 test examples, not "
                     f"{num_examples}")
  k = min(max(1, int(round(fraction * num_examples))), num_examples - 1)
  rng = np.random.default_rng(seed)
  return np.sort(rng.choice(num_examples, size=k, replace=False))


def dev_rows(dev: Dict[str, Any], num_examples: int) -> List[int]:
  """The rows of part `dev["part"]` that form the dev set: all of them, or
  GOODDEV's share (`dev["fraction"]`, drawn by `dev["seed"]`)."""
  if dev.get("fraction") is None:
    return list(range(num_examples))
  return gooddev_rows(num_examples, dev["fraction"], dev["seed"]).tolist()


def scored_rows(dev: Optional[Dict[str, Any]], part: str,
                num_examples: int) -> List[int]:
  """The rows of eval part `part` that are scored: all of them, or all
  but the dev rows when the dev set is drawn from that part (GOODDEV)."""
  if not dev or dev["part"] != part:
    return list(range(num_examples))
  held = set(dev_rows(dev, num_examples))
  return [i for i in range(num_examples) if i not in held]


def before_eos(ids: Sequence[int], eos_id: int = 1) -> List[int]:
  """A target's ids up to its first EOS (as decoding strips them)."""
  ids = [int(i) for i in ids]
  return ids[:ids.index(eos_id)] if eos_id in ids else ids


def exact_match(predicted: Sequence[Sequence[int]],
                targets: Sequence[Sequence[int]]) -> float:
  """Percent of rows whose predicted ids equal the target's."""
  if len(predicted) != len(targets):
    raise ValueError(f"{len(predicted)} predictions for {len(targets)} "
                     "targets")
  if not targets:
    return 0.0
  right = sum(list(map(int, p)) == list(map(int, t))
              for p, t in zip(predicted, targets, strict=True))
  return 100.0 * right / len(targets)


def dev_digest(inputs: Sequence[Sequence[int]],
               targets: Sequence[Sequence[int]]) -> str:
  """sha256 of the dev set's token ids: a selection is another dev set's
  if it differs."""
  h = hashlib.sha256()
  for row in list(inputs) + [None] + list(targets):
    h.update(b"|" if row is None else
             np.asarray(row, dtype=np.int64).tobytes() + b";")
  return h.hexdigest()


def scorer(model, inputs: Sequence[Sequence[int]],
           targets: Sequence[Sequence[int]], max_input_len: int,
           max_target_len: int, batch_size: int
           ) -> Callable[[Any], float]:
  """params -> dev exact match (percent), greedy decoding of `inputs`
  (token ids, EOS included) against `targets` (ids; cut at EOS)."""
  from csl_jax.seq2seq import decode  # pylint: disable=g-import-not-at-top
  inputs = [list(map(int, row))[:max_input_len] for row in inputs]
  gold = [before_eos(t, decode.EOS_ID) for t in targets]

  def score(params) -> float:
    return exact_match(decode.predict_ids(
        model, params, inputs, max_input_len, max_target_len, batch_size,
        beam_size=1), gold)

  return score


def _flat(params) -> Dict[str, np.ndarray]:
  from flax import traverse_util  # pylint: disable=g-import-not-at-top
  return {_PARAM + k: np.asarray(v) for k, v in
          traverse_util.flatten_dict(params, sep="/").items()}


class Selector:
  """Keeps the parameters of the best dev score seen in `out_dir`.

  A tie goes to the later step (as fairseq's checkpoint_best, which Zhou et
  al.'s code builds on, and longer training).
  """

  def __init__(self, out_dir: str, score_fn: Callable[[Any], float],
               digest: str, every: Optional[int] = None):
    self.out_dir = out_dir
    self.score_fn = score_fn
    self.digest = digest
    self.every = every  # the checkpoint interval: which steps are candidates
    self.history: List[List[float]] = []
    self.best_step: Optional[int] = None
    self.best_score: Optional[float] = None
    path = os.path.join(out_dir, SELECTED_FILE)
    if os.path.exists(path):
      with np.load(path) as saved:
        if str(saved["dev_digest"]) != digest:
          raise InputError("holds a checkpoint selected on another dev set; "
                           "use a new output directory", path)
        self.best_step = int(saved["step"])
        self.best_score = float(saved["score"])
      history = os.path.join(out_dir, HISTORY_FILE)
      if os.path.exists(history):
        saved = read_json(history)
        self.history = [list(e) for e in saved["history"]]
        was = saved.get("every")  # recorded since session 32
        if every and was and was != every:
          raise InputError(
              f"its checkpoints were scored on the dev set every {was} "
              f"steps, now every {every}: the candidates would differ; "
              f"resume with checkpoint_every={was} or use a new output "
              "directory", history)

  def missing(self, start: int, every: int) -> List[int]:
    """Checkpoint steps before `start` (every `every`) with no score: a run
    trained without this dev set cannot choose among them."""
    scored = {int(e[0]) for e in self.history}
    return [s for s in range(every, start, every) if s not in scored]

  def resume(self, start: int) -> bool:
    """Drops scores of steps after `start` (to be trained again); whether
    step `start` itself still needs its score."""
    self.history = [e for e in self.history if e[0] <= start]
    return start > 0 and all(e[0] != start for e in self.history)

  def __call__(self, params, step: int) -> float:
    score = float(self.score_fn(params))
    if self.best_score is None or score >= self.best_score:
      self.best_step, self.best_score = step, score
      buf = io.BytesIO()
      np.savez(buf, step=np.int64(step), score=np.float64(score),
               dev_digest=np.array(self.digest), **_flat(params))
      atomic_write_bytes(os.path.join(self.out_dir, SELECTED_FILE),
                         buf.getvalue())
    self.history = [e for e in self.history if e[0] != step] + [
        [step, score]]
    self.history.sort()
    atomic_write_json(os.path.join(self.out_dir, HISTORY_FILE), {
        "history": self.history, "best_step": self.best_step,
        "best_score": self.best_score,
        **({"every": self.every} if self.every else {})})
    return score

  def summary(self) -> Dict[str, Any]:
    return {"selected_step": self.best_step, "dev_accuracy": self.best_score,
            "dev_history": self.history}


def load_selected(model_dir: str, template) -> Any:
  """The selected parameters of `model_dir`, in `template`'s structure
  (a params tree of the same model)."""
  from flax import traverse_util  # pylint: disable=g-import-not-at-top
  path = os.path.join(model_dir, SELECTED_FILE)
  if not os.path.exists(path):
    raise InputError("no selected checkpoint (was the run trained with a "
                     "dev set?)", path)
  want = traverse_util.flatten_dict(template, sep="/")
  with np.load(path) as saved:
    got = {k[len(_PARAM):]: saved[k] for k in saved.files
           if k.startswith(_PARAM)}
  if set(got) != set(want) or any(got[k].shape != np.shape(want[k])
                                  for k in want):
    raise InputError("selected parameters of another model", path)
  return traverse_util.unflatten_dict(
      {k: got[k].astype(np.asarray(want[k]).dtype) for k in want}, sep="/")
