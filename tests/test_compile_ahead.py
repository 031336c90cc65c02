"""The first run's side process (csl_jax/compile_ahead.py)."""

from csl_jax import compile_ahead
from csl_jax.cky import qcfg_kernel
from csl_jax.induction import terminal_index_kernel
from csl_jax.induction import unify_kernel
from csl_jax.induction.search import InductionConfig, Inducer
from csl_jax.testing import toy_language


def test_main_compiles_and_then_nothing_is_started():
  compile_ahead.main()  # the parser's, sampler's and pruning's kernels
  assert not compile_ahead._cold()  # pylint: disable=protected-access
  assert compile_ahead.start() is None


def test_an_induction_meets_no_other_signature_of_the_kernels_ahead():
  # What the side process compiles is only loaded by the induction if the
  # argument types are the same: a new signature would compile again.
  compile_ahead.main()
  kernels = [unify_kernel.unify_partners, terminal_index_kernel.supersets,
             qcfg_kernel.forest_batch]
  before = [set(k.signatures) for k in kernels]
  pairs = [(x.split(), y.split()) for x, y in toy_language.sentences()]
  Inducer(pairs, InductionConfig(
      max_nts=2, terminal_cost=4, nonterminal_cost=1, source_given_target=0,
      target_given_source=100, num_partitions=4, max_steps=5,
      num_workers=1)).run()
  assert [set(k.signatures) for k in kernels] == before
