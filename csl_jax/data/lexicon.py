"""Primitive lexicon of a training set: input tokens that are necessary and
sufficient for an output token (Zhou et al. 2023, Eq. 1, after Jiang et al.
2022).

(v, w) is kept when, over every training pair (x, y),
  sufficient: v in x  implies  w in y,  and
  necessary:  w in y  implies  v in x,
i.e. v and w occur in exactly the same examples. Function words (`twice`,
`around`) fall out on their own: they occur with no single output token.
SCAN addprim_jump's train set gives jump/walk/run/look/left/right with their
actions (BENCHMARKS.md "Issue 15").
"""

import collections
from typing import Dict, FrozenSet, List, Sequence, Tuple


def _occurrences(sides: Sequence[str]) -> Dict[str, FrozenSet[int]]:
  seen = collections.defaultdict(set)
  for i, text in enumerate(sides):
    for token in set(text.split()):
      seen[token].add(i)
  return {t: frozenset(s) for t, s in seen.items()}


def lexicon(pairs: Sequence[Tuple[str, str]]) -> List[Tuple[str, str]]:
  """The (input token, output token) pairs of Eq. 1, sorted."""
  inputs = _occurrences([x for x, _ in pairs])
  outputs = _occurrences([y for _, y in pairs])
  by_examples = collections.defaultdict(list)
  for w, examples in outputs.items():
    by_examples[examples].append(w)
  return sorted((v, w) for v, examples in inputs.items()
                for w in by_examples.get(examples, ()))
