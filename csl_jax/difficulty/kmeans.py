"""k-means (Lloyd) with k-means++ seeding, best of several initializations
by inertia: the prototype difficulty's clustering (Zhou et al. 2023 App.
B.2 use scikit-learn's, k = 100, 10 initializations; scikit-learn is not a
dependency here). The same algorithm in outline, not scikit-learn's in
detail: plain k-means++ (scikit-learn tries 2 + ln k candidates per
center), at most 100 Lloyd iterations (it allows 300), and a center left
without points keeps its place (it moves one to a far point)."""

from typing import Optional, Tuple

import numpy as np

from csl_jax.progress import progress


def _sq_distances(x: np.ndarray, centers: np.ndarray) -> np.ndarray:
  d = (np.sum(x * x, 1)[:, None] - 2.0 * x @ centers.T
       + np.sum(centers * centers, 1)[None, :])
  return np.maximum(d, 0.0)


def _plus_plus(x: np.ndarray, k: int, rng: np.random.Generator
               ) -> np.ndarray:
  centers = [x[rng.integers(len(x))]]
  closest = _sq_distances(x, centers[0][None])[:, 0]
  for _ in range(1, k):
    total = closest.sum()
    i = rng.choice(len(x), p=closest / total) if total > 0 else \
        rng.integers(len(x))
    centers.append(x[i])
    closest = np.minimum(closest, _sq_distances(x, x[i][None])[:, 0])
  return np.stack(centers)


def kmeans(x: np.ndarray, k: int, n_init: int = 10, seed: int = 0,
           max_iter: int = 100, desc: Optional[str] = "k-means"
           ) -> Tuple[np.ndarray, np.ndarray, float]:
  """(centers [k, d], assignment [n], inertia) of the best initialization;
  k is capped at the number of distinct points. `desc` names the
  progress (a line per initialization in a log file: seconds each on
  COGS); None: none."""
  x = np.asarray(x, np.float64)
  k = min(k, len(np.unique(x, axis=0)))
  best = None
  bar = progress(range(n_init), desc=desc, unit="init",
                 disable=desc is None)
  for init in bar:
    rng = np.random.default_rng([seed, init])
    centers = _plus_plus(x, k, rng)
    assign = None
    for _ in range(max_iter):
      new = np.argmin(_sq_distances(x, centers), 1)
      if assign is not None and np.array_equal(new, assign):
        break
      assign = new
      for c in range(k):
        members = x[assign == c]
        if len(members):
          centers[c] = members.mean(0)
    inertia = float(_sq_distances(x, centers)[np.arange(len(x)),
                                                assign].sum())
    if best is None or inertia < best[2]:
      best = (centers.copy(), assign.copy(), inertia)
    bar.set_postfix(inertia=f"{best[2]:.6g}")
  return best
