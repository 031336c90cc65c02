"""Kernels compiled ahead at install and before a test session
(csl_jax/precompile.py)."""

import dataclasses
import os

import gin

from csl_jax import precompile
from csl_jax.cky import qcfg_kernel
from csl_jax.induction import ibm1
from csl_jax.induction import ibm1_kernel
from csl_jax.induction import prune
from csl_jax.induction import statistics_kernel
from csl_jax.induction import terminal_index_kernel
from csl_jax.induction import unify_kernel
from csl_jax.induction.search import InductionConfig, Inducer
from csl_jax.methods.csl import induce  # noqa: F401  (its configurables)
from csl_jax.testing import toy_language

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_induction_part_leaves_nothing_for_another_search_to_compile(
    tmp_path):
  # The part stands for every search: one of other data and settings (more
  # nonterminals, the default costs, IBM-1 alignments) must load, not
  # compile, what a first run calls.
  precompile._induction(str(tmp_path))  # pylint: disable=protected-access
  kernels = (qcfg_kernel.derivable_each, qcfg_kernel.forest_batch,
             statistics_kernel.pair_counts, terminal_index_kernel.subsets,
             unify_kernel.unify_partners, prune.roots_alive, ibm1_kernel.em)
  before = [set(k.signatures) for k in kernels]
  assert all(before)
  pairs = [(x.split(), y.split()) for x, y in toy_language.sentences()]
  pairs.append((["jump", "around", "walk"], ["JUMP", "WALK", "JUMP"]))
  Inducer(pairs, InductionConfig(max_steps=8, num_workers=1)).run()
  ibm1.train_and_align(pairs, num_iterations=3)
  assert [set(k.signatures) for k in kernels] == before


def test_the_induction_part_searches_with_scan_gin_settings(clear_gin):
  del clear_gin
  gin.add_config_file_search_path(_REPO_ROOT)
  gin.parse_config_file(os.path.join(_REPO_ROOT, "gin", "csl", "scan.gin"))
  scan = dataclasses.asdict(InductionConfig())
  ahead = dataclasses.asdict(InductionConfig(**precompile.SCAN_SEARCH))
  steps = ("num_partitions", "max_steps")
  assert {k: v for k, v in scan.items() if k not in steps} == {
      k: v for k, v in ahead.items() if k not in steps}


def test_the_install_compiles_every_part_only_given_a_core_each():
  assert precompile.install_parts(2) == ("induction", "model")
  assert set(precompile.install_parts(len(precompile.PARTS))) == set(
      precompile.PARTS)
  assert set(precompile.CSL_PARTS) < set(precompile.PARTS)


def test_an_unknown_part_is_a_usage_error(capsys):
  assert precompile.main(["precompile", "no_such_part"]) == 2
  assert "usage" in capsys.readouterr().err


def test_run_all_reports_a_failed_part_with_its_message():
  failed = precompile.run_all(("no_such_part",), processes=1)
  assert list(failed) == ["no_such_part"]
  assert "usage" in failed["no_such_part"]
