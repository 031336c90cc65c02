"""The stage cache: a stage is redone only when its own inputs or config change.

Each stage directory holds `stage_key.json`: the stage's key (sha256 over its
name, its JSON config and the contents of its input files), the config and
input hashes it was computed from (so a user can see why a stage reran), and
whether the stage completed. On a run:
  - same key, completed, summary present: reused (`cached: true`);
  - same key, not completed (the process was killed): rerun in place, so
    the stage's own resumable artifacts (induction state, fit checkpoints)
    carry on;
  - another key: the directory is emptied first, so nothing of the old
    configuration can leak into the new result.
A completed stage also records its files (size, mtime, sha256): one that
is missing, cut or changed since (a disk that filled, an rsync that
skipped files, a hand edit) makes the stage redo from an empty directory
rather than pass the damage on. A file whose mtime alone moved (a copy)
is hashed, and kept if its bytes are the same.
"""

import hashlib
import json
import os
import shutil
import time
from typing import Any, Dict, Mapping, Optional, Sequence

from absl import logging

from csl_jax import provenance
from csl_jax.errors import InputError
from csl_jax.errors import Pending
from csl_jax.files import atomic_write_json, file_sha256, read_json
from csl_jax.methods.base import Stage

KEY_FILE = "stage_key.json"
SUMMARY_FILE = "summary.json"
# In an unfinished stage's key: its run raised `errors.Pending` (its work
# waits elsewhere), so a rerun takes it up rather than resumes.
WAITING = "waiting"


def file_hash(path: str) -> str:
  """sha256 of a stage input's bytes; an unreadable one is an InputError."""
  try:
    return file_sha256(path)
  except (FileNotFoundError, IsADirectoryError, PermissionError) as e:
    raise InputError(f"cannot read stage input ({e.strerror})", path) from None


def _canonical(config: Mapping[str, Any]) -> str:
  try:
    return json.dumps(config, sort_keys=True, separators=(",", ":"))
  except TypeError as e:  # a programming error in a method, not user input
    raise TypeError(f"stage config must be JSON-serializable: {e}") from e


def stage_key(name: str, inputs: Sequence[str],
              config: Mapping[str, Any]) -> Dict[str, Any]:
  """The key record of a stage: key, config and input hashes."""
  hashes = {os.fspath(p): file_hash(p) for p in inputs}
  h = hashlib.sha256()
  h.update(name.encode())
  h.update(_canonical(config).encode())
  # Inputs count by content and order, not by where they are stored, so a
  # run directory can be moved without invalidating its cache.
  for p in inputs:
    h.update(hashes[os.fspath(p)].encode())
  return {"key": h.hexdigest(), "config": json.loads(_canonical(config)),
          "input_hashes": [hashes[os.fspath(p)] for p in inputs]}


def _outputs(directory: str) -> Dict[str, list]:
  """{relative path: [size, mtime_ns, sha256]} of the stage's files."""
  out = {}
  for root, _, names in os.walk(directory):
    for name in names:
      path = os.path.join(root, name)
      rel = os.path.relpath(path, directory)
      if rel == KEY_FILE or ".tmp." in name:
        continue
      st = os.stat(path)
      out[rel] = [st.st_size, st.st_mtime_ns, file_sha256(path)]
  return out


def _damaged(old: Mapping[str, Any], directory: str) -> Optional[str]:
  """The first recorded output that is missing or changed, else None.
  Updates `old["outputs"]` where only an mtime moved (bytes the same)."""
  moved = False
  for rel, (size, mtime, digest) in sorted(old.get("outputs", {}).items()):
    path = os.path.join(directory, rel)
    try:
      st = os.stat(path)
    except OSError:
      return f"{rel} is missing since it was written"
    if not os.path.isfile(path) or st.st_size != size:
      return f"{rel} changed size since it was written"
    if st.st_mtime_ns != mtime:
      if file_sha256(path) != digest:
        return f"{rel} changed since it was written"
      old["outputs"][rel][1] = st.st_mtime_ns
      moved = True
  if moved:  # a copy: hash it once, not on every run
    atomic_write_json(os.path.join(directory, KEY_FILE), dict(old))
  return None


def is_current(stage: Stage, directory: str,
               record: Optional[Mapping[str, Any]] = None) -> bool:
  """Whether `run_stage(stage, directory)` would reuse what is there
  (`record`: the stage's `stage_key`, where the caller has it)."""
  record = record or stage_key(stage.name, stage.inputs, stage.config)
  old = _read_key(os.path.join(directory, KEY_FILE))
  return (_same_key(old, record) and _finished(old, directory)
          and _damaged(old, directory) is None)


def run_stage(stage: Stage, directory: str,
              record: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
  """Runs `stage` in `directory` unless its key is unchanged; returns its
  summary with `cached` (bool) and `seconds`. `record`: its `stage_key`,
  where the caller has it (the inputs are hashed once)."""
  record = record or stage_key(stage.name, stage.inputs, stage.config)
  key_path = os.path.join(directory, KEY_FILE)
  summary_path = os.path.join(directory, SUMMARY_FILE)
  old = _read_key(key_path)
  damage = None
  if _same_key(old, record) and _finished(old, directory):
    damage = _damaged(old, directory)
    summary = None if damage else _read_summary(summary_path)
    if summary is not None:
      logging.info("stage %s: unchanged, reusing %s%s", stage.name,
                   directory, _computed_by_other_code(old))
      summary["cached"] = True
      return summary
    logging.warning("stage %s: %s; redoing it in %s", stage.name,
                    damage or f"{SUMMARY_FILE} cannot be read", directory)
    shutil.rmtree(directory)
  elif _same_key(old, record) and old.get(WAITING):
    # Its last run exported work and stopped (`errors.Pending`), as the
    # arrays trainer's cells do before `run-bundle` trains them: no run
    # was interrupted.
    logging.info("stage %s: taking up the work it exported, in %s",
                 stage.name, directory)
  elif _same_key(old, record):
    # Not "resuming": what it takes up (a checkpoint, or nothing when it was
    # killed before its first) is the stage's own to say.
    logging.info("stage %s: an interrupted run in %s; running it again "
                 "there, on what it saved", stage.name, directory)
  elif os.path.isdir(directory):
    if old is not None:
      logging.info("stage %s: inputs or config changed, redoing", stage.name)
    shutil.rmtree(directory)
  os.makedirs(directory, exist_ok=True)
  atomic_write_json(key_path, dict(record, complete=False))
  start = time.time()
  try:
    summary = dict(stage.run(directory))
  except Pending:
    atomic_write_json(key_path, dict(record, complete=False,
                                     **{WAITING: True}))
    raise
  summary["seconds"] = round(time.time() - start, 3)
  summary["cached"] = False
  atomic_write_json(summary_path, summary)
  atomic_write_json(key_path, dict(record, complete=True,
                                   outputs=_outputs(directory),
                                   code=provenance.code()))
  # How many it made: a CSL.num_samples that a later gin include reset,
  # say, shows here.
  made = summary.get("num_examples")
  logging.info("stage %s: done in %.1f s%s", stage.name, summary["seconds"],
               f", {made:,} examples" if isinstance(made, int) else "")
  return summary


def _computed_by_other_code(old: Mapping[str, Any]) -> str:
  """Where a reused stage was computed by another csl_jax (its version or
  commit), what to add to the log line: a fix since then is not in it.
  Said in full once a process for each other code (a grid reuses many)."""
  then, now = old.get("code"), provenance.code()
  # None: a key from before the record; not a dict: an edited key.
  if not isinstance(then, dict) or then == now:
    return ""
  other = provenance.describe(then)
  if other in _OTHER_CODE_SAID:
    return f" (computed by csl_jax {other})"
  _OTHER_CODE_SAID.add(other)
  return (f" (computed by csl_jax {other}, not this "
          f"{provenance.describe(now)}; delete it to compute it again; "
          "each stage's stage_key.json says which code computed it)")


_OTHER_CODE_SAID = set()


def _same_key(old: Optional[Mapping[str, Any]],
              record: Mapping[str, Any]) -> bool:
  return old is not None and old.get("key") == record["key"]


def _finished(old: Mapping[str, Any], directory: str) -> bool:
  """A run under that key completed and left its summary."""
  return bool(old.get("complete")) and os.path.exists(
      os.path.join(directory, SUMMARY_FILE))


def _read_summary(path: str) -> Optional[Dict[str, Any]]:
  try:
    summary = read_json(path)
  except (ValueError, OSError):  # torn, emptied or garbage: redo
    return None
  return summary if isinstance(summary, dict) else None


def _read_key(path: str):
  if not os.path.exists(path):
    return None
  try:
    return read_json(path)
  except (ValueError, OSError):  # a torn file from another tool: redo
    return None
