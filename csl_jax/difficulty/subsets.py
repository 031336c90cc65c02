"""Training subsets by difficulty, written as datasets (Zhou et al. 2023
§5.1, Table 5): quantiles of the score (`q0` easiest ... `q{n-1}` hardest,
each 1/n of the training set, sizes within one example), `mix` (as many
examples as a quantile, half from the easiest and half from the hardest),
and `max_<t>` (every example scoring at most t: their Fig. 5's training
sets of bounded length or number of primitives).

Pinned examples (`pin`: a TSV of training pairs, e.g. SMCalFlow-CS's 32
cross-domain few-shot examples, which Zhou et al. App. G.1 keep in every
subset) are scored with the others (a learning run tracked every training
pair), then left out of the partition and added to every subset.

OUT/<subset>/train.tsv is the subset; the other parts of the data directory
(test, dev, gen, ...) are copied beside it, so each subset is a `tsv`
dataset for `csl-jax augment`/`experiment` (`--data_dir OUT/<subset>`) and
for `tasks.register_dataset`. OUT/scores.tsv lists every training example
with its score; OUT/summary.json the sizes and score ranges.
"""

import os
import shutil
from typing import Any, Dict, List, Optional, Sequence

from absl import logging
import numpy as np

from csl_jax.data import registry
from csl_jax.data import tsv
from csl_jax.difficulty import scores as scores_lib
from csl_jax.errors import InputError
from csl_jax.files import atomic_write_json, atomic_write_text


def quantiles(score: np.ndarray, num: int, seed: int = 0
              ) -> List[np.ndarray]:
  """`num` disjoint index sets, easiest first; ties in a seeded order."""
  tie = np.random.default_rng([seed, 11]).permutation(len(score))
  order = np.lexsort((tie, score))
  return [np.sort(part) for part in np.array_split(order, num)]


def mix(easiest: np.ndarray, hardest: np.ndarray, seed: int = 0
        ) -> np.ndarray:
  """Half the easiest quantile's size from it, the rest from the hardest."""
  rng = np.random.default_rng([seed, 12])
  size = len(easiest)
  half = size // 2
  return np.sort(np.concatenate([
      rng.choice(easiest, half, replace=False),
      rng.choice(hardest, min(size - half, len(hardest)), replace=False)]))


def write(out_dir: str, data_dir: str, score_name: str, num: int = 4,
          max_scores: Sequence[float] = (), seed: int = 0, k: int = 100,
          runs: Sequence[str] = (), pin: Optional[str] = None
          ) -> Dict[str, Any]:
  """Scores DATA_DIR/train.tsv and writes the subsets; returns the summary."""
  train_path = os.path.join(data_dir, "train.tsv")
  if not os.path.isdir(data_dir):
    raise InputError(registry.not_a_data_directory(data_dir), data_dir)
  if not os.path.exists(train_path):
    raise InputError("no train.tsv in the data directory", data_dir)
  if num < 2:
    raise InputError(f"difficulty quantiles must be >= 2, got {num}")
  if seed < 0:  # numpy's generators take none
    raise InputError(f"difficulty seed (--seed) must be >= 0, got {seed}")
  others = sorted(f for f in os.listdir(data_dir)
                  if f.endswith(".tsv") and f != "train.tsv")
  for f in others:  # copied into every subset: found now, not half-way
    if not os.path.isfile(os.path.join(data_dir, f)):
      raise InputError("is a directory or a broken link, not a file (the "
                       "subsets copy every .tsv of the data directory)",
                       os.path.join(data_dir, f))
  pairs = [(e.input, e.output) for e in tsv.read_tsv(train_path)]
  keep = np.ones(len(pairs), bool)
  if pin is not None:
    keep = _unpinned(pairs, pin)
  if keep.sum() < num:
    raise InputError(f"{keep.sum()} training examples cannot make {num} "
                     "quantiles", train_path)
  # Every training pair is scored (the learning runs tracked them all, in
  # file order), then the pinned ones leave the partition.
  score, figures = scores_lib.score(score_name, pairs, seed, k, runs)
  score = score[keep]
  pinned = [p for p, kept in zip(pairs, keep, strict=True) if not kept]
  pairs = [p for p, kept in zip(pairs, keep, strict=True) if kept]
  atomic_write_text(os.path.join(out_dir, "scores.tsv"), (
      f"{x}\t{y}\t{s:g}\n" for (x, y), s in zip(pairs, score, strict=True)))
  parts = quantiles(score, num, seed)
  tied = _tied_boundaries(score, parts)
  subsets = {f"q{i}": p for i, p in enumerate(parts)}
  subsets["mix"] = mix(parts[0], parts[-1], seed)
  for t in max_scores:
    subsets[f"max_{t:g}"] = np.flatnonzero(score <= t)
  summary: Dict[str, Any] = {"score": score_name, "figures": figures,
                             "num_train": len(pairs) + len(pinned),
                             "num_pinned": len(pinned), "seed": seed,
                             "tied_boundaries": tied, "subsets": {}}
  for name, index in subsets.items():
    directory = os.path.join(out_dir, name)
    if not len(index):
      raise InputError(f"subset {name} is empty (scores range "
                       f"{score.min():g}..{score.max():g})")
    tsv.write_tsv(os.path.join(directory, "train.tsv"),
                  [pairs[i] for i in index] + pinned)
    for f in others:
      shutil.copyfile(os.path.join(data_dir, f), os.path.join(directory, f))
    summary["subsets"][name] = {
        "size": int(len(index)) + len(pinned), "score_min": float(score[index].min()),
        "score_mean": float(score[index].mean()),
        "score_max": float(score[index].max())}
  atomic_write_json(os.path.join(out_dir, "summary.json"), summary)
  return summary


def _tied_boundaries(score: np.ndarray, parts: Sequence[np.ndarray]
                     ) -> List[str]:
  """The quantile boundaries inside a run of equal scores ("q0|q1"), each
  said: there the seeded tie-break, not the score, splits the examples
  (all of them when every score is the same, e.g. prototype scores of
  data with no more distinct inputs than clusters)."""
  if score.min() == score.max():
    logging.warning("difficulty: all %d scores are %g: the quantiles and "
                    "the mix are a seeded random split, not by difficulty",
                    len(score), score.min())
  tied = []
  for i in range(len(parts) - 1):
    edge = score[parts[i]].max()
    if edge == score[parts[i + 1]].min():
      tied.append(f"q{i}|q{i + 1}")
      if score.min() != score.max():
        logging.warning(
            "difficulty: q%d and q%d both hold examples of score %g (%d of "
            "them): a seeded tie-break splits those", i, i + 1, edge,
            int((score == edge).sum()))
  return tied


def _unpinned(pairs, pin: str) -> np.ndarray:
  """Which training pairs are not pinned; every pinned pair must be a
  training pair (else an InputError naming its line); all its copies in
  the training set are pinned."""
  pinned = [(e.input, e.output) for e in tsv.read_tsv(pin)]
  present = set(pairs)
  for line, pair in enumerate(pinned, start=1):
    if pair not in present:
      raise InputError("pinned example is not in the training set", pin,
                       line)
  keep = set(pinned)
  return np.array([p not in keep for p in pairs], bool)


def read_scores(out_dir: str) -> Optional[np.ndarray]:
  path = os.path.join(out_dir, "scores.tsv")
  if not os.path.exists(path):
    return None
  with open(path, encoding="utf-8") as f:
    return np.array([float(line.rsplit("\t", 1)[1]) for line in f])
