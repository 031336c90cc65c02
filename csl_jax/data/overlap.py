"""How much of a test set a training set covers: Yao & Koller's Table 5.

For one side (inputs or outputs) of a training set and a test set:
average length over the training set, the share of the test side's
distinct bigrams (with sentence boundaries) that the training side has,
and the share of its distinct sequences that are in the training side
("instance coverage"). Both shares are over *distinct* test sequences, as
Table 5 counts them; `instance_examples` is the share of test examples.
The boundaries are ours (Y&K's definition counts the test set's bigrams):
they count which token may start and end a sequence too, and move the
shares by under a point on the project's data.
"""

from typing import Dict, Iterable, Sequence, Set, Tuple


def bigrams(sequences: Iterable[str]) -> Set[Tuple[str, str]]:
  """Token bigrams of whitespace-split sequences, with <s> and </s>."""
  out = set()
  for s in sequences:
    tokens = ["<s>"] + s.split() + ["</s>"]
    out.update(zip(tokens, tokens[1:]))
  return out


def table5(train: Sequence[str], test: Sequence[str]) -> Dict[str, float]:
  """{average_length, bigram_coverage, instance_coverage,
  instance_examples} of `train` against `test` (shares in [0, 1])."""
  train_set = set(train)
  test_set = set(test)
  test_bigrams = bigrams(test_set)
  return {
      "average_length": (sum(len(s.split()) for s in train) /
                         max(len(train), 1)),
      "bigram_coverage": (len(test_bigrams & bigrams(train_set)) /
                          max(len(test_bigrams), 1)),
      "instance_coverage": (len(test_set & train_set) /
                            max(len(test_set), 1)),
      "instance_examples": (sum(s in train_set for s in test) /
                            max(len(test), 1)),
  }
