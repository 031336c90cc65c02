"""A slow, plain recognizer for output CFGs: the test oracle for cfg_kernel.

It follows the definitions literally: try every assignment of categories to
slot groups, and for each sentential form compute the categories of every span
by fixpoint iteration over the productions as written (no binarization, no
precomputed closures). Only for tests on small inputs. Functions are named
after the `OutputCFG` methods they check, with the grammar as first argument.
"""

import functools
import itertools
from typing import FrozenSet, Iterable, Optional, Sequence, Union


def _span_categories(productions, form) -> FrozenSet[str]:
  """Categories deriving `form`, a list of ('t', word) or ('c', category)."""
  n = len(form)
  table = {}  # (i, j) -> set of categories deriving form[i:j]

  def matches(symbol, i, j):
    if symbol.terminal:
      return j == i + 1 and form[i] == ("t", symbol.name)
    return symbol.name in table.get((i, j), ())

  def rhs_derives(rhs, i, j):
    @functools.lru_cache(maxsize=None)
    def rest(k, m):  # rhs[k:] derives form[m:j]
      if k == len(rhs):
        return m == j
      return any(matches(rhs[k], m, e) and rest(k + 1, e)
                 for e in range(m + 1, j + 1))
    return rest(0, i)

  for length in range(1, n + 1):
    for i in range(n - length + 1):
      j = i + length
      found = set()
      if length == 1 and form[i][0] == "c":
        found.add(form[i][1])
      table[(i, j)] = found
      changed = True
      while changed:  # Unary productions feed the same span, maybe cyclicly.
        changed = False
        for p in productions:
          if p.lhs not in found and rhs_derives(p.rhs, i, j):
            found.add(p.lhs)
            changed = True
  return frozenset(table.get((0, n), ()))


def derivable_categories(
    cfg, tokens: Sequence[str], is_slot: Optional[Sequence[bool]] = None,
    slot_categories: Optional[Iterable[str]] = None,
    slot_ids: Optional[Sequence[int]] = None) -> FrozenSet[str]:
  """Union over slot assignments of the categories deriving the tokens."""
  n = len(tokens)
  is_slot = [False] * n if is_slot is None else list(is_slot)
  slot_ids = [-1] * n if slot_ids is None else list(slot_ids)
  allowed = (list(cfg.categories) if slot_categories is None
             else list(slot_categories))
  # One group per slot id, and one per slot without an id.
  group_of = {i: ("id", slot_ids[i]) if slot_ids[i] >= 0 else ("pos", i)
              for i in range(n) if is_slot[i]}
  groups = sorted(set(group_of.values()))
  result = set()
  for choice in itertools.product(allowed, repeat=len(groups)):
    category_of = dict(zip(groups, choice, strict=True))
    form = [("c", category_of[group_of[i]]) if is_slot[i] else ("t", tokens[i])
            for i in range(n)]
    result |= _span_categories(cfg.productions, form)
  return frozenset(result)


def recognizes_with_slots(cfg, tokens: Sequence[str],
                          is_slot: Optional[Sequence[bool]] = None,
                          slot_categories: Optional[Iterable[str]] = None,
                          slot_ids: Optional[Sequence[int]] = None,
                          category: Union[None, str, Iterable[str]] = None
                          ) -> bool:
  """Like OutputCFG.recognizes_with_slots, the slow obvious way."""
  if category is None:
    category = [cfg.start]
  elif isinstance(category, str):
    category = [category]
  found = derivable_categories(cfg, tokens, is_slot, slot_categories,
                               slot_ids)
  return bool(found & set(category))
