"""Pure-Python twin of `unify_kernel.unify_partners`: every r3 that can be
cut out of r1, kept when it is a valid rule that composes back to r1.

Rules are pairs of int tuples, as in the kernel: terminals >= 0, NT_k = -k.
Composition, renumbering and validity are written out again here, so that
a bug in `unify.py` (or in the kernel's copy of it) cannot pass on both
sides. The one restriction of the definition (`unify.py`'s docstring): a
parent r3 abstracts one occurrence of r2's target in r1's, or all of them
taken greedily from the left, not other subsets.
"""

from typing import List, Optional, Set, Tuple

Side = Tuple[int, ...]
Rule = Tuple[Side, Side]

HOLE = "hole"  # the parent's new NT, before renumbering


def _is_nt(token) -> bool:
  return not (isinstance(token, int) and token >= 0)


def _renumber(source, target) -> Optional[Rule]:
  """NTs (any non-terminal names) renamed -1, -2, ... in order of first
  appearance in the source; None if a target NT is not in the source."""
  names = {}
  for t in source:
    if _is_nt(t) and t not in names:
      names[t] = -(len(names) + 1)
  for t in target:
    if _is_nt(t) and t not in names:
      return None
  rename = lambda t: names[t] if _is_nt(t) else int(t)
  return (tuple(rename(t) for t in source), tuple(rename(t) for t in target))


def compose(parent: Rule, k: int, child: Rule) -> Rule:
  """parent with child put into every occurrence of its NT_k."""
  def fill(side, child_side):
    out = []
    for t in side:
      if t == -k:
        out += [("child", c) if c < 0 else c for c in child_side]
      else:
        out.append(("parent", t) if t < 0 else t)
    return out
  return _renumber(fill(parent[0], child[0]), fill(parent[1], child[1]))


def valid(rule: Rule) -> bool:
  """A well-formed rule: sides non-empty, source NTs -1, -2, ... in order
  and once each, the same NT set on both sides, not NT_1 ### NT_1."""
  source, target = rule
  if not source or not target:
    return False
  nts = [t for t in source if t < 0]
  if nts != [-(n + 1) for n in range(len(nts))]:
    return False
  if {t for t in target if t < 0} != set(nts):
    return False
  return rule != ((-1,), (-1,))


def _num_nts(rule: Rule) -> int:
  return sum(1 for t in rule[0] if t < 0)


def _spans(n: int):
  return [(i, j) for i in range(n) for j in range(i + 1, n + 1)]


def _greedy(starts: List[int], size: int) -> List[int]:
  chosen, end = [], -1
  for s in starts:
    if s >= end:
      chosen.append(s)
      end = s + size
  return chosen


def unify(r1: Rule, r2: Rule) -> Set[Rule]:
  """UNIFY(r1, r2): r3 with r2 o r3 => r1 (children) or r3 o r2 => r1
  (parents), r3 valid and not r1."""
  src, tgt = r1
  out = set()
  # A child is a source span and a target span of r1. Composing puts it
  # in place of one source NT of r2 (a cut: only spans of that length).
  for i, j in _spans(len(src)):
    if j - i != len(src) - len(r2[0]) + 1:
      continue
    for a, b in _spans(len(tgt)):
      r3 = _renumber(src[i:j], tgt[a:b])
      if r3 is None or not valid(r3) or r3 == r1:
        continue
      if any(compose(r2, k, r3) == r1 for k in range(1, _num_nts(r2) + 1)):
        out.add(r3)
  # A parent is r1 with a source span and some occurrences of a target
  # segment replaced by its new NT; composing puts r2's sides back in
  # their place (a cut: only spans of r2's lengths).
  for i, j in _spans(len(src)):
    if j - i != len(r2[0]):
      continue
    source = src[:i] + (HOLE,) + src[j:]
    for a, b in _spans(len(tgt)):
      size = b - a
      if size != len(r2[1]):
        continue
      starts = [s for s in range(len(tgt) - size + 1)
                if tgt[s:s + size] == tgt[a:b]]
      for chosen in [[s] for s in starts] + [_greedy(starts, size)]:
        target, t = [], 0
        while t < len(tgt):
          if t in chosen:
            target.append(HOLE)
            t += size
          else:
            target.append(tgt[t])
            t += 1
        r3 = _renumber(source, target)
        if r3 is None or not valid(r3) or r3 == r1:
          continue
        if any(compose(r3, k, r2) == r1
               for k in range(1, _num_nts(r3) + 1)):
          out.add(r3)
  return out


def unify_partners(src_flat, src_off, tgt_flat, tgt_off, i,
                   partners) -> Set[Rule]:
  """The kernel's arguments; the union of UNIFY(rule i, rule j) over
  partners j, as a set (the kernel's CSR may repeat a rule)."""
  def rule(q):
    return (tuple(int(c) for c in src_flat[src_off[q]:src_off[q + 1]]),
            tuple(int(c) for c in tgt_flat[tgt_off[q]:tgt_off[q + 1]]))
  out = set()
  for j in partners:
    out |= unify(rule(i), rule(j))
  return out
