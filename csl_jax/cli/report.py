"""The augmentation report: report.html (and report.md) in the run dir.

Plots are inline SVG histograms drawn here, so the report needs nothing but
a browser.
"""

import collections
import html
import os
from typing import Dict, List, Sequence

from csl_jax.data import tsv
from csl_jax.files import atomic_write_text

_COLORS = ("#4477aa", "#ee6677")


def _histogram_svg(title: str, series: Dict[str, Sequence[int]],
                   width: int = 520, height: int = 180) -> str:
  """Side-by-side bars of the normalized histograms of integer series."""
  values = sorted({v for s in series.values() for v in s})
  if not values:
    return ""
  lo, hi = values[0], values[-1]
  bins = list(range(lo, hi + 1))
  freqs = {}
  for name, s in series.items():
    counts = collections.Counter(s)
    total = max(len(s), 1)
    freqs[name] = [counts[b] / total for b in bins]
  top = max(max(f) for f in freqs.values()) or 1.0
  slot = (width - 40) / len(bins)
  bar = slot / (len(series) + 0.5)
  parts = [f'<svg width="{width}" height="{height + 40}" '
           'xmlns="http://www.w3.org/2000/svg" font-size="10">',
           f'<text x="4" y="12" font-size="12">{html.escape(title)}</text>']
  for k, (name, f) in enumerate(freqs.items()):
    color = _COLORS[k % len(_COLORS)]
    parts.append(f'<rect x="{width - 150}" y="{4 + 14 * k}" width="10" '
                 f'height="10" fill="{color}"/><text x="{width - 135}" '
                 f'y="{13 + 14 * k}">{html.escape(name)}</text>')
    for i, v in enumerate(f):
      h = height * v / top
      x = 30 + i * slot + k * bar
      parts.append(f'<rect x="{x:.1f}" y="{20 + height - h:.1f}" '
                   f'width="{bar:.1f}" height="{h:.1f}" fill="{color}"/>')
  step = max(1, len(bins) // 12)
  for i in range(0, len(bins), step):
    parts.append(f'<text x="{30 + i * slot:.1f}" y="{height + 34}">'
                 f'{bins[i]}</text>')
  parts.append("</svg>")
  return "".join(parts)


def write_report(out_dir: str, summaries: Dict[str, dict], dataset: str,
                 split: str) -> str:
  train = tsv.read_tsv(os.path.join(out_dir, "data", "train.tsv"))
  samples = tsv.read_tsv(os.path.join(out_dir, "samples", "samples.tsv"))
  with open(os.path.join(out_dir, "grammar", "grammar.qcfg"),
            encoding="utf-8") as f:
    grammar = f.read()
  induce, fit = summaries["induce"], summaries["fit"]
  parse = summaries.get("parse", {})
  sample = summaries["sample"]
  rows: List[List[str]] = [
      ["grammar rules", str(induce["num_rules"])],
      ["training pairs derivable", f'{induce["train_coverage"]:.1%}'],
      ["train log p(y | x)", f'{fit["train_log_p_y_given_x"]:.5f}'],
  ]
  if parse:
    rows += [["held-out inputs CSL parses", f'{parse["coverage"]:.1%}'],
             ["CSL parser accuracy (held-out)", f'{parse["accuracy"]:.1%}']]
  rows += [["synthetic pairs", str(sample["num_examples"])],
           ["distinct synthetic inputs", str(sample["num_distinct_inputs"])]]
  times = [[name, f'{s.get("seconds", 0):.1f} s' +
            (" (reused)" if s.get("reused") else "")]
           for name, s in summaries.items()]
  lengths = _histogram_svg("input length (tokens)", {
      "original": [len(e.input.split()) for e in train],
      "synthetic": [len(e.input.split()) for e in samples]})
  out_lengths = _histogram_svg("output length (tokens)", {
      "original": [len(e.output.split()) for e in train],
      "synthetic": [len(e.output.split()) for e in samples]})
  table = lambda rs: "<table>" + "".join(
      f"<tr><td>{html.escape(a)}</td><td>{html.escape(b)}</td></tr>"
      for a, b in rs) + "</table>"
  preview = "".join(f"<tr><td>{html.escape(e.input)}</td><td>"
                    f"{html.escape(e.output)}</td></tr>"
                    for e in samples[:25])
  page = f"""<!doctype html><html><head><meta charset="utf-8">
<title>CSL augmentation: {html.escape(dataset)} {html.escape(split)}</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}
td{{padding:2px 8px;border-bottom:1px solid #ddd;font-size:13px}}
pre{{background:#f6f6f6;padding:8px;overflow-x:auto}}</style></head><body>
<h1>CSL augmentation: {html.escape(dataset)} / {html.escape(split)}</h1>
<h2>Summary</h2>{table(rows)}
<h2>Stage times</h2>{table(times)}
<h2>Lengths: original vs synthetic</h2>{lengths}<br>{out_lengths}
<h2>Sample preview</h2><table>{preview}</table>
<h2>Grammar ({induce["num_rules"]} rules)</h2><pre>{html.escape(grammar)}</pre>
</body></html>
"""
  path = os.path.join(out_dir, "report.html")
  atomic_write_text(path, page)
  md = [f"# CSL augmentation: {dataset} / {split}", ""]
  md += [f"- {a}: {b}" for a, b in rows + times]
  atomic_write_text(os.path.join(out_dir, "report.md"), "\n".join(md) + "\n")
  return path
