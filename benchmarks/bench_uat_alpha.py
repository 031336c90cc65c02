"""UAT's α on a real pool (issue 14, peers.md O1–O3).

  python3 benchmarks/bench_uat_alpha.py --pool RUN/csl/candidates.tsv \
    --out /tmp/uat_alpha [--sizes 2000 5000 50000] [--seeds 5]

The unit tests check O1–O3 on synthetic histograms; this measures them on a
pool a method made (e.g. the 1M-sample CSL pools of `bench_selection.py`):
* O1, α = 1: the selection's template histogram against the pool's p(T),
  Pearson's χ² (templates whose expected count is under 5 pooled into one
  bin), one p-value per seed;
* O2, α = 0: templates covered against the number with an example, the
  template entropy against log |T|, duplicate example ids;
* O3: templates covered and template entropy for α in `--alphas`, the
  mean over the seeds, and whether both are non-increasing in α.

Writes `OUT/uat_alpha.json` and `OUT/uat_alpha.md`.
"""

import argparse
import json
import os
import time

import numpy as np
import scipy.stats

from csl_jax.data import tsv
from csl_jax.errors import run_script
from csl_jax.selection import diversity
from csl_jax.selection import uat


def chi_square_p(sample_templates: np.ndarray, pool_counts: np.ndarray
                 ) -> float:
  """Pearson's χ² of a sample's template histogram against the pool's."""
  n = len(sample_templates)
  observed = np.bincount(sample_templates, minlength=len(pool_counts))
  expected = n * pool_counts / pool_counts.sum()
  small = expected < 5
  obs = np.append(observed[~small], observed[small].sum())
  exp = np.append(expected[~small], expected[small].sum())
  if exp[-1] == 0:
    obs, exp = obs[:-1], exp[:-1]
  return float(scipy.stats.chisquare(obs, exp).pvalue)


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--pool", required=True)
  parser.add_argument("--out", required=True)
  parser.add_argument("--sizes", type=int, nargs="+",
                      default=[2000, 5000, 50000])
  parser.add_argument("--alphas", type=float, nargs="+",
                      default=[0.0, 0.25, 0.5, 0.75, 1.0])
  parser.add_argument("--seeds", type=int, default=5)
  parser.add_argument("--abstraction", default="auto")
  args = parser.parse_args()
  args.alphas = sorted(args.alphas)  # "non-increasing in α" reads them so
  os.makedirs(args.out, exist_ok=True)

  start = time.perf_counter()
  pool = tsv.read_tsv(args.pool)
  feats = diversity.featurize(pool, args.abstraction, "keysers")
  usable = np.flatnonzero(feats.valid[feats.query_of])
  tmpl = np.unique(feats.template_of[feats.query_of[usable]],
                   return_inverse=True)[1]
  counts = np.bincount(tmpl)
  record = {"pool": args.pool, "examples": int(len(usable)),
            "templates": int(len(counts)),
            "min_template_count": int(counts.min()),
            "templates_with_one_example": int((counts == 1).sum()),
            "log_templates": float(np.log(len(counts))),
            "featurize_seconds": round(time.perf_counter() - start, 1),
            "sizes": {}}
  print(f"{len(usable):,} examples, {len(counts):,} templates "
        f"({record['featurize_seconds']} s)", flush=True)
  for k in args.sizes:
    rows = {}
    for alpha in args.alphas:
      covered, ent, pvals, dups = [], [], [], 0
      for seed in range(args.seeds):
        picks = uat.uat_indices(tmpl, k, alpha, seed)
        dups += len(picks) - len(np.unique(picks))
        hist = np.bincount(tmpl[picks], minlength=len(counts))
        covered.append(int((hist > 0).sum()))
        ent.append(diversity.entropy(hist))
        if alpha == 1.0:
          pvals.append(chi_square_p(tmpl[picks], counts))
      rows[str(alpha)] = {
          "covered_mean": float(np.mean(covered)),
          "covered_std": (float(np.std(covered, ddof=1))
                          if len(covered) > 1 else 0.0),
          "entropy_mean": float(np.mean(ent)),
          "duplicates": dups, "chi2_p": pvals}
      print(f"k={k} alpha={alpha}: {np.mean(covered):.1f} templates, "
            f"H {np.mean(ent):.3f}", flush=True)
    cov = [rows[str(a)]["covered_mean"] for a in args.alphas]
    ent = [rows[str(a)]["entropy_mean"] for a in args.alphas]
    record["sizes"][str(k)] = {
        "by_alpha": rows,
        "covered_non_increasing": bool(np.all(np.diff(cov) <= 0)),
        "entropy_non_increasing": bool(np.all(np.diff(ent) <= 0))}
  with open(os.path.join(args.out, "uat_alpha.json"), "w") as f:
    json.dump(record, f, indent=1)

  lines = [f"pool {args.pool}: {record['examples']:,} examples, "
           f"{record['templates']:,} templates "
           f"({record['templates_with_one_example']:,} with one example), "
           f"log |T| = {record['log_templates']:.3f}", "",
           "| k | α | templates covered | template entropy (nats) | "
           "duplicates | χ² p per seed (α = 1) |", "|---|---|---|---|---|---|"]
  for k, size in record["sizes"].items():
    for alpha, row in size["by_alpha"].items():
      p = ", ".join(f"{x:.2f}" for x in row["chi2_p"]) or ""
      lines.append(f"| {k} | {alpha} | {row['covered_mean']:.1f} ± "
                   f"{row['covered_std']:.1f} | {row['entropy_mean']:.3f} | "
                   f"{row['duplicates']} | {p} |")
    lines.append(f"| {k} | non-increasing in α | "
                 f"{size['covered_non_increasing']} | "
                 f"{size['entropy_non_increasing']} | | |")
  with open(os.path.join(args.out, "uat_alpha.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
  print("\n".join(lines))


if __name__ == "__main__":
  run_script(main)
