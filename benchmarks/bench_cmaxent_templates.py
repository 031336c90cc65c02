"""Where CMaxEnt's picks go, template by template (issue 14, O5).

  python benchmarks/bench_cmaxent_templates.py --pool /tmp/cogs_pool/csl/candidates.tsv \
    --out /tmp/cmaxent_templates [--k 5000] [--random_repeats 5] [--top 5] \
    [--output_cfg tasks/cogs/typed.cfg]

O5 asks CMaxEnt to cover at least as many abstract templates as a random
selection of the same size. This script says how a selection spends its k
examples: for CMaxEnt under each compound weighting ("keysers", the
default, and "none") and for random selections, the templates covered (also
after every 1,000 picks, in CMaxEnt's order), the share of the k examples in
the most frequent template and in the ten most frequent, the mean input and
output length in tokens, and the top templates with one example each.
The pool's counts of queries, templates, atoms and compounds come with it.
With `--output_cfg`, also the share of the pool's and each selection's
examples whose output that CFG accepts (COGS: `tasks/cogs/typed.cfg`, the
typed grammar; CSL samples over the untyped `varfree.cfg` can put a verb in
a noun slot, which the typed one refuses).

Writes OUT/templates.json and OUT/templates.md.
"""

import argparse
import json
import os
from typing import Any, Dict, Optional, Sequence

import numpy as np

from csl_jax import assets
from csl_jax.data import tsv
from csl_jax.errors import run_script
from csl_jax.qcfg.output_cfg import load_output_cfg
from csl_jax.selection import cmaxent
from csl_jax.selection import diversity


def accepted_share(accepted: Dict[str, bool], pool: Sequence[tsv.Example],
                   indices: np.ndarray) -> float:
  return float(np.mean([accepted[pool[i].output] for i in indices]))


def spend(features: diversity.PoolFeatures, pool: Sequence[tsv.Example],
          indices: np.ndarray, top: int, every: int = 1000,
          accepted: Optional[Dict[str, bool]] = None) -> Dict[str, Any]:
  """How a selection of example `indices`, in their order, spreads over the
  templates (`covered_after`: templates covered after each `every`), and
  with `accepted` (output -> whether the CFG accepts it) the share of its
  examples accepted."""
  tmpl = features.template_of[features.query_of[indices]]
  k = len(indices)
  counts = np.bincount(tmpl, minlength=len(features.templates))
  ranked = np.argsort(-counts, kind="stable")
  covered, seen = [], set()
  for i, t in enumerate(tmpl.tolist(), 1):
    seen.add(t)
    if i % every == 0:
      covered.append(len(seen))
  tops = []
  for t in ranked[:top]:
    ex = pool[int(indices[np.flatnonzero(tmpl == t)[0]])]
    tops.append({"template": features.templates[t],
                 "examples": int(counts[t]),
                 "example": f"{ex.input}\t{ex.output}"})
  row = {
      "templates_covered": int((counts > 0).sum()),
      "covered_after": covered,
      "top1_share": int(counts[ranked[0]]) / k,
      "top10_share": int(counts[ranked[:10]].sum()) / k,
      "mean_input_tokens": float(np.mean(
          [len(pool[i].input.split()) for i in indices])),
      "mean_output_tokens": float(np.mean(
          [len(pool[i].output.split()) for i in indices])),
      "top": tops}
  if accepted is not None:
    row["accepted_share"] = accepted_share(accepted, pool, indices)
  return row


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--pool", required=True)
  parser.add_argument("--out", required=True)
  parser.add_argument("--k", type=int, default=5000)
  parser.add_argument("--random_repeats", type=int, default=5)
  parser.add_argument("--top", type=int, default=5)
  parser.add_argument("--output_cfg", default=None,
                      help="report the share of outputs this CFG accepts")
  args = parser.parse_args()
  pool = tsv.read_tsv(args.pool)
  record: Dict[str, Any] = {"pool": args.pool, "k": args.k, "rows": {}}
  accepted = None
  if args.output_cfg:
    cfg = load_output_cfg(assets.resolve(args.output_cfg))
    accepted = {y: cfg.recognizes(y.split())
                for y in dict.fromkeys(e.output for e in pool)}
    record["output_cfg"] = args.output_cfg
    record["pool_accepted_share"] = accepted_share(
        accepted, pool, np.arange(len(pool)))
  features = None
  for weighting in diversity.WEIGHTINGS:
    features = diversity.featurize(pool, "auto", weighting)
    picks = cmaxent.greedy_queries(features, args.k)
    indices = cmaxent.examples_for(picks, features, 0)
    record["rows"][f"cmaxent ({weighting})"] = spend(
        features, pool, indices, args.top, accepted=accepted)
  record["pool_counts"] = {
      "examples": len(pool), "queries": len(features.query_count),
      "templates": len(features.templates),
      "atoms": len(features.atom_names),
      "compounds": len(features.compound_names)}
  rng = np.random.default_rng(0)
  for r in range(args.random_repeats):
    record["rows"][f"random (seed {r})"] = spend(
        features, pool, rng.permutation(len(pool))[:args.k], args.top,
        accepted=accepted)
  os.makedirs(args.out, exist_ok=True)
  with open(os.path.join(args.out, "templates.json"), "w") as f:
    json.dump(record, f, indent=1)
  lines = [f"k = {args.k}; pool: {record['pool_counts']}"]
  extra = ""
  if accepted is not None:
    lines.append(f"pool outputs accepted by {args.output_cfg}: "
                 f"{record['pool_accepted_share']:.3f}")
    extra = f" accepted by {os.path.basename(args.output_cfg)} |"
  lines += ["", "| selection | templates | after each 1,000 | top-1 share | "
            "top-10 share | mean input / output tokens |" + extra,
            "|---|---|---|---|---|---|" + ("---|" if extra else "")]
  for name, row in record["rows"].items():
    lines.append(
        f"| {name} | {row['templates_covered']} | "
        f"{', '.join(map(str, row['covered_after']))} | "
        f"{row['top1_share']:.3f} | {row['top10_share']:.3f} | "
        f"{row['mean_input_tokens']:.2f} / {row['mean_output_tokens']:.2f} |"
        + (f" {row['accepted_share']:.3f} |" if extra else ""))
  for name, row in record["rows"].items():
    if name.startswith("random") and not name.endswith("0)"):
      continue
    lines += ["", f"{name}, top templates:"]
    lines += [f"- {t['examples']}: `{t['template']}`, e.g. `{t['example']}`"
              for t in row["top"]]
  with open(os.path.join(args.out, "templates.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
  print("\n".join(lines))


if __name__ == "__main__":
  run_script(main)
