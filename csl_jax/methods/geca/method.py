"""GECA as a method of the pipeline: one stage, `generate`.

`RUN/geca/generate/` gets `candidates.tsv` (the new pairs), `stats.json`
(the paper's statistics, index sizes, times, peak memory, overlaps with the
run's test part) and `preview.txt` (new pairs with the substituted fragment
in [brackets]). Settings: `geca.GECAConfig.*` (gin/geca/*.gin). Importing
this module is cheap; numpy/Numba work starts when the stage runs.
"""

import os
import shutil
from typing import Any, Dict, List, Mapping, Optional, Tuple

from absl import logging
import gin

from csl_jax import configs
from csl_jax.errors import InputError
from csl_jax.methods import base
from csl_jax.methods.geca.config import GECAConfig


def generate(out_dir: str, train_path: str, test_path: Optional[str],
             config: GECAConfig) -> Dict[str, Any]:
  """Runs GECA on a training TSV; writes the stage's files."""
  # pylint: disable=g-import-not-at-top
  from csl_jax.data.tsv import ReadStats, read_tsv, write_tsv
  from csl_jax.files import atomic_write_json, atomic_write_text
  from csl_jax.methods.geca import augment as augment_lib
  from csl_jax.methods.geca import partitioned
  from csl_jax.methods.geca import stats as stats_lib
  # pylint: enable=g-import-not-at-top
  if config.output_only:
    raise InputError("GECA output_only (language-model mode) has no input "
                     "side to write as input<TAB>output candidates")
  read = ReadStats()
  train = [tuple(x) for x in read_tsv(train_path, stats=read)]
  for (inp, out), line in zip(train, read.lines,
                              strict=True):  # the line, not later
    length = len(inp.split()) + 1 + len(out.split())
    if length > augment_lib.MAX_SEQUENCE and (config.max_len is None or
                                              length < config.max_len):
      raise InputError(
          f"GECA indexes sequences of at most {augment_lib.MAX_SEQUENCE:,} "
          f"tokens (input and output); this pair has {length:,}: set "
          "GECAConfig.max_len to leave such pairs out", train_path, line)
  os.makedirs(out_dir, exist_ok=True)
  # The partitioned index's tables (num_shards > 1) live beside the stage's
  # files, where Beam workers that reach the run directory reach them too,
  # or in config.work_dir.
  work_dir = config.work_dir or os.path.join(out_dir, "index.tmp")
  new, stats = augment_lib.augment(train, config, work_dir=work_dir)
  if config.work_dir:
    partitioned.clear(work_dir)
  elif os.path.isdir(work_dir):
    shutil.rmtree(work_dir)
  if not new:  # exit 0 with an empty file: say why, or it goes unnoticed
    logging.warning(
        "geca: 0 new pairs (%d candidates, %d with an input or output "
        "already in the training data; %d templates, %d fragments indexed)",
        stats.get("fills_considered", 0), stats.get("rejected_not_novel", 0),
        stats.get("templates", 0), stats.get("fragments", 0))
  candidates = os.path.join(out_dir, "candidates.tsv")
  write_tsv(candidates, new)
  if test_path:
    test = [tuple(x) for x in read_tsv(test_path)]
    used_train = augment_lib.prepare_pairs(train, config)
    stats["overlap"] = stats_lib.overlap_stats(used_train, new, test)
  atomic_write_text(os.path.join(out_dir, "preview.txt"),
                    "".join(p + "\n" for p in stats["preview"]))
  atomic_write_json(os.path.join(out_dir, "stats.json"), stats)
  # `seconds` in a stage summary is the pipeline's (the stage's wall time).
  summary = {k: v for k, v in stats.items()
             if k not in ("preview", "seconds")}
  summary.update(candidates=candidates, preview=stats["preview"][:5],
                 geca_seconds=stats["seconds"])
  return summary


@gin.configurable(module="geca")
class GECA:
  """The GECA method (Andreas, 2020).

  Attributes:
    config: the GECA settings (default: `GECAConfig()` with its gin
      bindings).
    eval_part: the run's part used for the overlap statistics of the report
      (never for generation); None or missing: none.
  """
  name = "geca"
  seed_params = ("geca.GECAConfig.seed",)  # what experiment seeds may bind
  shardable = True  # its index (augment --shards)

  def __init__(self, config: Optional[GECAConfig] = None,
               eval_part: Optional[str] = "test"):
    self.config = config if config is not None else GECAConfig()
    self.eval_part = eval_part

  def stages(self, data: base.RunData, workdir: str) -> List[base.Stage]:
    del workdir
    train = data.train
    test = data.splits.get(self.eval_part) if self.eval_part else None
    settings = configs.to_json(self.config)
    # These decide only whether and where it runs, not what it makes.
    for key in ("memory_limit_gb", "num_shards", "runner", "pipeline_args",
                "work_dir"):
      settings.pop(key)
    config = {"geca": settings,
              "eval_part": self.eval_part if test else None}
    if self.config.window is not None:
      # 2: a target's own environment donates only through another
      # template (the boxed rule's t'1 != t1; session 54).
      config["window_rule"] = 2
    inputs = [train] + ([test] if test else [])
    return [base.Stage("generate", inputs, config,
                       lambda d: generate(d, train, test, self.config))]

  def report_rows(self, summaries: Mapping[str, dict]
                  ) -> List[Tuple[str, str]]:
    s = summaries["generate"]
    rows = [
        ("GECA training pairs (after dedup / hold-out)",
         f'{s["train_pairs"]:,}'),
        ("GECA templates / fragments indexed",
         f'{s.get("templates", 0):,} / {s.get("fragments", 0):,}'),
        ("GECA generated pairs", f'{s["generated"]:,}'),
        ("GECA distinct templates / fragments used",
         f'{s["templates_used"]:,} / {s["fragments_used"]:,}'),
        ("GECA time / peak RSS",
         f'{s["geca_seconds"].get("total", 0):.1f} s / '
         f'{s["peak_rss_gb"]:.2f} GB'),
    ]
    overlap = s.get("overlap")
    if overlap:
      rows += [
          (f"GECA full-example overlap with {self.eval_part}",
           f'{overlap["full_overlap_before"]:.1f}% -> '
           f'{overlap["full_overlap_after"]:.1f}%'),
          ("GECA token co-occurrence overlap (input / both sides)",
           f'{overlap["input_cooccurrence_before"]:.1f}% -> '
           f'{overlap["input_cooccurrence_after"]:.1f}% / '
           f'{overlap["cooccurrence_before"]:.1f}% -> '
           f'{overlap["cooccurrence_after"]:.1f}%'),
      ]
    rows += [("GECA preview", p) for p in s.get("preview", [])[:3]]
    return rows


base.add(GECA.name, GECA)
