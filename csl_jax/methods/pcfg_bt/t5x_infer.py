"""Backtranslations decoded by T5X: reading `t5x.infer`'s predictions.

`python -m t5x.infer` (mode "predict") writes, for a task's split,
`INFER_OUTPUT_DIR/<task>-predict.jsonl-00000-of-00001`: one JSON object a
line, `{"inputs": {"inputs_pretokenized": ..., "targets_pretokenized":
...}, "prediction": ...}` (T5X `infer.write_inferences_to_file`). For the
task NAME_<m>_programs (`tasks/registry.py`) the pretokenized input is the
program as `programs.txt` holds it and the prediction its utterance.
"""

import glob
import json
import os
from typing import Dict, List, Sequence

from csl_jax.errors import InputError

# What t5x.infer names its output files: <task>-predict.jsonl-SSSSS-of-NNNNN
# (not the .COMPLETED markers beside them, nor its tmp/ chunks).
OUTPUT_GLOB = "*-predict.jsonl-?????-of-?????"


def prediction_files(pattern: str) -> List[str]:
  """The files `pattern` names (a file, a glob, or a directory holding
  t5x.infer's output), sorted; [] where none exists."""
  if os.path.isdir(pattern):
    pattern = os.path.join(pattern, OUTPUT_GLOB)
  return sorted(p for p in glob.glob(pattern) if os.path.isfile(p))


def read_predictions(paths: Sequence[str]) -> Dict[str, str]:
  """{pretokenized input: prediction} over t5x.infer's JSONL files.

  Raises:
    InputError: naming the file and line of a line that is not such an
      object, or of a second, different prediction for one input.
  """
  found: Dict[str, str] = {}
  where: Dict[str, str] = {}
  for path in paths:
    with open(path, encoding="utf-8") as f:
      for number, line in enumerate(f, 1):
        if not line.strip():
          continue
        try:
          record = json.loads(line)
          text = record["inputs"]["inputs_pretokenized"]
          prediction = record["prediction"]
        except (ValueError, KeyError, TypeError):
          raise InputError(
              "not a t5x.infer prediction (want a JSON object with "
              "inputs.inputs_pretokenized and prediction, as mode "
              "'predict' writes)", path, number) from None
        if not isinstance(text, str) or not isinstance(prediction, str):
          raise InputError("inputs_pretokenized and prediction must be "
                           "strings", path, number)
        text = text.strip()
        if text in found and found[text] != prediction:
          raise InputError(f"a second, different prediction for {text!r} "
                           f"(the first at {where[text]})", path, number)
        found[text] = prediction
        where[text] = f"{path}:{number}"
  return found


def utterances_for(programs: Sequence[str], predictions: Dict[str, str],
                   source: str) -> List[str]:
  """Each program's predicted utterance, in the programs' order.

  Raises:
    InputError: (naming `source`) where a program has no prediction (the
      infer run was cut short, or decoded another file) or a prediction is
      for no program (another run's programs).
  """
  missing = [p for p in programs if p not in predictions]
  if missing:
    raise InputError(
        f"{len(missing):,} of {len(programs):,} programs have no prediction "
        f"(first: {missing[0]!r}); t5x.infer writes one for every program of "
        "the task: was it cut short, or given another run's programs?",
        source)
  extra = sorted(set(predictions) - set(programs))
  if extra:
    raise InputError(
        f"{len(extra):,} predictions are for programs not in this run's "
        f"programs.txt (first: {extra[0]!r}): another run's t5x.infer "
        "output?", source)
  return [predictions[p] for p in programs]
