"""Exact match and BLEU: the one definition every method and report shares.

Strings are compared after `normalize` (bytes decoded, whitespace folded),
and accuracies are percentages (0-100), as in the papers' tables.
"""

import collections
import math
from typing import Dict, Optional, Sequence, Union

Text = Union[str, bytes]


def normalize(text: Text) -> str:
  """Decodes bytes and collapses whitespace, so "A  B " equals "A B"."""
  if isinstance(text, bytes):
    text = text.decode("utf-8")
  return " ".join(text.split())


def matches(target: Optional[Text], prediction: Optional[Text]) -> bool:
  """Exact match up to whitespace; a missing prediction (None) never does."""
  if target is None or prediction is None:
    return False
  return normalize(target) == normalize(prediction)


def exact_match(targets: Sequence[Text],
                predictions: Sequence[Text]) -> Dict[str, float]:
  """Percentage of predictions equal to their target, up to whitespace."""
  if len(targets) != len(predictions):
    raise ValueError(f"{len(targets)} targets but {len(predictions)} "
                     "predictions")
  if not targets:
    return {"exact_match": float("nan")}
  hits = sum(matches(t, p) for t, p in zip(targets, predictions, strict=True))
  return {"exact_match": 100.0 * hits / len(targets)}


def _ngrams(tokens, n):
  return collections.Counter(tuple(tokens[i:i + n])
                             for i in range(len(tokens) - n + 1))


def bleu(targets: Sequence[Text], predictions: Sequence[Text],
         max_order: int = 4) -> Dict[str, float]:
  """Corpus BLEU (Papineni et al., 2002) over whitespace tokens, 0-100:
  clipped n-gram precisions for n <= max_order, their geometric mean, times
  the brevity penalty; no smoothing. The data are pre-tokenized, so no
  other tokenization (sacrebleu's 13a would split punctuation further)."""
  if len(targets) != len(predictions):
    raise ValueError(f"{len(targets)} targets but {len(predictions)} "
                     "predictions")
  matched, total = [0] * max_order, [0] * max_order
  ref_len = hyp_len = 0
  for target, prediction in zip(targets, predictions, strict=True):
    ref, hyp = normalize(target).split(), normalize(prediction).split()
    ref_len, hyp_len = ref_len + len(ref), hyp_len + len(hyp)
    for n in range(1, max_order + 1):
      counts, ref_counts = _ngrams(hyp, n), _ngrams(ref, n)
      matched[n - 1] += sum(min(c, ref_counts[g]) for g, c in counts.items())
      total[n - 1] += max(len(hyp) - n + 1, 0)
  if not hyp_len or min(matched) == 0:
    return {"bleu": 0.0}
  log_precision = sum(math.log(m / t)
                      for m, t in zip(matched, total, strict=True))
  brevity = min(0.0, 1.0 - ref_len / hyp_len)
  return {"bleu": 100.0 * math.exp(log_precision / max_order + brevity)}
