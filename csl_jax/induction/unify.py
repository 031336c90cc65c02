"""Rule composition and CSL's UNIFY (Qiu et al., 2022, Figure 4).

`compose(ra, k, rb)` substitutes rb into NT_k of ra (source and every target
occurrence), renumbering NTs in source order; when it equals rc we write
ra o rb => rc. UNIFY(r1, r2) is the set of rules r3 with r2 o r3 => r1 or
r3 o r2 => r1. Candidates are found by alignment and then checked by
composing them back, so every returned rule satisfies the definition.

Where r2's target occurs several times in r1's, a parent r3 replaces either
one occurrence or all of them (greedily from the left), not every subset:
`NT_1 twice ### NT_1 NT_1` and `NT_1 twice ### JUMP NT_1` are found from
`jump twice ### JUMP JUMP`, but not every mixed choice for longer repeats.
"""

from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple

from csl_jax.qcfg.rules import Rule, nt_index, nt_token

_FRESH = 10**6  # NT indices above any real rule's, before renumbering


def canonical(source: Sequence[str], target: Sequence[str]) -> Rule:
  """Renumbers NTs NT_1, NT_2, ... in order of appearance in the source."""
  mapping: Dict[int, str] = {}
  for token in source:
    idx = nt_index(token)
    if idx and idx not in mapping:
      mapping[idx] = nt_token(len(mapping) + 1)
  rename = lambda t: mapping.get(nt_index(t), t) if nt_index(t) else t
  return Rule(tuple(rename(t) for t in source),
              tuple(rename(t) for t in target))


def compose(parent: Rule, k: int, child: Rule) -> Rule:
  """parent with child substituted into its NT_k (canonical numbering)."""
  shift = lambda t: nt_token(nt_index(t) + _FRESH) if nt_index(t) else t
  child_src = [shift(t) for t in child.source]
  child_tgt = [shift(t) for t in child.target]
  slot = nt_token(k)
  source = [s for t in parent.source for s in (child_src if t == slot
                                               else [t])]
  target = [s for t in parent.target for s in (child_tgt if t == slot
                                               else [t])]
  return canonical(source, target)


def _match_with_nts(pattern: Sequence[str], tokens: Sequence[str],
                    start: int, mapping: Dict[int, int]) -> bool:
  """Whether pattern equals tokens[start:...] where the pattern's NTs match
  NT tokens injectively (extending `mapping`, pattern NT -> tokens NT)."""
  if start + len(pattern) > len(tokens):
    return False
  used = set(mapping.values())
  for offset, p in enumerate(pattern):
    t = tokens[start + offset]
    pi, ti = nt_index(p), nt_index(t)
    if not pi:
      if ti or p != t:
        return False
      continue
    if not ti:
      return False
    if pi in mapping:
      if mapping[pi] != ti:
        return False
    elif ti in used:
      return False
    else:
      mapping[pi] = ti
      used.add(ti)
  return True


def _occurrences(pattern: Sequence[str], tokens: Sequence[str]) -> List[int]:
  size = len(pattern)
  return [i for i in range(len(tokens) - size + 1)
          if tuple(tokens[i:i + size]) == tuple(pattern)]


def _non_overlapping(starts: Sequence[int], size: int) -> List[int]:
  chosen, end = [], -1
  for s in starts:
    if s >= end:
      chosen.append(s)
      end = s + size
  return chosen


def _as_parent(r1: Rule, r2: Rule) -> Iterator[Rule]:
  """r3 with r3 o r2 => r1: r2's pair abstracted out of r1 as a new NT."""
  size = len(r2.source)
  if size > len(r1.source):
    return
  fresh = nt_token(_FRESH)
  for p in range(len(r1.source) - size + 1):
    mapping: Dict[int, int] = {}
    if not _match_with_nts(r2.source, r1.source, p, mapping):
      continue
    sub_target = [nt_token(mapping[nt_index(t)]) if nt_index(t) else t
                  for t in r2.target]
    starts = _occurrences(sub_target, r1.target)
    if not starts:
      continue
    options = [_non_overlapping(starts, len(sub_target))]
    options += [[s] for s in starts if [s] != options[0]]
    source = list(r1.source[:p]) + [fresh] + list(r1.source[p + size:])
    for chosen in options:
      target, i = [], 0
      while i < len(r1.target):
        if i in chosen:
          target.append(fresh)
          i += len(sub_target)
        else:
          target.append(r1.target[i])
          i += 1
      yield canonical(source, target)


def _as_child(r1: Rule, r2: Rule) -> Iterator[Rule]:
  """r3 with r2 o r3 => r1: the part of r1 that fills one NT of r2."""
  for k in range(1, r2.num_nts + 1):
    slot = nt_token(k)
    pos = r2.source.index(slot)
    before, after = r2.source[:pos], r2.source[pos + 1:]
    middle = len(r1.source) - len(before) - len(after)
    if middle < 1:
      continue
    mapping: Dict[int, int] = {}
    if not (_match_with_nts(before, r1.source, 0, mapping) and
            _match_with_nts(after, r1.source, len(before) + middle,
                            mapping)):
      continue
    count = r2.target.count(slot)
    rest = len(r2.target) - count
    if (len(r1.target) - rest) % count:
      continue
    size = (len(r1.target) - rest) // count
    if size < 1:
      continue
    piece: Optional[Tuple[str, ...]] = None
    i, ok = 0, True
    for t in r2.target:
      if t == slot:
        seg = tuple(r1.target[i:i + size])
        if piece is not None and seg != piece:
          ok = False
          break
        piece = seg
        i += size
      else:
        want = nt_token(mapping[nt_index(t)]) if nt_index(t) else t
        if i >= len(r1.target) or r1.target[i] != want:
          ok = False
          break
        i += 1
    if ok and piece is not None:
      yield canonical(r1.source[pos:pos + middle], piece)


def _linked(rule: Rule) -> bool:
  """The NT conditions of a valid rule, for rules built by `canonical` from
  valid rules' tokens: every source NT on the target side and no other."""
  if not rule.source or not rule.target:
    return False
  src = {t for t in rule.source if nt_index(t)}
  tgt = {t for t in rule.target if nt_index(t)}
  if src != tgt:
    return False
  return not (len(rule.source) == 1 and rule.source == rule.target)


def unify(r1: Rule, r2: Rule) -> Set[Rule]:
  """UNIFY(r1, r2): rules r3 with r2 o r3 => r1 or r3 o r2 => r1."""
  out = set()
  for r3 in _as_parent(r1, r2):
    if r3 != r1 and _linked(r3) and any(
        compose(r3, k, r2) == r1 for k in range(1, r3.num_nts + 1)):
      out.add(r3)
  for r3 in _as_child(r1, r2):
    if r3 != r1 and _linked(r3) and any(
        compose(r2, k, r3) == r1 for k in range(1, r2.num_nts + 1)):
      out.add(r3)
  return out
