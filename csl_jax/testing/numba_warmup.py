"""Compiles the numba kernels once, in parallel parts, before a test session.

Every kernel is `cache=True`: compiled once, its machine code is loaded by
every later process. Under `pytest -n N` the workers would otherwise compile
the same kernels at the same time, each on its own core, and a CLI process a
test starts would compile them again (BENCHMARKS.md "Issue 10 → Test
suite"). `tests/conftest.py` runs each part below in its own process, side
by side, before the workers start; each part drives the library the way the
tests do, so the kernels get the argument types the tests give them.

  python -m csl_jax.testing.numba_warmup PART   (PART: one of PARTS)
"""

import os
import sys
import tempfile

from csl_jax.data import scan
from csl_jax.data import tsv

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def _scan_sample(num: int):
  train, _ = scan.make_split("addprim_jump")
  pairs = sorted(train, key=lambda e: (len(e.input), e.input))
  step = max(1, len(pairs) // num)
  return pairs[::step][:num] + [tsv.Example("jump", "I_JUMP")]


def _induction(workdir: str) -> None:
  """QCFG induction with the SCAN config (pair forests, derivability,
  occurrence counts, pruning), source charts, the Viterbi parser."""
  import gin  # pylint: disable=g-import-not-at-top
  from csl_jax.cky import forest  # pylint: disable=g-import-not-at-top
  from csl_jax.cky.grammar_arrays import encode_qcfg  # pylint: disable=g-import-not-at-top
  from csl_jax.methods.csl import induce  # pylint: disable=g-import-not-at-top
  from csl_jax.testing import models  # pylint: disable=g-import-not-at-top
  train = os.path.join(workdir, "train.tsv")
  tsv.write_tsv(train, _scan_sample(80))
  gin.parse_config_files_and_bindings(
      [os.path.join(_REPO_ROOT, "gin", "csl", "scan.gin")],
      ["InductionConfig.num_partitions = 1", "InductionConfig.max_steps = 1"])
  induce.induce(os.path.join(workdir, "induce"), train)
  forest.parse_source(encode_qcfg(models.TOY_RULES), "walk twice and run")
  # Here, not in `_models`: it shares the source chart, and evens the parts.
  model = models.random_model(models.TOY_RULES, 0, 2)
  model.parse(["walk twice and run", "run"])
  model.parse(["walk twice and run"], k=3)


def _models(workdir: str) -> None:
  """Output-CFG recognition, sampling (plain and intersected with an output
  CFG), GECA, CMaxEnt / UAT selection and PCFG counts."""
  del workdir
  from csl_jax.methods.geca import augment as geca  # pylint: disable=g-import-not-at-top
  from csl_jax.methods.geca import config as geca_config  # pylint: disable=g-import-not-at-top
  from csl_jax.pcfg import pcfg  # pylint: disable=g-import-not-at-top
  from csl_jax.qcfg.output_cfg import parse_output_cfg  # pylint: disable=g-import-not-at-top
  from csl_jax.sampling import sampler  # pylint: disable=g-import-not-at-top
  from csl_jax.selection import base as selection  # pylint: disable=g-import-not-at-top
  from csl_jax.testing import models  # pylint: disable=g-import-not-at-top
  from csl_jax.testing import toy_language  # pylint: disable=g-import-not-at-top

  model = models.random_model(models.TOY_RULES, 0, 2)
  cfg = parse_output_cfg(models.TOY_OUTPUT_CFG)
  cfg.recognizes(["W", "R"])
  sampler.sample(model, 50, sampler.SampleConfig(max_depth=3))
  sampler.sample(model, 50, sampler.SampleConfig(max_depth=3), output_cfg=cfg)
  pairs = [tsv.Example(x, y) for x, y in toy_language.sentences()]
  for wug_limit in (None, 2):
    geca.augment([(e.input, e.output) for e in pairs],
                 geca_config.GECAConfig(wug_limit=wug_limit))
  for name in ("cmaxent", "cmaxent_uat", "uat"):
    selection.get(name).select(pairs, pairs[:5], 10, 0)
  pcfg.estimate(cfg, ["W W", "W R", "R"])


PARTS = {"induction": _induction, "models": _models}


def main(argv) -> int:
  if len(argv) != 2 or argv[1] not in PARTS:
    print(f"usage: python -m csl_jax.testing.numba_warmup "
          f"{{{','.join(PARTS)}}}", file=sys.stderr)
    return 2
  with tempfile.TemporaryDirectory(prefix="csl_jax_warmup_") as workdir:
    PARTS[argv[1]](workdir)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
