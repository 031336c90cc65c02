"""Every numba kernel compiled ahead, in parts side by side: at install and
before a test session.

Every kernel is `cache=True`: compiled once, its machine code is loaded by
every later process. `pip install -e .` runs the CSL pipeline's parts, or
all of them given a core each (setup.py), so a fresh install's first run
loads its kernels like any later run instead of compiling them
(BENCHMARKS.md "Issue 17 → Kernels compiled at install");
`tests/conftest.py` runs every part before the test workers start, so that
they do not compile the same kernels at the same time (BENCHMARKS.md
"Issue 10 → Test suite"). Each part drives the library the way the CLI
and the tests do, so the kernels get the argument types they give them.

  python -m csl_jax.precompile          (every part, one process a core)
  python -m csl_jax.precompile --install  (`install_parts`)
  python -m csl_jax.precompile PART     (PART: one of PARTS)
"""

import os
import subprocess
import sys
import tempfile
import time
from typing import Dict, Optional

from csl_jax.data import scan
from csl_jax.data import tsv


# gin/csl/scan.gin's InductionConfig, one step in one partition (gin files
# are not installed with a wheel; a test keeps the two the same).
SCAN_SEARCH = {"max_nts": 2, "allow_repeated_target_nts": True,
               "allow_single_nt_target": True, "terminal_cost": 4,
               "nonterminal_cost": 1, "source_given_target": 0,
               "target_given_source": 100, "candidates_per_rule": 4,
               "num_partitions": 1, "max_steps": 1}


def _scan_sample(num: int):
  train, _ = scan.make_split("addprim_jump")
  pairs = sorted(train, key=lambda e: (len(e.input), e.input))
  step = max(1, len(pairs) // num)
  return pairs[::step][:num] + [tsv.Example("jump", "I_JUMP")]


def _induction(workdir: str) -> None:
  """QCFG induction with the SCAN config (pair forests, derivability,
  occurrence counts, pruning), IBM-1 (the COGS config's alignments), the
  fit's forest layout."""
  # pylint: disable=g-import-not-at-top
  from csl_jax.cky import forest
  from csl_jax.cky.grammar_arrays import encode_qcfg
  from csl_jax.induction import ibm1
  from csl_jax.induction.search import InductionConfig
  from csl_jax.methods.csl import induce
  from csl_jax.model import contexts
  from csl_jax.model import forest_arrays
  from csl_jax.testing import models
  from csl_jax.testing import toy_language
  # pylint: enable=g-import-not-at-top
  train = os.path.join(workdir, "train.tsv")
  tsv.write_tsv(train, _scan_sample(80))
  induce.induce(os.path.join(workdir, "induce"), train,
                config=InductionConfig(**SCAN_SEARCH))
  ibm1.train_and_align([(x.split(), y.split())
                        for x, y in toy_language.sentences()], 2)
  rules = models.TOY_RULES
  batch, _ = forest.build_forests(encode_qcfg(rules, 2),
                                  [("walk twice", "W W")])
  forest_arrays.Layout(batch, [0], contexts.context_index(rules, 2))


def _model(workdir: str) -> None:
  """Source charts, the Viterbi parser, output-CFG recognition, sampling
  (plain and intersected with an output CFG), PCFG counts."""
  del workdir
  # pylint: disable=g-import-not-at-top
  from csl_jax.cky import forest
  from csl_jax.cky.grammar_arrays import encode_qcfg
  from csl_jax.pcfg import pcfg
  from csl_jax.qcfg.output_cfg import parse_output_cfg
  from csl_jax.sampling import sampler
  from csl_jax.testing import models
  # pylint: enable=g-import-not-at-top
  forest.parse_source(encode_qcfg(models.TOY_RULES), "walk twice and run")
  model = models.random_model(models.TOY_RULES, 0, 2)
  model.parse(["walk twice and run", "run"])
  model.parse(["walk twice and run"], k=3)
  cfg = parse_output_cfg(models.TOY_OUTPUT_CFG)
  cfg.recognizes(["W", "R"])
  sampler.sample(model, 50, sampler.SampleConfig(max_depth=3))
  sampler.sample(model, 50, sampler.SampleConfig(max_depth=3), output_cfg=cfg)
  pcfg.estimate(cfg, ["W W", "W R", "R"])


def _toy_pairs():
  from csl_jax.testing import toy_language  # pylint: disable=g-import-not-at-top
  return [tsv.Example(x, y) for x, y in toy_language.sentences()]


def _geca(workdir: str) -> None:
  del workdir
  # pylint: disable=g-import-not-at-top
  from csl_jax.methods.geca import augment as geca
  from csl_jax.methods.geca import config as geca_config
  # pylint: enable=g-import-not-at-top
  pairs = [(e.input, e.output) for e in _toy_pairs()]
  for wug_limit in (None, 2):
    geca.augment(pairs, geca_config.GECAConfig(wug_limit=wug_limit))


def _selection(workdir: str) -> None:
  """CMaxEnt, its hybrid with UAT, UAT."""
  del workdir
  from csl_jax.selection import base as selection  # pylint: disable=g-import-not-at-top
  pairs = _toy_pairs()
  for name in ("cmaxent", "cmaxent_uat", "uat"):
    selection.get(name).select(pairs, pairs[:5], 10, 0)


# Longest first (cold, 2-core box): the first two run side by side, each
# later one starts when a core is free.
PARTS = {"induction": _induction, "selection": _selection, "model": _model,
         "geca": _geca}
# What `pip install -e .` compiles on fewer cores than parts: the CSL
# pipeline's (the README main job's) kernels; GECA's and the selectors'
# compile on their first use.
CSL_PARTS = ("induction", "model")


def install_parts(cpus: int):
  """Every part where each gets a core (the install takes no longer than
  its longest part), else the CSL pipeline's."""
  return tuple(PARTS) if cpus >= len(PARTS) else CSL_PARTS


def run_all(parts=tuple(PARTS), processes: Optional[int] = None
            ) -> Dict[str, str]:
  """Runs each of `parts` in its own process, at most `processes` (default:
  one a core) at a time. Returns {part: the end of its stderr} for each part
  that failed (the code that uses its kernels compiles them then)."""
  processes = processes or os.cpu_count() or 1
  todo = list(parts)
  running = {}
  failed = {}
  while todo or running:
    while todo and len(running) < processes:
      part = todo.pop(0)
      # A file, not a pipe: a part's log must not fill a pipe nobody reads
      # while it runs.
      log = tempfile.TemporaryFile(mode="w+", encoding="utf-8")
      running[part] = (subprocess.Popen(
          [sys.executable, "-m", __spec__.name, part],
          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log),
                       log)
    time.sleep(0.05)
    for part, (proc, log) in list(running.items()):
      if proc.poll() is not None:
        if proc.returncode:
          log.seek(0)
          failed[part] = log.read()[-2000:]
        log.close()
        del running[part]
  return failed


def main(argv) -> int:
  if len(argv) == 1 or argv[1:] == ["--install"]:
    start = time.monotonic()
    failed = run_all(install_parts(os.cpu_count() or 1) if len(argv) == 2
                     else tuple(PARTS))
    for part, err in failed.items():
      print(f"csl_jax: precompiling part {part!r} failed:\n{err}",
            file=sys.stderr)
    print("csl_jax: numba kernels ready (compiled or loaded) in "
          f"{time.monotonic() - start:.0f} s", file=sys.stderr)
    return 1 if failed else 0
  if len(argv) != 2 or argv[1] not in PARTS:
    print("usage: python -m csl_jax.precompile "
          f"[--install|{'|'.join(PARTS)}]",
          file=sys.stderr)
    return 2
  with tempfile.TemporaryDirectory(prefix="csl_jax_precompile_") as workdir:
    PARTS[argv[1]](workdir)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
