"""The paper's two overlap statistics (Andreas 2020, end of §4).

* full example overlap: the fraction of test examples that appear in the
  augmented training set (by design none are in the original one);
* token co-occurrence overlap: of the pairs of tokens that occur together in
  some test example, the fraction that also occur together in some training
  example. The paper does not say which tokens; two readings are reported:
  `input_cooccurrence_*` (two distinct tokens of one input) reproduces the
  paper's SCAN jump figures (83% -> 96%; ours: BENCHMARKS "Issue 12 —
  GECA"), and
  `cooccurrence_*` takes both sides of the example, tokens tagged by side.
"""

import itertools
from typing import Dict, Iterable, Sequence, Set, Tuple

Pair = Tuple[str, str]


def _cooccurring(pairs: Iterable[Pair], input_only: bool = False
                 ) -> Set[Tuple[str, str]]:
  out = set()
  for inp, outp in pairs:
    toks = {"i:" + w for w in inp.split()}
    if not input_only:
      toks |= {"o:" + w for w in outp.split()}
    out.update(itertools.combinations(sorted(toks), 2))
  return out


def overlap_stats(train: Sequence[Pair], generated: Sequence[Pair],
                  test: Sequence[Pair]) -> Dict[str, float]:
  """Full-example and token co-occurrence overlap before/after (percent)."""
  if not test:
    return {}
  # Compared as token sequences: generated pairs are joined by one space.
  train, generated, test = (
      [tuple(" ".join(side.split()) for side in p) for p in pairs]
      for pairs in (train, generated, test))
  train_set = set(train)
  aug_set = train_set | set(generated)
  test_pairs = _cooccurring(test)
  before = _cooccurring(train)
  after = before | _cooccurring(generated)

  test_in = _cooccurring(test, True)
  before_in = _cooccurring(train, True)
  after_in = before_in | _cooccurring(generated, True)

  def pct(k, n):
    return round(100.0 * k / n, 2) if n else 0.0

  return {
      "test_examples": len(test),
      "full_overlap_before": pct(sum(p in train_set for p in test),
                                 len(test)),
      "full_overlap_after": pct(sum(p in aug_set for p in test), len(test)),
      "generated_in_test": sum(p in set(test) for p in set(generated)),
      "cooccurrence_before": pct(len(test_pairs & before), len(test_pairs)),
      "cooccurrence_after": pct(len(test_pairs & after), len(test_pairs)),
      "input_cooccurrence_before": pct(len(test_in & before_in),
                                       len(test_in)),
      "input_cooccurrence_after": pct(len(test_in & after_in), len(test_in)),
  }
