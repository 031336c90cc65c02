"""GECA (issue 12) acceptance measurements G3-G7 on the shared data.

Each case runs in its own subprocess (so peak RSS is that case's) and writes
one JSON record; the driver collects them into `--out` (JSON) and a
markdown table (`--out` with .md).

Usage:
  python benchmarks/bench_geca.py --out /tmp/geca_bench.json [--cases g3 g6]
  python benchmarks/bench_geca.py --one g3_uncapped   # one case, JSON out
"""

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time

from csl_jax.errors import run_script

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "..", "shared", "data")  # as the others read it

SCAN = dict(wug_size=1, wug_count=2, max_len=40, dedup=True, window=None)
PAPER_SCAN = dict(SCAN, holdout=640)  # the release's SCAN loader
GEO = dict(wug_size=4, wug_count=2, window=None, dedup=True)
COGS = dict(wug_size=4, wug_count=2, window=None, dedup=True)

# name -> (data dir, settings, validity check)
CASES = {
    "g3_uncapped": ("scan/addprim_jump", dict(PAPER_SCAN, n_sample=None),
                    "scan"),
    "g3_n1000": ("scan/addprim_jump", dict(PAPER_SCAN, n_sample=1000),
                 "scan"),
    "g3_uniform": ("scan/addprim_jump",
                   dict(PAPER_SCAN, n_sample=None, weighting="uniform"),
                   "scan"),
    "g3_all_fills": ("scan/addprim_jump",
                     dict(PAPER_SCAN, n_sample=None, variants=10**9),
                     "scan"),
    "g3_pipeline": ("scan/addprim_jump", dict(SCAN, n_sample=None), "scan"),
    "g4_length": ("scan/length", dict(PAPER_SCAN, n_sample=None), "scan"),
    "g5_turn_left": ("scan/addprim_turn_left",
                     dict(PAPER_SCAN, n_sample=None), "scan"),
    "g5_around_right": ("scan/template_around_right",
                        dict(PAPER_SCAN, n_sample=None), "scan"),
    "g6_standard": ("geoquery/standard", dict(GEO, n_sample=None), "funql"),
    "g6_template_1": ("geoquery/template_1", dict(GEO, n_sample=None),
                      "funql"),
    "g6_standard_limit50": ("geoquery/standard",
                            dict(GEO, wug_limit=50, n_sample=None), "funql"),
    "g6_template_1_limit50": ("geoquery/template_1",
                              dict(GEO, wug_limit=50, n_sample=None),
                              "funql"),
    "g7_cogs_limit50": ("cogs_varfree", dict(COGS, wug_limit=50,
                                             n_sample=None), "cogs"),
    "g7_cogs_limit50_n10000": ("cogs_varfree",
                               dict(COGS, wug_limit=50, n_sample=10000),
                               "cogs"),
    "g7_cogs_nolimit": ("cogs_varfree", dict(COGS, n_sample=10000), "cogs"),
}
GROUPS = {
    "g3": ["g3_uncapped", "g3_n1000", "g3_uniform", "g3_all_fills",
           "g3_pipeline"],
    "g4": ["g4_length"], "g5": ["g5_turn_left", "g5_around_right"],
    "g6": ["g6_standard", "g6_template_1", "g6_standard_limit50",
           "g6_template_1_limit50"],
    "g7": ["g7_cogs_limit50", "g7_cogs_limit50_n10000", "g7_cogs_nolimit"],
}


def _validity(kind, new, max_checked=3000):
  """Share (percent) of generated pairs that are valid, and how many were
  checked (CFG checks are capped, on an even spread of the pairs)."""
  # pylint: disable=g-import-not-at-top
  if not new:
    return None, 0
  if kind == "scan":
    from csl_jax.data import scan
    ok = sum(scan.is_valid_command(i) and scan.interpret(i) == o
             for i, o in new)
    return round(100.0 * ok / len(new), 2), len(new)
  from csl_jax.qcfg.output_cfg import load_output_cfg
  cfg = load_output_cfg(os.path.join(
      ROOT, "tasks", "geoquery/funql.cfg" if kind == "funql"
      else "cogs/varfree.cfg"))
  step = max(1, len(new) // max_checked)
  checked = new[::step]
  ok = sum(cfg.recognizes(o.split()) for _, o in checked)
  return round(100.0 * ok / len(checked), 2), len(checked)


def run_one(name):
  """Runs one case in this process; returns its record."""
  # pylint: disable=g-import-not-at-top
  from csl_jax.data.tsv import read_tsv
  from csl_jax.methods.geca import augment as augment_lib
  from csl_jax.methods.geca import stats as stats_lib
  from csl_jax.methods.geca.config import GECAConfig
  data_dir, settings, kind = CASES[name]
  train = [tuple(x) for x in read_tsv(os.path.join(DATA, data_dir,
                                                   "train.tsv"))]
  test_path = os.path.join(DATA, data_dir, "test.tsv")
  test = [tuple(x) for x in read_tsv(test_path)] if os.path.exists(
      test_path) else []
  config = GECAConfig(**settings)
  record = {"case": name, "data": data_dir, "train_lines": len(train),
            "settings": dataclasses.asdict(config)}
  t0 = time.perf_counter()
  try:
    new, stats = augment_lib.augment(train, config)
  except augment_lib.GECAResourceError as e:
    record.update(stopped=str(e), estimate=e.estimate,
                  seconds=round(time.perf_counter() - t0, 2),
                  peak_rss_gb=round(augment_lib._peak_rss_gb(), 3))  # pylint: disable=protected-access
    return record
  record["seconds_augment"] = round(time.perf_counter() - t0, 2)
  record.update({k: v for k, v in stats.items() if k != "config"})
  used = augment_lib.prepare_pairs(train, config)
  record["overlap"] = stats_lib.overlap_stats(used, new, test)
  record["valid_percent"], record["valid_checked"] = _validity(kind, new)
  record["with_jump"] = sum("jump" in i.split() for i, _ in new)
  test_set = set(test)
  record["in_test"] = sum(p in test_set for p in new)
  return record


def _markdown(records):
  lines = ["| case | train | generated | templates / fragments used | "
           "valid % | in test | overlap full / co-occ. before -> after | "
           "time s | peak RSS GB |", "|---|---|---|---|---|---|---|---|---|"]
  for r in records:
    if "stopped" in r:
      lines.append(f"| {r['case']} | {r['train_lines']} | stopped: "
                   f"{r['estimate']} | | | | | {r['seconds']} | "
                   f"{r['peak_rss_gb']} |")
      continue
    o = r.get("overlap") or {}
    ov = (f"{o.get('full_overlap_after', '-')}% / "
          f"{o.get('input_cooccurrence_before', '-')}% -> "
          f"{o.get('input_cooccurrence_after', '-')}% (input); "
          f"{o.get('cooccurrence_before', '-')}% -> "
          f"{o.get('cooccurrence_after', '-')}% (both sides)") if o else "-"
    lines.append(
        f"| {r['case']} | {r['train_pairs']} | {r['generated']} | "
        f"{r['templates_used']} / {r['fragments_used']} | "
        f"{r['valid_percent']} | {r['in_test']} | {ov} | "
        f"{r['seconds']['total']} | {r['peak_rss_gb']} |")
  return "\n".join(lines) + "\n"


def main():
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("--out", default="/tmp/geca_bench.json")
  parser.add_argument("--cases", nargs="*", default=list(GROUPS))
  parser.add_argument("--one", default=None)
  args = parser.parse_args()
  if args.one:
    print(json.dumps(run_one(args.one)))
    return
  names = [n for c in args.cases for n in GROUPS.get(c, [c])]
  unknown = [n for n in names if n not in CASES]
  if unknown:
    parser.error(f"unknown case {unknown[0]!r}; valid: "
                 f"{', '.join(list(GROUPS) + list(CASES))}")
  records = []
  if os.path.exists(args.out):
    with open(args.out) as f:
      records = [r for r in json.load(f) if r["case"] not in names]
  for name in names:
    t0 = time.time()
    proc = subprocess.run([sys.executable, __file__, "--one", name],
                          capture_output=True, text=True, check=False)
    if proc.returncode:
      records.append({"case": name, "error": proc.stderr[-2000:]})
      print(name, "failed:", proc.stderr[-2000:], file=sys.stderr)
    else:
      records.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    records[-1]["wall_seconds"] = round(time.time() - t0, 1)
    print(name, json.dumps({k: v for k, v in records[-1].items()
                            if k not in ("preview", "settings")})[:600],
          flush=True)
    with open(args.out, "w") as f:
      json.dump(records, f, indent=1)
  ok = [r for r in records if "error" not in r]
  with open(os.path.splitext(args.out)[0] + ".md", "w") as f:
    f.write(_markdown(ok))
  failed = [r["case"] for r in records if "error" in r]
  if failed:  # each said above, with its error
    print(f"bench_geca.py: {len(failed)} case(s) failed: {', '.join(failed)}",
          file=sys.stderr)
    return 1
  return 0


if __name__ == "__main__":
  run_script(main)
