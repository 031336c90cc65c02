"""The run report: `RUN/report.html` and `RUN/report.md`, one column per method.

It reads only the run directory contract (`pipeline/augment.py`): the
original data, each method's `summary.json` and `synthetic.tsv`. Plots are
matplotlib PNGs in `RUN/report_files/`, shared by both reports; the
selections' template frequency plot is their diversity stage's. Warnings
(a selection short of its k, a method that made nothing) come first.
"""

import collections
import html
import os
from typing import (Any, Dict, List, Mapping, Optional, Sequence,
                    Tuple)

from csl_jax import provenance
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


# More series than this are lines, not side-by-side bars.
_MOST_BARS = 3
_MARKERS = "os^vD<>px*"
_HISTOGRAM_STYLE = 2  # in the figure's key: a restyled figure is redrawn


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
      shares = [100.0 * counts[v] / total for v in values]
      label = f"{name} (n={len(s):,})"
      if len(series) <= _MOST_BARS:
        ax.bar([v + (k - (len(series) - 1) / 2) * width for v in values],
               shares, width=width, label=label)
      else:  # bars this thin vanish: a line and marker each, drawn over
        ax.plot(values, shares, marker=_MARKERS[k % len(_MARKERS)],
                markersize=4, linewidth=1, alpha=0.8, label=label)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("share of examples (%)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig

  save_figure_once(path, [title, xlabel, {
      name: sorted(counts.items()) for name, counts in counted.items()},
                          _HISTOGRAM_STYLE], draw, dpi=90)


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
  key = cache.stage_key("report data", files, {"methods": list(methods),
                                               "style": _HISTOGRAM_STYLE})
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
               for m, f in zip(methods, files[1:], strict=True)}
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


def shortfall(stage: str, summary: Mapping[str, Any]) -> Optional[str]:
  """The line saying a selection stage kept fewer than it was asked
  (`augment.select_stage`'s summary), or None."""
  if not summary.get("num_short"):
    return None
  kept, pool = summary["num_examples"], summary["pool_size"]
  where = f"the pool holds {pool:,}"
  excluded = summary.get("excluded")
  if excluded:  # augment.exclude_templates
    where += (f", {excluded['candidates']:,} of them of a "
              f"{excluded['part']} template")
  if kept < pool:  # the rest unreadable to the selector's templates
    where += f", {kept:,} of them selectable"
  return f"{stage}: {kept:,} of {summary['k']:,} asked ({where})"


def _no_pairs(path: str) -> bool:
  """Whether a TSV has no example (reads up to its first one)."""
  with open(path, encoding="utf-8") as f:
    return not any(line.strip() for line in f)


def _nothing_made(method: str, summary: Mapping[str, Any]) -> str:
  """The line for a method with 0 synthetic pairs: why, where its stage
  says (GECA counts the fills it rejected as not new)."""
  for stage in summary.get("stages", {}).values():
    considered = stage.get("fills_considered")
    if considered and stage.get("rejected_not_novel") == considered:
      return (f"{method}: 0 new pairs ({considered:,} candidates, all with "
              "an input or output already in the training data)")
  return f"{method}: 0 synthetic pairs"


def _warnings(run_dir: str, methods: Sequence[str],
              info: Mapping[str, Mapping[str, Any]]) -> List[str]:
  lines = []
  for m in methods:
    if _no_pairs(os.path.join(run_dir, m, "synthetic.tsv")):
      lines.append(_nothing_made(m, info[m]))
    stages = info[m].get("stages", {})
    for stage in info[m].get("stage_order", sorted(stages)):
      lines += stage_warnings(f"{m}/{stage}", stages[stage])
  return lines


def stage_warnings(where: str, summary: Mapping[str, Any]) -> List[str]:
  """A selection's or diversity stage's warnings (from its summary): the
  report lists them, and `augment` logs them on every run, cached or not."""
  found = []
  if "diversity" in summary:
    found.append(nothing_abstracted(where, summary))
  if "selector" in summary:
    found += [shortfall(where, summary), repeats(where, summary)]
  return [line for line in found if line]


def nothing_abstracted(where: str, summary: Mapping[str, Any]
                       ) -> Optional[str]:
  """The line saying the abstraction gave each distinct program of a pool
  (of 20 or more) a template of its own (a diversity stage's summary), or
  None."""
  queries = summary.get("pool_queries") or 0
  if queries < 20 or summary.get("pool_templates") != queries:
    return None
  return (f"{where}: the {summary['abstraction']} abstraction makes each of "
          f"the pool's {queries:,} distinct programs a template of its own, "
          "so templates count distinct programs: set UAT.abstraction, "
          "CMaxEnt.abstraction and CMaxEntUAT.abstraction to one that fits "
          "the data ('leaves' for bracketed programs of your own: every "
          "leaf an entity)")


def repeats(stage: str, summary: Mapping[str, Any]) -> Optional[str]:
  """The line saying a selection repeats pairs (its pool does), or None
  (also for a selection made before the summary counted them)."""
  distinct = summary.get("num_distinct")
  if distinct is None or distinct == summary["num_examples"]:
    return None
  # `stage` is METHOD/SELECTION in a run: the hint is CSL's where the pool
  # is CSL's samples (drawn with replacement).
  hint = ("; CSL samples with replacement: `--gin.SampleConfig.dedup=True` "
          "samples distinct pairs" if stage.split("/")[0] == "csl" else "")
  return (f"{stage}: {distinct:,} distinct pairs of the "
          f"{summary['num_examples']:,} selected: the pool repeats pairs "
          f"({summary['pool_distinct']:,} distinct of "
          f"{summary['pool_size']:,}{hint})")


_SELECTIONS_INTRO = (
    "Abstract templates covered and atom / compound entropies H(A), H(C) in "
    "nats (Oren et al., 2021), each with a random selection of the same "
    "size for comparison.")
SELECTION_HEADER = ["method", "selection", "size", "templates covered",
                    "with the training set's (Table 8)", "H(A)", "H(C)",
                    "random: templates covered",
                    "random: with the training set's", "random: H(A)",
                    "random: H(C)"]


def _selections(run_dir: str, methods: Sequence[str],
                info: Mapping[str, Mapping[str, Any]]
                ) -> Tuple[List[List[str]], List[str], List[Tuple[str, str]]]:
  """(table rows, notes, plots) of the methods' diversity stages
  (`augment.diversity_stage`): none in a run without selectors."""
  rows, notes, plots = [], [], []
  for m in methods:
    stages = info[m].get("stages", {})
    for stage in info[m].get("stage_order", sorted(stages)):
      s = stages[stage]
      if "diversity" not in s:
        continue
      if s.get("error"):
        notes.append(f"{m}: no diversity figures ({s['error']})")
        continue
      notes.append(
          f"{m}: {s['abstraction']} templates, {s['weighting']} compound "
          f"weights; random: the mean of {s['random_repeats']} uniform "
          "draws of the same size from the same pool" +
          (f" ({s['random_of']})" if s.get("random_of") else ""))
      if s.get("selectors_differ"):  # the selectors disagree: defaults used
        notes.append(f"{m}: measured with {s['abstraction']} templates and "
                     f"{s['weighting']} weights, while " + "; ".join(
            f"{sel} selected with " + ", ".join(
                f"{k} {v}" for k, v in sorted(d.items()))
            for sel, d in sorted(s["selectors_differ"].items())))
      def with_train(d, digits=0):
        value = d.get("templates_with_train")
        return "—" if value is None else f"{value:,.{digits}f}"
      for d in s["diversity"]:
        rand = d.get("random")
        rows.append(
            [m, d["selection"], f'{d["size"]:,}',
             f'{d["templates_covered"]:,}', with_train(d),
             f'{d["atom_entropy"]:.3f}', f'{d["compound_entropy"]:.3f}'] +
            ([f'{rand["templates_covered"]:,.1f}', with_train(rand, 1),
              f'{rand["atom_entropy"]:.3f}',
              f'{rand["compound_entropy"]:.3f}'] if rand else ["—"] * 4))
      plot = f"{m}/{stage}/{s['plot']}" if s.get("plot") else None
      if plot and os.path.exists(os.path.join(run_dir, plot)):
        plots.append((f"{m}: template frequencies of the selections", plot))
  return rows, notes, plots


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
  warnings = _warnings(run_dir, methods, info)
  chosen, notes, chosen_plots = _selections(run_dir, methods, info)
  written = f"Written by {provenance.line()} (provenance.json)."
  md = [f"# {title}", "", written, ""]
  if warnings:
    md += ["## Warnings", ""] + [f"- {w}" for w in warnings] + [""]
  md += ["## Data", "", _table_md(header, sizes), ""]
  if chosen or notes:
    md += ["## Selections", "", _SELECTIONS_INTRO, ""]
    md += [_table_md(SELECTION_HEADER, chosen), ""] if chosen else []
    md += [f"- {n}" for n in notes] + [""]
    md += [f"![{w}]({p})" for w, p in chosen_plots]
    md += [""] if chosen_plots else []
  md += ["## Stage times", "",
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
<p>{html.escape(written)}</p>
"""]
  if warnings:
    page.append("<h2>Warnings</h2><ul>" + "".join(
        f"<li>{html.escape(w)}</li>" for w in warnings) + "</ul>\n")
  page.append(f"<h2>Data</h2>{_table_html(header, sizes)}\n")
  if chosen or notes:
    page.append(f"<h2>Selections</h2><p>{html.escape(_SELECTIONS_INTRO)}</p>")
    page += [_table_html(SELECTION_HEADER, chosen)] if chosen else []
    page.append("<ul>" + "".join(f"<li>{html.escape(n)}</li>"
                                 for n in notes) + "</ul>")
    page += [f'<img alt="{html.escape(w)}" src="{html.escape(p)}"><br>'
             for w, p in chosen_plots]
    page.append("\n")
  times_html = _table_html(["method", "stage", "time", ""], times)
  page.append(f"<h2>Stage times</h2>{times_html}\n<h2>Plots</h2>")
  page += [f'<img alt="{html.escape(w)}" src="{html.escape(p)}"><br>'
           for w, p in plots]
  for m in methods:
    page.append(f"<h2>Preview: {html.escape(m)}</h2>" + _table_html(
        ["input", "output"], previews[m]))
  page.append("</body></html>\n")
  path = os.path.join(run_dir, "report.html")
  atomic_write_text(path, "".join(page))
  return path
