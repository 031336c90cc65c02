"""Scoring and tables: exact match by output length and by category,
mean ± std over seeds, results.jsonl / results.md / results.html."""

import collections
import html
import json
import math
import os
import statistics
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

from csl_jax import evaluation
from csl_jax import provenance
from csl_jax.errors import InputError
from csl_jax.files import atomic_write_text

RESULTS_JSONL = "results.jsonl"
RESULTS_MD = "results.md"
RESULTS_HTML = "results.html"
FILES_DIR = "results_files"
# Yao & Koller (2024) Table 1 report COGS's structural generalization
# categories apart: where CSL's gains should concentrate.
STRUCTURAL = ("obj_pp_to_subj_pp", "pp_recursion", "cp_recursion")


def score(rows: Sequence[Sequence[str]],
          categories: Optional[Sequence[str]] = None) -> Dict[str, Any]:
  """Exact match of (input, target, prediction) rows, overall, by target
  length (in whitespace tokens) and, with `categories` (one per row, in
  order), by category. Counts are [examples, correct]."""
  if categories is not None and len(categories) != len(rows):
    raise InputError(f"{len(categories)} categories for {len(rows)} "
                     "examples: the category file does not align with the "
                     "evaluated part")
  by_length: Dict[int, List[int]] = collections.defaultdict(lambda: [0, 0])
  by_category: Dict[str, List[int]] = collections.defaultdict(
      lambda: [0, 0])
  correct = 0
  for i, (_, target, prediction) in enumerate(rows):
    hit = int(evaluation.matches(target, prediction))
    correct += hit
    counts = by_length[len(evaluation.normalize(target).split())]
    counts[0] += 1
    counts[1] += hit
    if categories is not None:
      counts = by_category[categories[i]]
      counts[0] += 1
      counts[1] += hit
  out = {"accuracy": 100.0 * correct / len(rows) if rows else float("nan"),
         "num_examples": len(rows), "num_correct": correct,
         "by_length": {str(k): v for k, v in sorted(by_length.items())}}
  if categories is not None:
    out["by_category"] = dict(sorted(by_category.items()))
  return out


def seen_outputs(targets: Iterable[str], training_files: Sequence[str]
                 ) -> set:
  """The eval `targets` (normalized) that some training file (TSV, output
  in the second column) holds as an output: what a cell may have learnt by
  heart. Streams the files; memory grows with the targets only."""
  wanted = {evaluation.normalize(t) for t in targets}
  seen = set()
  for path in training_files:
    with open(path, encoding="utf-8") as f:
      for line in f:
        parts = line.rstrip("\r\n").split("\t")
        if len(parts) >= 2:
          output = evaluation.normalize(parts[1])
          if output in wanted:
            seen.add(output)
  return seen


def seen_scores(rows: Sequence[Sequence[str]], seen: set
                ) -> Dict[str, List[int]]:
  """[examples, correct] of the (input, target, prediction) rows whose
  target the cell trained on (`seen`, normalized) and of the rest: whether
  an augmentation's gain is outputs it wrote out (Yao & Koller's test
  instance coverage, Table 5) or composition."""
  out = {"seen": [0, 0], "unseen": [0, 0]}
  for _, target, prediction in rows:
    counts = out["seen" if evaluation.normalize(target) in seen
                 else "unseen"]
    counts[0] += 1
    counts[1] += int(evaluation.matches(target, prediction))
  return out


def mean_std(values: Sequence[float]) -> Dict[str, float]:
  """Mean and sample standard deviation (n - 1; 0 for one value).

  Both in exact arithmetic (`statistics`), rounded once: seeds that agree
  have a std of exactly 0 (a float mean's residue, 3 × 0.1 / 3 - 0.1 =
  1e-17, read as spread made Welch's t of two such rows enormous), and rows
  of the same mean differ by exactly 0. A NaN (or inf) value makes the mean
  NaN (inf) and the std NaN."""
  values = [float(v) for v in values]
  n = len(values)
  if not n:
    return {"mean": float("nan"), "std": float("nan"), "n": 0}
  if not all(math.isfinite(v) for v in values):
    return {"mean": sum(values) / n,
            "std": float("nan") if n > 1 else 0.0, "n": n}
  return {"mean": statistics.mean(values),
          "std": statistics.stdev(values) if n > 1 else 0.0, "n": n}


def cell_text(stats: Mapping[str, float]) -> str:
  """`mean ± std (n)`, the papers' cell; `mean (1)` for one seed, whose
  spread is unknown, not 0; blank when no seed finished."""
  if not stats or not stats.get("n"):
    return "–"
  if stats["n"] == 1:
    return f"{stats['mean']:.2f} (1)"
  return f"{stats['mean']:.2f} ± {stats['std']:.2f} ({stats['n']})"


def _column(record: Mapping[str, Any], part: str) -> str:
  """A table's column: the split, with the part (`split/part`) where the
  record has several."""
  return record["split"] if len(record["accuracy_by_part"]) == 1 else \
      f"{record['split']}/{part}"


def _values(records: Iterable[Mapping[str, Any]], field: str
            ) -> Dict[str, Dict[str, List[float]]]:
  """{data: {column: per-seed values of `field`}} (see `aggregate`)."""
  values: Dict[str, Dict[str, List[float]]] = collections.defaultdict(
      lambda: collections.defaultdict(list))
  for r in records:
    by_part = r.get(f"{field}_by_part")
    for part in r["accuracy_by_part"]:
      column = _column(r, part)
      value = by_part.get(part) if by_part is not None else r.get(field)
      if value is not None:
        values[r["data"]][column].append(value)
  return values


def aggregate(records: Iterable[Mapping[str, Any]], field: str = "accuracy"
              ) -> Dict[str, Dict[str, Dict[str, float]]]:
  """{data: {column: mean_std}} of `field` over seeds; a column is the split
  (with its eval part, `split/part`, when records have several parts). A
  field with a per-part form (`accuracy`, `perplexity`) is read per part;
  records without the field (older runs) are left out."""
  return {d: {c: mean_std(v) for c, v in cols.items()}
          for d, cols in _values(records, field).items()}


def welch(base: Sequence[float], other: Sequence[float],
          level: float = 0.95) -> Dict[str, float]:
  """`other` − `base`: the difference of the means, its `level` interval
  and the two-sided p of Welch's t-test (unequal variances,
  Welch-Satterthwaite degrees of freedom). The interval and p are NaN with
  fewer than two values a side or no spread in either: the seeds cannot
  say then."""
  from scipy import stats  # pylint: disable=g-import-not-at-top
  a, b = mean_std(base), mean_std(other)
  nan = float("nan")
  out = {"delta": b["mean"] - a["mean"], "low": nan, "high": nan, "p": nan,
         "n": min(a["n"], b["n"])}
  if a["n"] < 2 or b["n"] < 2:
    return out
  va, vb = a["std"] ** 2 / a["n"], b["std"] ** 2 / b["n"]
  if va + vb == 0:
    return out
  se = math.sqrt(va + vb)
  df = (va + vb) ** 2 / (va ** 2 / (a["n"] - 1) + vb ** 2 / (b["n"] - 1))
  half = float(stats.t.ppf(0.5 + level / 2, df)) * se
  out.update(low=out["delta"] - half, high=out["delta"] + half,
             p=float(2 * stats.t.sf(abs(out["delta"]) / se, df)))
  return out


def difference_table(records: Iterable[Mapping[str, Any]],
                     base: str = "original"
                     ) -> Dict[str, Dict[str, Dict[str, float]]]:
  """{data: {column: welch(base's seeds, data's seeds)}} of exact match,
  for every row but `base` in a column `base` has; {} without `base`."""
  values = _values(records, "accuracy")
  if base not in values:
    return {}
  return {d: {c: welch(values[base][c], v) for c, v in cols.items()
              if c in values[base]}
          for d, cols in values.items() if d != base}


def difference_text(stats: Mapping[str, float]) -> str:
  """`+Δ [low, high] p = P`, or `+Δ` alone where the seeds cannot say."""
  if not stats or not stats.get("n"):
    return "–"
  if math.isnan(stats["p"]):
    return f"{stats['delta']:+.2f}"
  return (f"{stats['delta']:+.2f} [{stats['low']:+.2f}, {stats['high']:+.2f}]"
          f" p = {stats['p']:.2g}")


def seen_table(records: Sequence[Mapping[str, Any]]
               ) -> Dict[str, Dict[str, Dict[str, float]]]:
  """{data: {"<column> seen" | "<column> unseen" | "<column> % seen":
  mean_std}} over the records that have them (`cell.seen_by_part`),
  each column's three side by side."""
  fields = (("accuracy_seen", "seen"), ("accuracy_unseen", "unseen"),
            ("seen_share", "% seen"))
  tables = [aggregate(records, field) for field, _ in fields]
  columns = _columns(tables[-1])  # every column has a share
  table: Dict[str, Dict[str, Dict[str, float]]] = {}
  for data in tables[-1]:
    for column in columns:
      for (_, suffix), part in zip(fields, tables,
                                   strict=True):  # "–" where none
        table.setdefault(data, {})[f"{column} {suffix}"] = part.get(
            data, {}).get(column, mean_std([]))
  return table


def category_table(records: Iterable[Mapping[str, Any]]
                   ) -> Dict[str, Dict[str, Dict[str, float]]]:
  """{data: {category: mean_std of the per-seed accuracy}}, over every
  record with categories (COGS gen); where several splits or parts have
  categories, each is its own (`<column>: <category>`, columns as
  `aggregate`'s), never one mean over them."""
  records = list(records)
  values: Dict[str, Dict[str, List[float]]] = collections.defaultdict(
      lambda: collections.defaultdict(list))
  columns = {_column(r, part) for r in records
             for part in r.get("by_category") or {}}
  for r in records:
    for part, cats in (r.get("by_category") or {}).items():
      prefix = f"{_column(r, part)}: " if len(columns) > 1 else ""
      for cat, (n, ok) in cats.items():
        values[r["data"]][prefix + cat].append(
            100.0 * ok / n if n else float("nan"))
  return {d: {c: mean_std(v) for c, v in cols.items()}
          for d, cols in values.items()}


def length_curve(records: Iterable[Mapping[str, Any]], split: str
                 ) -> Dict[str, Dict[int, float]]:
  """{data: {target length: accuracy}} of a split's first eval part, the
  counts pooled over seeds."""
  pooled: Dict[str, Dict[int, List[int]]] = collections.defaultdict(
      lambda: collections.defaultdict(lambda: [0, 0]))
  for r in records:
    if r["split"] != split:
      continue
    part = r.get("eval_part") or next(iter(r["by_length"]))
    for length, (n, ok) in r["by_length"][part].items():
      pooled[r["data"]][int(length)][0] += n
      pooled[r["data"]][int(length)][1] += ok
  return {d: {k: 100.0 * ok / n for k, (n, ok) in sorted(c.items()) if n}
          for d, c in pooled.items()}


def _columns(table) -> List[str]:
  return list(dict.fromkeys(c for cols in table.values() for c in cols))


def markdown_table(table, rows: Sequence[str], first: str = "training data",
                   text=cell_text) -> str:
  columns = _columns(table)
  lines = ["| " + " | ".join([first] + columns) + " |",
           "|" + "---|" * (len(columns) + 1)]
  for row in rows:
    if row in table:
      lines.append("| " + " | ".join(
          [row] + [text(table[row].get(c)) for c in columns]) + " |")
  return "\n".join(lines) + "\n"


def html_table(table, rows: Sequence[str], first: str = "training data",
               text=cell_text) -> str:
  columns = _columns(table)
  out = ["<table>", "<tr>" + "".join(
      f"<th>{html.escape(c)}</th>" for c in [first] + columns) + "</tr>"]
  for row in rows:
    if row in table:
      out.append("<tr>" + "".join(
          f"<td>{html.escape(x)}</td>" for x in
          [row] + [text(table[row].get(c)) for c in columns]) + "</tr>")
  out.append("</table>")
  return "\n".join(out) + "\n"


def write_jsonl(out_dir: str, records: Sequence[Mapping[str, Any]]) -> str:
  path = os.path.join(out_dir, RESULTS_JSONL)
  atomic_write_text(path, "".join(json.dumps(r, sort_keys=True) + "\n"
                                  for r in records))
  return path


def _run_table(records) -> List[List[str]]:
  rows = []
  for r in records:
    rows.append([r["split"], r["data"], str(r["seed"]),
                 f"{r['accuracy']:.2f}", f"{r['train_seconds']:.0f}",
                 f"{r['decode_seconds']:.0f}",
                 f"{r.get('examples_per_second') or 0:.0f}",
                 str(r["num_original"]), str(r["num_synthetic"]),
                 "last" if r.get("selected_step") is None else
                 f"{r['selected_step']} (dev {r['dev_accuracy']:.2f})"])
  return rows


_RUN_HEADER = ["split", "data", "seed",
               "exact match (%), the first eval part", "train (s)",
               "decode (s)", "train examples/s", "original pairs",
               "synthetic pairs", "checkpoint (step)"]


def write_tables(out_dir: str, records: Sequence[Mapping[str, Any]],
                 rows: Sequence[str], meta: Mapping[str, Any],
                 plots: Mapping[str, str]) -> Dict[str, str]:
  """results.md and results.html: the papers' table (rows: training data,
  columns: splits, cells: exact match mean ± std (seeds)), COGS categories,
  the plots and one row per run."""
  # Every row, "–" where no cell of it has finished yet: a row left out
  # would read as a row never asked for.
  table = {**{row: {} for row in rows}, **aggregate(records)}
  cats = category_table(records)
  title = f"Experiment {meta.get('name', '')}".strip()
  steps = f"{meta.get('num_steps')} training steps"
  if meta.get("finetune_steps") is not None:  # pretrain_finetune
    steps = (f"{meta.get('num_steps')} steps on the synthetic data, then "
             f"{meta['finetune_steps']} fine-tuning steps on the original "
             f"(the original row: {meta.get('num_steps')} steps on the "
             "original alone)")
  shown = [f"{k} {v}" for k, v in sorted(
      (meta.get("dataset_options") or {}).items()) if v is not None]
  options = f" ({', '.join(shown)})" if shown else ""
  setup = (f"dataset {meta.get('dataset')}{options}, "
           f"regime {meta.get('regime')}, "
           f"{steps}, batch "
           f"{meta.get('batch_size')}, beam {meta.get('beam_size')}, "
           f"eval parts {', '.join(meta.get('eval_parts', []))}; "
           f"trainer {meta.get('trainer') or 'seqio'}; "
           f"checkpoint: {meta.get('checkpoint') or 'the last'}; "
           f"{len(records)} of {meta.get('num_cells')} cells finished")
  if meta.get("exclude_templates"):
    setup += (f"; selections without the {meta['exclude_templates']} "
              "part's templates")
  if meta.get("shared_synthetic"):
    setup += ("; the seeds shared one synthetic sample for "
              f"{', '.join(meta['shared_synthetic'])} (their spread leaves "
              "the data's variance out)")
  devices = sorted({r["device"] for r in records if r.get("device")})
  setup += (f"; written by {provenance.line()}"
            + (f"; cells on {', '.join(devices)}" if devices else "")
            + " (provenance.json)")
  md = [f"# {title}\n", setup + ".\n",
        "## Exact match (%), mean ± std over seeds (number of seeds; the "
        "sample std, n - 1)\n",
        markdown_table(table, rows)]
  body = [f"<h1>{html.escape(title)}</h1>", f"<p>{html.escape(setup)}.</p>",
          "<h2>Exact match (%), mean ± std over seeds (number of seeds; the "
          "sample std, n - 1)</h2>",
          html_table(table, rows)]
  base = meta.get("compare_to", "original")  # the runner's resolved row
  diff = difference_table(records, base)
  if diff:
    head = (f"Difference to {base} (exact match points): mean over seeds, "
            "its 95% interval (Welch-Satterthwaite t) and the two-sided p "
            "of Welch's t-test, to 2 significant digits (the seeds' "
            "spread only; none where a row has one seed or no spread)")
    md += [f"\n## {head}\n", markdown_table(diff, rows,
                                             text=difference_text)]
    body += [f"<h2>{html.escape(head)}</h2>",
             html_table(diff, rows, text=difference_text)]
  if cats:
    ordered = {d: dict(sorted(c.items(), key=lambda kv: (
        kv[0] not in STRUCTURAL, kv[0]))) for d, c in cats.items()}
    md += ["\n## Exact match (%) per generalization category "
           "(structural first)\n", markdown_table(
               {c: {d: ordered[d][c] for d in ordered if c in ordered[d]}
                for c in _columns(ordered)}, _columns(ordered),
               "category")]
    body += ["<h2>Exact match (%) per generalization category (structural "
             "first)</h2>", html_table(
                 {c: {d: ordered[d][c] for d in ordered if c in ordered[d]}
                  for c in _columns(ordered)}, _columns(ordered),
                 "category")]
  seen = seen_table(records)
  if seen:
    head = ("Exact match (%) on the eval examples whose output is in the "
            "cell's training files (seen: its original or synthetic file) "
            "and on the rest (unseen), and the seen share (%), mean ± std "
            "over seeds; of a synthetic file longer than the cell's draws "
            "it read only part, so there seen counts more than it trained "
            "on")
    md += [f"\n## {head}\n", markdown_table(seen, rows)]
    body += [f"<h2>{html.escape(head)}</h2>", html_table(seen, rows)]
  ppl = aggregate(records, "perplexity")
  if ppl:
    head = ("Per-token perplexity of the gold outputs, teacher forced (Yao "
            "& Koller's Table 6; EOS counted, outputs cut at the model's "
            "max_target_len), mean ± std over seeds"
            # Unlike the exact match above: the bundle's cells compute it
            # on the accelerator over the whole part.
            + ("; of the whole part, GOODDEV's dev rows included"
               if "GOODDEV" in (meta.get("checkpoint") or "") else ""))
    md += [f"\n## {head}\n", markdown_table(ppl, rows)]
    body += [f"<h2>{html.escape(head)}</h2>", html_table(ppl, rows)]
  for label, path in plots.items():
    rel = os.path.relpath(path, out_dir)
    md.append(f"\n## {label}\n\n![{label}]({rel})\n")
    body.append(f"<h2>{html.escape(label)}</h2><img src=\"{html.escape(rel)}"
                f"\" alt=\"{html.escape(label)}\" style=\"max-width:100%\">")
  runs = _run_table(records)
  md += ["\n## Runs\n", "| " + " | ".join(_RUN_HEADER) + " |",
         "|" + "---|" * len(_RUN_HEADER)]
  md += ["| " + " | ".join(r) + " |" for r in runs]
  body += ["<h2>Runs</h2>", "<table><tr>" + "".join(
      f"<th>{html.escape(h)}</th>" for h in _RUN_HEADER) + "</tr>"]
  body += ["<tr>" + "".join(f"<td>{html.escape(x)}</td>" for x in r)
           + "</tr>" for r in runs]
  body.append("</table>")
  md_path = os.path.join(out_dir, RESULTS_MD)
  html_path = os.path.join(out_dir, RESULTS_HTML)
  atomic_write_text(md_path, "\n".join(md) + "\n")
  atomic_write_text(html_path, (
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>"
      f"{html.escape(title)}</title><style>body{{font-family:sans-serif}}"
      "table{border-collapse:collapse}td,th{border:1px solid #999;"
      "padding:2px 6px;text-align:right}</style></head><body>\n"
      + "\n".join(body) + "\n</body></html>\n"))
  return {"markdown": md_path, "html": html_path}
