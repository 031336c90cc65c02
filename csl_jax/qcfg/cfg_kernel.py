"""CKY recognition for an integer-encoded CFG, compiled with Numba.

Symbols are ints. Categories are 0..C-1, then one preterminal per terminal
that occurs inside a longer right-hand side, then binarization intermediates.
Productions become three tables:

* lexical: terminal -> the symbols that derive it (unary closure applied),
* unary closure: symbol -> every symbol that derives it by unary chains,
  itself included (computed by graph search, so cycles A -> B -> A are fine),
* binary: `A -> X Y`, indexed by the left child X.

`A -> X1 X2 X3` becomes `A -> X1 @(X2 X3)` and `@(X2 X3) -> X2 X3`; equal
suffixes share one intermediate. Epsilon productions are not supported.

A token position is a terminal id (>= 0), an unknown terminal (-1), or a slot
(-2 - row): a placeholder for any category allowed by `slot_masks[row]`.
"""

from typing import List, NamedTuple, Sequence, Tuple

import numba
import numpy as np

from csl_jax import numba_fixes  # noqa: F401  pylint: disable=unused-import

UNKNOWN_TERMINAL = -1


def slot_code(row: int) -> int:
  """The token code of a slot whose allowed categories are `slot_masks[row]`."""
  return -2 - row


class CFGArrays(NamedTuple):
  num_categories: int
  num_symbols: int
  lex_start: np.ndarray  # int64[T + 1], CSR offsets into lex_sym
  lex_sym: np.ndarray  # int32
  clo_start: np.ndarray  # int64[S + 1], CSR offsets into clo_sym
  clo_sym: np.ndarray  # int32
  bin_start: np.ndarray  # int64[S + 1], CSR by left child
  bin_right: np.ndarray  # int32
  bin_parent: np.ndarray  # int32


def _csr(lists: Sequence[Sequence[int]]) -> Tuple[np.ndarray, np.ndarray]:
  start = np.zeros(len(lists) + 1, np.int64)
  start[1:] = np.cumsum([len(x) for x in lists])
  flat = np.array([v for x in lists for v in x], np.int32)
  return start, flat


def encode_cfg(
    num_categories: int, num_terminals: int,
    productions: Sequence[Tuple[int, Sequence[int]]]) -> CFGArrays:
  """Encodes `(lhs, rhs)` productions; rhs has categories c >= 0, terminals ~t.

  Terminal t is written `~t` (== -1 - t) so that one int list holds both.
  """
  num_symbols = num_categories
  lexical = [set() for _ in range(num_terminals)]
  unary_parents: List[set] = [set() for _ in range(num_categories)]
  binary = set()
  preterminal = {}
  intermediate = {}

  def new_symbol() -> int:
    nonlocal num_symbols
    unary_parents.append(set())
    num_symbols += 1
    return num_symbols - 1

  def chart_symbol(x: int) -> int:
    if x >= 0:
      return x
    if x not in preterminal:
      preterminal[x] = new_symbol()
      lexical[~x].add(preterminal[x])
    return preterminal[x]

  def suffix_symbol(suffix: Tuple[int, ...]) -> int:
    if suffix not in intermediate:
      intermediate[suffix] = new_symbol()
      add_binary(intermediate[suffix], suffix)
    return intermediate[suffix]

  def add_binary(parent: int, rhs: Tuple[int, ...]) -> None:
    right = rhs[1] if len(rhs) == 2 else suffix_symbol(rhs[1:])
    binary.add((rhs[0], right, parent))

  for lhs, rhs in productions:
    if not rhs:
      raise ValueError(f"epsilon production for category {lhs}")
    if len(rhs) == 1:
      if rhs[0] >= 0:
        unary_parents[rhs[0]].add(lhs)
      else:
        lexical[~rhs[0]].add(lhs)
    else:
      add_binary(lhs, tuple(chart_symbol(x) for x in rhs))

  closure = []
  for s in range(num_symbols):
    seen, stack = {s}, [s]
    while stack:
      for parent in unary_parents[stack.pop()]:
        if parent not in seen:
          seen.add(parent)
          stack.append(parent)
    closure.append(sorted(seen))
  lex_closed = [sorted({a for x in xs for a in closure[x]}) for xs in lexical]
  by_left = [[] for _ in range(num_symbols)]
  for left, right, parent in sorted(binary):
    by_left[left].append((right, parent))

  lex_start, lex_sym = _csr(lex_closed)
  clo_start, clo_sym = _csr(closure)
  bin_start, bin_right = _csr([[r for r, _ in x] for x in by_left])
  _, bin_parent = _csr([[p for _, p in x] for x in by_left])
  return CFGArrays(num_categories, num_symbols, lex_start, lex_sym,
                   clo_start, clo_sym, bin_start, bin_right, bin_parent)


@numba.njit(cache=True, inline="always")
def _has(bits, cell, s):
  return ((bits[cell, s >> 6] >> np.uint64(s & 63)) & np.uint64(1)) != 0


@numba.njit(cache=True, inline="always")
def _add_closed(bits, syms, size, cell, s, clo_start, clo_sym):
  """Adds s and its unary ancestors to a cell; the new size, -1 if full."""
  for q in range(clo_start[s], clo_start[s + 1]):
    a = clo_sym[q]
    if not _has(bits, cell, a):
      if size == syms.shape[0]:
        return -1
      bits[cell, a >> 6] |= np.uint64(1) << np.uint64(a & 63)
      syms[size] = a
      size += 1
  return size


@numba.njit(cache=True)
def cky_top_categories(tokens, slot_masks, capacity, num_categories,
                       num_symbols, lex_start, lex_sym, clo_start, clo_sym,
                       bin_start, bin_right, bin_parent):
  """(bool[num_categories] of categories deriving the input, complete).

  complete is False if the chart needed more than `capacity` entries; then
  call again with more. (Growing in place made the hot loops much slower.)
  """
  n = tokens.shape[0]
  top = np.zeros(num_categories, np.bool_)
  if n == 0:
    return top, True
  n1 = n + 1
  # Cell (i, k) is row i * n1 + k. Each cell is a bitset over symbols plus a
  # contiguous run syms[lo:hi], so sparse cells are cheap to scan.
  bits = np.zeros((n1 * n1, (num_symbols + 63) // 64), np.uint64)
  syms = np.empty(capacity, np.int32)
  size = 0
  # Only cells already done are read, so these need no zeroing.
  lo = np.empty(n1 * n1, np.int64)
  hi = np.empty(n1 * n1, np.int64)
  # ends[i, :num_ends[i]]: the k of the non-empty cells (i, k) done so far.
  ends = np.empty((n1, n1), np.int32)
  num_ends = np.zeros(n1, np.int32)
  for k in range(1, n1):
    cell = (k - 1) * n1 + k
    lo[cell] = size
    t = tokens[k - 1]
    if t >= 0:
      for p in range(lex_start[t], lex_start[t + 1]):
        size = _add_closed(bits, syms, size, cell, lex_sym[p], clo_start,
                           clo_sym)
        if size < 0:
          return top, False
    elif t <= -2:
      if -2 - t >= slot_masks.shape[0]:
        raise ValueError("a slot code refers to a missing slot_masks row")
      for c in range(num_categories):
        if slot_masks[-2 - t, c]:
          size = _add_closed(bits, syms, size, cell, c, clo_start, clo_sym)
          if size < 0:
            return top, False
    hi[cell] = size
    if size == lo[cell]:
      return top, True  # Nothing derives this token, so nothing spans it.
    ends[k - 1, num_ends[k - 1]] = k
    num_ends[k - 1] += 1
    for i in range(k - 2, -1, -1):
      cell = i * n1 + k
      lo[cell] = size
      for e in range(num_ends[i]):
        j = ends[i, e]
        right = j * n1 + k
        if hi[right] == lo[right]:
          continue
        left = i * n1 + j
        for p in range(lo[left], hi[left]):
          b = syms[p]
          for r in range(bin_start[b], bin_start[b + 1]):
            if _has(bits, right, bin_right[r]):
              a = bin_parent[r]
              # Cells are closed under unary ancestors, so a present symbol
              # already brought its whole closure.
              if not _has(bits, cell, a):
                size = _add_closed(bits, syms, size, cell, a, clo_start,
                                   clo_sym)
                if size < 0:
                  return top, False
      hi[cell] = size
      if size > lo[cell]:
        ends[i, num_ends[i]] = k
        num_ends[i] += 1
  for c in range(num_categories):
    top[c] = _has(bits, n, c)  # Cell (0, n).
  return top, True


def top_categories(grammar: CFGArrays, tokens: np.ndarray,
                   slot_masks: np.ndarray,
                   initial_capacity: int = 0) -> np.ndarray:
  """bool[C] of categories deriving `tokens` (codes as in the module doc)."""
  tokens = np.ascontiguousarray(tokens, np.int64)
  # Writable too: a read-only array is another numba type (another compile).
  slot_masks = np.require(slot_masks, np.bool_, ["C", "W"])
  if slot_masks.ndim != 2 or slot_masks.shape[1] != grammar.num_categories:
    raise ValueError(f"slot_masks must be [rows, {grammar.num_categories}]")
  g = grammar
  return _top_grown(tokens, slot_masks, initial_capacity, g.num_categories,
                    g.num_symbols, g.lex_start, g.lex_sym, g.clo_start,
                    g.clo_sym, g.bin_start, g.bin_right, g.bin_parent)


@numba.njit(cache=True)
def _top_grown(tokens, slot_masks, initial_capacity, num_categories,
               num_symbols, lex_start, lex_sym, clo_start, clo_sym, bin_start,
               bin_right, bin_parent):
  """`cky_top_categories` with the chart grown until it fits (0: the
  default first capacity)."""
  n = tokens.shape[0]
  # A cell holds each symbol at most once, so `most` entries always suffice.
  most = max(1, n * (n + 1) // 2 * num_symbols)
  capacity = min(most, initial_capacity if initial_capacity > 0
                 else 64 * (n + 1))
  while True:
    top, complete = cky_top_categories(
        tokens, slot_masks, capacity, num_categories, num_symbols, lex_start,
        lex_sym, clo_start, clo_sym, bin_start, bin_right, bin_parent)
    if complete:
      return top
    capacity = min(most, 4 * capacity)


@numba.njit(cache=True)
def _hits(top, goal):
  for c in range(goal.shape[0]):
    if top[c] and goal[c]:
      return True
  return False


@numba.njit(cache=True)
def recognize_with_slots(tokens, group_pos, group_off, slot_masks, goal,
                         num_categories, num_symbols, lex_start, lex_sym,
                         clo_start, clo_sym, bin_start, bin_right,
                         bin_parent):
  """Whether a goal category derives `tokens` for some choice of one
  category per group of slots (`OutputCFG.recognizes_with_slots`).

  Slots are codes `slot_code(0)` (any category of slot_masks[0]); group g
  is the positions group_pos[group_off[g]:group_off[g + 1]], at least two
  each (a lone slot needs no choice), and its choices are written into a
  copy as `slot_code(1 + c)` (slot_masks[1 + c] is category c alone).
  The search of `OutputCFG._search`: all slots free first (if that fails,
  nothing can succeed); then each group alone, keeping the categories
  that still reach the goal; then every combination of those."""
  args = (num_categories, num_symbols, lex_start, lex_sym, clo_start,
          clo_sym, bin_start, bin_right, bin_parent)
  first = np.int64(0)  # typed, not a literal: one compiled _top_grown
  if not _hits(_top_grown(tokens, slot_masks, first, *args), goal):
    return False
  num_groups = group_off.shape[0] - 1
  if num_groups == 0:
    return True
  trial = tokens.copy()
  options = np.zeros((num_groups, num_categories), np.int64)
  num_options = np.zeros(num_groups, np.int64)
  for q in range(num_groups):
    for c in range(num_categories):
      if not slot_masks[0, c]:
        continue
      for p in range(group_off[q], group_off[q + 1]):
        trial[group_pos[p]] = -3 - c
      found = _hits(_top_grown(trial, slot_masks, first, *args), goal)
      for p in range(group_off[q], group_off[q + 1]):
        trial[group_pos[p]] = tokens[group_pos[p]]
      if found:
        if num_groups == 1:
          return True
        options[q, num_options[q]] = c
        num_options[q] += 1
    if num_options[q] == 0:
      return False
  # Every combination of the surviving options (an odometer), first
  # group slowest as itertools.product.
  pick = np.zeros(num_groups, np.int64)
  while True:
    for q in range(num_groups):
      c = options[q, pick[q]]
      for p in range(group_off[q], group_off[q + 1]):
        trial[group_pos[p]] = -3 - c
    if _hits(_top_grown(trial, slot_masks, first, *args), goal):
      return True
    q = num_groups - 1
    while q >= 0:
      pick[q] += 1
      if pick[q] < num_options[q]:
        break
      pick[q] = 0
      q -= 1
    if q < 0:
      return False


@numba.njit(cache=True)
def recognize_slot_ids(raw, slot_masks, goal, num_categories, num_symbols,
                       lex_start, lex_sym, clo_start, clo_sym, bin_start,
                       bin_right, bin_parent):
  """`recognize_with_slots` with the slots and their ids in the codes:
  raw[i] >= -1 is a token code, raw[i] <= -2 a slot of id -2 - raw[i]
  (slots of one id take one category; an id used once is a free slot)."""
  n = raw.shape[0]
  tokens = raw.copy()
  top_id = -1
  for i in range(n):
    if raw[i] <= -2:
      tokens[i] = -2  # slot_code(0)
      top_id = max(top_id, -2 - raw[i])
  count = np.zeros(top_id + 1, np.int64)
  for i in range(n):
    if raw[i] <= -2:
      count[-2 - raw[i]] += 1
  group_off = np.zeros(top_id + 2, np.int64)
  num_groups = 0
  for sid in range(top_id + 1):
    if count[sid] > 1:
      group_off[num_groups + 1] = group_off[num_groups] + count[sid]
      num_groups += 1
  group_pos = np.empty(group_off[num_groups], np.int64)
  q = 0
  for sid in range(top_id + 1):
    if count[sid] > 1:
      p = group_off[q]
      for i in range(n):
        if raw[i] == -2 - sid:
          group_pos[p] = i
          p += 1
      q += 1
  return recognize_with_slots(
      tokens, group_pos, group_off[:num_groups + 1], slot_masks, goal,
      num_categories, num_symbols, lex_start, lex_sym, clo_start, clo_sym,
      bin_start, bin_right, bin_parent)
