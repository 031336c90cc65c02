"""Difficulty scores of training examples (higher = harder).

* `length`: input tokens (complexity-based, §5.1).
* `primitives`: distinct primitives in the input: the training set's Eq. 1
  lexicon (`csl_jax.data.lexicon`), which on SCAN and SCAN* holds `left`
  and `right` beside the verbs. The paper's SCAN* knob counts verbs only:
  that is `csl-jax prepare scan_star --max_primitives`, not this score.
* `learning`: the first step from which the example is predicted right at
  10 tracked evaluations in a row, averaged over runs (`learning`).
* `prototype`: distance to the assigned k-means centroid of the input's
  embedding (Sorscher et al. 2022 as in App. B.2). The paper embeds with
  SimCSE, a pretrained checkpoint that is not available offline; here the
  embedding is TF-IDF of the input's word 1- and 2-grams, projected to
  `dims` dimensions by a seeded Gaussian matrix (distances kept up to a
  small factor, Johnson-Lindenstrauss). A documented deviation.
"""

import collections
import math
import os
import re
from typing import Dict, List, Sequence, Tuple

from absl import logging
import numpy as np

from csl_jax.difficulty import kmeans as kmeans_lib
from csl_jax.errors import InputError

SCORES = ("length", "primitives", "prototype", "learning")


def length(pairs: Sequence[Tuple[str, str]]) -> np.ndarray:
  return np.array([len(x.split()) for x, _ in pairs], np.float64)


def primitives(pairs: Sequence[Tuple[str, str]]) -> np.ndarray:
  from csl_jax.data import lexicon  # pylint: disable=g-import-not-at-top
  found = {v for v, _ in lexicon.lexicon(pairs)}
  return np.array([len(found & set(x.split())) for x, _ in pairs],
                  np.float64)


def _ngrams(text: str) -> List[str]:
  words = text.split()
  return words + [f"{a} {b}" for a, b in zip(words, words[1:])]


def tfidf_embedding(texts: Sequence[str], dims: int = 256,
                    seed: int = 0) -> np.ndarray:
  """[n, dims]: L2-normalized TF-IDF of word 1-2-grams, projected."""
  grams = [collections.Counter(_ngrams(t)) for t in texts]
  df = collections.Counter(g for c in grams for g in c)
  index = {g: i for i, g in enumerate(sorted(df))}
  idf = {g: math.log((1 + len(texts)) / (1 + n)) + 1 for g, n in df.items()}
  projection = np.random.default_rng([seed, 7]).standard_normal(
      (len(index), dims)) / math.sqrt(dims)
  out = np.zeros((len(texts), dims))
  for row, counts in enumerate(grams):
    if not counts:
      continue
    cols = [index[g] for g in counts]
    weights = np.array([n * idf[g] for g, n in counts.items()])
    weights /= np.linalg.norm(weights)
    out[row] = weights @ projection[cols]
  return out


def prototype(pairs: Sequence[Tuple[str, str]], k: int = 100,
              n_init: int = 10, seed: int = 0, dims: int = 256
              ) -> Tuple[np.ndarray, Dict[str, float]]:
  """Distances to the assigned centroid, and the clustering's figures."""
  x = tfidf_embedding([x for x, _ in pairs], dims, seed)
  centers, assign, inertia = kmeans_lib.kmeans(x, k, n_init, seed)
  if len(centers) < k:
    logging.warning("prototype difficulty: k = %d clusters, not %d: there "
                    "are only %d distinct input vectors", len(centers), k,
                    len(centers))
  distance = np.linalg.norm(x - centers[assign], axis=1)
  return distance, {"k": len(centers), "inertia": inertia,
                    "n_init": n_init, "dims": dims}


def score(name: str, pairs: Sequence[Tuple[str, str]], seed: int = 0,
          k: int = 100, runs: Sequence[str] = ()
          ) -> Tuple[np.ndarray, Dict[str, float]]:
  if name == "learning":
    values, figures = learning(runs)
    if len(values) != len(pairs):
      raise InputError(f"the runs tracked {len(values)} examples, the "
                       f"training set has {len(pairs)}")
    return values, figures
  if name == "length":
    return length(pairs), {}
  if name == "primitives":
    return primitives(pairs), {}
  if name == "prototype":
    if k < 1:
      raise InputError(f"prototype difficulty: k (--k) must be >= 1, got {k}")
    return prototype(pairs, k=k, seed=seed)
  raise InputError(f"difficulty score {name!r}: one of {', '.join(SCORES)}")


def _load_tracked(path: str) -> np.ndarray:
  try:
    return np.load(path)  # no pickles: allow_pickle is False
  except (ValueError, OSError, EOFError) as e:
    raise InputError(f"not a saved array of tracked examples ({e})",
                     path) from None


def learning(run_dirs: Sequence[str], patience: int = 10
             ) -> Tuple[np.ndarray, Dict[str, float]]:
  """Learning-based difficulty (App. B.2): per example, the first tracked
  step from which it is predicted right at `patience` evaluations in a row
  (the last step tracked if never), averaged over the runs (seeds). The
  runs are trainings with `seq2seq.TrainConfig.track_train_every` > 0."""
  if not run_dirs:
    raise InputError("learning difficulty needs the trained runs (--runs): "
                     "trainings with seq2seq.TrainConfig.track_train_every "
                     "> 0")
  per_run = []
  for run in run_dirs:
    directory = os.path.join(run, "learning")
    files = [f for f in os.listdir(directory)
             if re.fullmatch(r"step_\d+\.npy", f)] \
        if os.path.isdir(directory) else []
    if not files:
      raise InputError("no learning/step_*.npy: train with "
                       "seq2seq.TrainConfig.track_train_every > 0", run)
    files.sort(key=lambda f: int(f[5:-4]))
    steps = np.array([int(f[5:-4]) for f in files])
    right = [_load_tracked(os.path.join(directory, f)) for f in files]
    for f, r in zip(files, right, strict=True):
      if r.ndim != 1 or r.shape != right[0].shape:
        raise InputError(f"{r.shape} tracked examples, {files[0]} has "
                         f"{right[0].shape}", os.path.join(directory, f))
    right = np.stack(right)
    if per_run and right.shape[1] != per_run[0].shape[0]:
      raise InputError(f"{right.shape[1]} examples tracked, another run "
                       f"{per_run[0].shape[0]}", run)
    # streak[t, i]: evaluations in a row predicted right from t on.
    streak = np.zeros(right.shape, np.int64)
    run_length = np.zeros(right.shape[1], np.int64)
    for t in range(len(steps) - 1, -1, -1):
      run_length = np.where(right[t], run_length + 1, 0)
      streak[t] = run_length
    first = np.argmax(streak >= patience, axis=0)
    learned = (streak >= patience).any(axis=0)
    per_run.append(np.where(learned, steps[first], steps[-1]))
  return np.mean(per_run, axis=0), {"runs": len(run_dirs),
                                    "patience": patience}
