"""The run report: `RUN/report.html` and `RUN/report.md`, one column per method.

It reads only the run directory contract (`pipeline/augment.py`): the
original data, each method's `summary.json` and `synthetic.tsv`. Plots are
matplotlib PNGs in `RUN/report_files/`, shared by both reports.
"""

import collections
import html
import os
from typing import Any, Dict, List, Sequence, Tuple

from csl_jax.data import tsv
from csl_jax.files import (atomic_write_json, atomic_write_text, read_json,
                           save_figure_once)
from csl_jax.pipeline import cache

FILES_DIR = "report_files"
PREVIEW = 10


def output_depth(output: str) -> int:
  """Bracket nesting depth of a program (0 for flat outputs such as SCAN's)."""
  if "(" not in output and "[" not in output:
    return 0  # (a run's report measures every synthetic line)
  depth = top = 0
  for token in output.split():
    depth += token.count("(") + token.count("[") - token.count(")") - \
        token.count("]")
    top = max(top, depth)
  return top


def methods_in(run_dir: str) -> List[str]:
  """The methods present: `RUN/<m>/` with `synthetic.tsv` and `summary.json`
  made from the run's current data (a method not rerun since the data
  changed is stale; runs from before the data was recorded count)."""
  current = read_json(os.path.join(run_dir, "data", cache.KEY_FILE))["key"]
  found = []
  for name in sorted(os.listdir(run_dir)):
    d = os.path.join(run_dir, name)
    if (name != "data" and os.path.isfile(os.path.join(d, "synthetic.tsv"))
        and os.path.isfile(os.path.join(d, "summary.json")) and
        read_json(os.path.join(d, "summary.json")).get(
            "data_key", current) == current):
      found.append(name)
  return found


def _histogram_png(path: str, title: str, xlabel: str,
                   series: Dict[str, Sequence[int]]) -> None:
  """Side-by-side bars of each series' share of examples per integer value;
  a rerun whose figure would be the same keeps the PNG
  (`files.save_figure_once`)."""
  counted = {name: collections.Counter(s) for name, s in series.items()}

  def draw():
    import matplotlib  # pylint: disable=g-import-not-at-top
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt  # pylint: disable=g-import-not-at-top
    values = sorted({v for counts in counted.values() for v in counts})
    fig, ax = plt.subplots(figsize=(7, 3))
    width = 0.8 / max(len(series), 1)
    for k, (name, s) in enumerate(series.items()):
      counts, total = counted[name], max(len(s), 1)
      ax.bar([v + (k - (len(series) - 1) / 2) * width for v in values],
             [100.0 * counts[v] / total for v in values], width=width,
             label=f"{name} (n={len(s):,})")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("share of examples (%)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig

  save_figure_once(path, [title, xlabel, {
      name: sorted(counts.items()) for name, counts in counted.items()}],
                   draw, dpi=90)


def _table_md(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
  cell = lambda c: c.replace("|", "\\|")  # a bare | splits the cell
  lines = ["| " + " | ".join(map(cell, header)) + " |",
           "|" + "---|" * len(header)]
  lines += ["| " + " | ".join(map(cell, r)) + " |" for r in rows]
  return "\n".join(lines)


def _table_html(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
  head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
  body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) +
                 "</tr>" for r in rows)
  return f"<table><tr>{head}</tr>{body}</table>"


DATA_FILE = "data.json"  # the data section, keyed by the files it reads


def _data_section(run_dir: str, methods: Sequence[str]) -> Dict[str, Any]:
  """Sizes, plots and previews of the original and synthetic data: read
  from every line of them (seconds to minutes for millions of lines), so
  kept in RUN/report_files/data.json with the hashes of the files, and
  reused while they are unchanged (a rerun with every stage cached)."""
  data = os.path.join(run_dir, "data")
  files = [os.path.join(data, "train.tsv")] + [
      os.path.join(run_dir, m, "synthetic.tsv") for m in methods]
  key = cache.stage_key("report data", files, {"methods": list(methods)})
  files_dir = os.path.join(run_dir, FILES_DIR)
  path = os.path.join(files_dir, DATA_FILE)
  if os.path.exists(path):
    try:
      kept = read_json(path)
    except ValueError:  # a torn file from another tool: redo
      kept = {}
    if kept.get("key") == key["key"] and all(
        os.path.exists(os.path.join(run_dir, p)) for _, p in kept["plots"]):
      return kept
  train = tsv.read_tsv(files[0])
  # A method may make nothing (GECA with one wug on SCAN length): 0 pairs.
  synthetic = {m: tsv.read_tsv(f, allow_empty=True)
               for m, f in zip(methods, files[1:])}
  sizes: List[List[str]] = [
      ["pairs", f"{len(train):,}"] +
      [f"{len(synthetic[m]):,}" for m in methods],
      ["distinct inputs", f"{len({e.input for e in train}):,}"] +
      [f"{len({e.input for e in synthetic[m]}):,}" for m in methods],
      ["distinct new pairs (not in train)", "—"] +
      [f"{len(set(synthetic[m]) - set(train)):,}" for m in methods],
  ]
  os.makedirs(files_dir, exist_ok=True)
  plots: List[Tuple[str, str]] = []
  measures = [("input_length", "input length", "tokens",
               lambda e: len(e.input.split())),
              ("output_length", "output length", "tokens",
               lambda e: len(e.output.split())),
              ("output_depth", "output bracket depth", "depth",
               lambda e: output_depth(e.output))]
  for name, what, unit, measure in measures:
    series = {"original": [measure(e) for e in train]}
    series.update({m: [measure(e) for e in synthetic[m]] for m in methods})
    if name == "output_depth" and not any(any(s) for s in series.values()):
      continue  # flat outputs: nothing to show
    png = f"{name}.png"
    _histogram_png(os.path.join(files_dir, png),
                   f"{what}: original vs synthetic", f"{what} ({unit})",
                   series)
    plots.append((what, f"{FILES_DIR}/{png}"))
  kept = {"key": key["key"], "sizes": sizes, "plots": plots,
          "previews": {m: [[e.input, e.output]
                           for e in synthetic[m][:PREVIEW]]
                       for m in methods}}
  atomic_write_json(path, kept)
  return kept


def write_report(run_dir: str) -> str:
  """Writes the report of everything in `run_dir`; returns the HTML path."""
  data = os.path.join(run_dir, "data")
  summary = read_json(os.path.join(data, "summary.json"))
  where = summary.get("split") or summary.get("data_dir")
  title = f"Augmentation: {summary.get('dataset')}" + (
      f" / {where}" if where else "")
  methods = methods_in(run_dir)
  info = {m: read_json(os.path.join(run_dir, m, "summary.json"))
          for m in methods}
  section = _data_section(run_dir, methods)

  header = ["", "original"] + methods
  sizes: List[List[str]] = [list(row) for row in section["sizes"]]
  # Method-specific rows (parser accuracy, grammar size, ...), aligned by
  # label across methods.
  labels: Dict[str, Dict[str, str]] = collections.OrderedDict()
  for m in methods:
    for label, value in info[m].get("report_rows", []):
      labels.setdefault(label, {})[m] = value
  sizes += [[label, "—"] + [by.get(m, "—") for m in methods]
            for label, by in labels.items()]
  times: List[List[str]] = []
  for m in methods:
    stages = info[m].get("stages", {})
    for stage in info[m].get("stage_order", sorted(stages)):
      s = stages[stage]
      times.append([m, stage, f'{s.get("seconds", 0):.1f} s',
                    "cached" if s.get("cached") else "ran"])

  plots = [tuple(p) for p in section["plots"]]
  previews = section["previews"]
  md = [f"# {title}", "", "## Data", "", _table_md(header, sizes), "",
        "## Stage times", "",
        _table_md(["method", "stage", "time", ""], times), "", "## Plots", ""]
  md += [f"![{w}]({p})" for w, p in plots]
  for m in methods:
    md += ["", f"## Preview: {m}", "",
           _table_md(["input", "output"], previews[m])]
  atomic_write_text(os.path.join(run_dir, "report.md"), "\n".join(md) + "\n")

  page = [f"""<!doctype html><html><head><meta charset="utf-8">
<title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:70em;margin:2em auto}}
td,th{{padding:2px 8px;border-bottom:1px solid #ddd;font-size:13px;
text-align:left}}</style></head><body><h1>{html.escape(title)}</h1>
<h2>Data</h2>{_table_html(header, sizes)}
<h2>Stage times</h2>{_table_html(["method", "stage", "time", ""], times)}
<h2>Plots</h2>"""]
  page += [f'<img alt="{html.escape(w)}" src="{html.escape(p)}"><br>'
           for w, p in plots]
  for m in methods:
    page.append(f"<h2>Preview: {html.escape(m)}</h2>" + _table_html(
        ["input", "output"], previews[m]))
  page.append("</body></html>\n")
  path = os.path.join(run_dir, "report.html")
  atomic_write_text(path, "".join(page))
  return path
