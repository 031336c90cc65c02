"""Seed rules NT -> <x', x> for CSL's grammar induction (Qiu et al., 2022, A).

* `exact_match_rules` (GeoQuery): <t, t> for tokens t found in both the
  input and the output of a training example.
* `ibm1_lexical_rules` (COGS): <x', x> where x is an output word and x' is x
  or an inflected form of it in the inputs (slept -> sleep). Candidates are
  the Viterbi links of IBM Model 1 (input -> output); a link (x', x) is kept
  when all of these hold (`LinkStats` has the numbers):

  1. x and x' are words (`is_word`; default `\\w+`, so `*`, `(`, `=`, `.`
     never take part) and x is not in `exclude_targets`;
  2. reliable: x' is linked to x in >= `min_source_share` of the examples
     whose input has x', and in >= `min_count` examples. A word's forms are
     linked to it almost every time they occur (all gold pairs of COGS:
     >= 0.9); stray links are not (A -> theme 0.2, that -> agent 0.36);
  3. few forms: x has at most `max_forms` reliable partners. Relation
     labels pass 2 with every verb (given -> recipient, walk -> xcomp) and
     so have dozens of partners; a lemma has its base, past and participle;
  4. one lemma per form: a reliable x' keeps only its target with the fewest
     partners (given -> give, not recipient; in -> in, not nmod);
  5. anchored: x itself occurs in some input, or x' and x share their
     first `min_shared_prefix` characters, case-insensitively (0 turns
     this off). A function word that always marks one relation label
     (that -> ccomp, by -> agent, was -> theme) passes 2-4 like a lexical
     pair; such labels are not input words, and only the spelling then
     tells them apart. One character keeps gave -> give and sold -> sell;
     ate -> eat needs `eat` in some input (COGS has it).

On COGS train the defaults find all 731 content pairs of the gold alignment
(the `x _ i` indices of the original LFs) and, besides, only the exact
matches in/on/beside of the `nmod` prepositions. Criteria 2, 3 and 5 are
partly redundant there (4 does most of the work) but each guards a failure
seen without it; scripts/seed_rules_report.py measures them one by one.
"""

import collections
import dataclasses
import re
from typing import (Callable, Collection, Dict, Iterable, List, Sequence,
                    Tuple)

from csl_jax.data.tsv import Example
from csl_jax.induction import ibm1
from csl_jax.qcfg.rules import Rule, make_rule

_WORD = re.compile(r"\w+")


def is_word(token: str) -> bool:
  """Letters, digits and `_` only: not punctuation or structure symbols."""
  return _WORD.fullmatch(token) is not None


def _tokens(text: str) -> List[str]:
  return text.split()


def _ruleable(token: str) -> bool:
  # The rule format reserves `NT_...` tokens for nonterminals.
  return not token.startswith("NT_")


def exact_match_rules(examples: Iterable[Example], min_count: int = 1,
                      exclude: Collection[str] = ()) -> List[Rule]:
  """<t, t> for each t in the input and output of >= min_count examples."""
  counts = collections.Counter()
  for ex in examples:
    counts.update(set(_tokens(ex.input)) & set(_tokens(ex.output)))
  return [make_rule((t,), (t,)) for t in sorted(counts)
          if counts[t] >= min_count and t not in exclude and _ruleable(t)]


@dataclasses.dataclass(frozen=True)
class LinkStats:
  """Viterbi-link statistics of one (input word, output word) pair."""
  source: str
  target: str
  count: int  # examples where the target is linked to the source
  source_examples: int  # examples whose input contains the source
  target_in_inputs: bool  # the target is itself a word of some input

  @property
  def share(self) -> float:
    return self.count / self.source_examples


def ibm1_link_stats(examples: Sequence[Example], num_iterations: int = 10,
                    word: Callable[[str], bool] = is_word
                    ) -> List[LinkStats]:
  """Counts the IBM-1 Viterbi links (x', x) between words (criterion 1)."""
  pairs = [(_tokens(ex.input), _tokens(ex.output)) for ex in examples]
  _, alignments = ibm1.train_and_align(pairs, num_iterations)
  vocab = {t for src, tgt in pairs for t in (*src, *tgt)}
  words = {t for t in vocab if word(t)}
  links, source_examples = collections.Counter(), collections.Counter()
  for (src, tgt), alignment in zip(pairs, alignments, strict=True):
    source_examples.update(set(src))
    links.update({(src[i], tgt[j]) for j, i in enumerate(alignment)
                  if i is not None and src[i] in words and tgt[j] in words})
  return [LinkStats(s, t, n, source_examples[s], t in source_examples)
          for (s, t), n in sorted(links.items())]


def _similar(a: str, b: str, prefix: int) -> bool:
  a, b = a.lower(), b.lower()
  return a == b or (len(a) >= prefix and len(b) >= prefix
                    and a[:prefix] == b[:prefix])


def select_lexical_rules(stats: Iterable[LinkStats],
                         min_source_share: float = 0.5, min_count: int = 1,
                         max_forms: int = 4, min_shared_prefix: int = 1,
                         exclude_targets: Collection[str] = ()
                         ) -> List[Rule]:
  """Criteria 2-5 of the module docstring; sorted by target, then source."""
  reliable = [s for s in stats if s.count >= min_count
              and s.share >= min_source_share
              and s.target not in exclude_targets]
  fan_in = collections.Counter(s.target for s in reliable)
  # Criterion 4: fewest partners, then most links, then spelling.
  best: Dict[str, LinkStats] = {}
  for s in reliable:
    if fan_in[s.target] > max_forms:
      continue
    b = best.get(s.source)
    if b is None or (fan_in[s.target], -s.count, s.target) < (
        fan_in[b.target], -b.count, b.target):
      best[s.source] = s
  pairs: List[Tuple[str, str]] = sorted(
      (s.target, s.source) for s in best.values()
      if (s.target_in_inputs
          or _similar(s.source, s.target, min_shared_prefix))
      and _ruleable(s.source) and _ruleable(s.target))
  return [make_rule((x_src,), (x,)) for x, x_src in pairs]


def ibm1_lexical_rules(examples: Sequence[Example], num_iterations: int = 10,
                       min_source_share: float = 0.5, min_count: int = 1,
                       max_forms: int = 4, min_shared_prefix: int = 1,
                       exclude_targets: Collection[str] = (),
                       word: Callable[[str], bool] = is_word) -> List[Rule]:
  """<x', x> lexical seed rules: IBM-1 links filtered by criteria 1-5."""
  return select_lexical_rules(
      ibm1_link_stats(examples, num_iterations, word), min_source_share,
      min_count, max_forms, min_shared_prefix, exclude_targets)
