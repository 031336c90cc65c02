"""Pure-Python GECA on token tuples: the twin of `augment.py` for small data.

Written literally from the paper (§3, Algorithm 1) and the behaviour of the
authors' release (`data/builder.py`, `compose.py`; see
`../shared/design/peers.md` §1.1): fragments are found by recursive
replace-all, the links are the release's template -> donor templates map,
and every candidate fill is kept (no sampling), so the result is a
deterministic set that `augment.augment` must reproduce with
`variants` large and `n_sample=None`.
"""

import collections
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from csl_jax.methods.geca.config import GECAConfig

SEP = "\x00SEP"  # the boundary symbol ▷ between input and output
Tokens = Tuple[str, ...]
Fragment = Tuple[Tokens, ...]  # spans, in hole order


def hole(k: int) -> str:
  return f"\x00WUG{k}"


def is_hole(token: str) -> bool:
  return token.startswith("\x00WUG")


def replace_all(seq: Tokens, old: Tokens, new: str) -> Tokens:
  """Every occurrence of `old` (greedy, left to right) becomes `new`."""
  out, i = [], 0
  while i < len(seq):
    if seq[i:i + len(old)] == old:
      out.append(new)
      i += len(old)
    else:
      out.append(seq[i])
      i += 1
  return tuple(out)


def templates_of(seq: Tokens, config: GECAConfig,
                 keep: Optional[Set[Tokens]]) -> Set[Tuple[Tokens, Fragment]]:
  """All (template, fragment) pairs of one joint sequence (release order of
  search: each further span to the right of the previous span's start in the
  partly templated sequence; spans of one fragment share no token)."""
  found = set()

  def search(cur: Tokens, begin: int, k: int, used: Fragment):
    for size in range(1, config.wug_size + 1):
      for i in range(begin, len(cur) - size + 1):
        arg = cur[i:i + size]
        if SEP in arg or any(is_hole(t) for t in arg):
          continue
        if keep is not None and arg not in keep:
          continue
        if any(set(u) & set(arg) for u in used):
          continue
        templ = replace_all(cur, arg, hole(k))
        found.add((templ, used + (arg,)))
        if k + 1 < config.wug_count:
          search(templ, i + 1, k + 1, used + (arg,))

  search(tuple(seq), 0, 0, ())
  return found


def environment(templ: Tokens, window: Optional[int]) -> Tokens:
  """The whole template, or the `window` tokens around each hole (Eq. 3),
  with "\x00|" marking a window clipped by the sequence boundary."""
  if window is None:
    return templ
  padded = ("\x00|",) * window + templ + ("\x00|",) * window
  env = []
  for j, t in enumerate(templ):
    if is_hole(t):
      env.extend(padded[j:j + 2 * window + 1])
      env.append("\x00/")
  return tuple(env)


def joint(inp: str, out: str, output_only: bool) -> Tokens:
  return tuple(out.split()) if output_only else (
      tuple(inp.split()) + (SEP,) + tuple(out.split()))


def prepare(pairs: Sequence[Tuple[str, str]], config: GECAConfig
            ) -> List[Tuple[str, str]]:
  """Dedup (sorted, as the release) or keep the order; no hold-out here."""
  pairs = [(i, o) for i, o in pairs]
  return sorted(set(pairs)) if config.dedup else pairs


def index(pairs: Sequence[Tuple[str, str]], config: GECAConfig):
  """templ -> fragments, over the sequences shorter than max_len."""
  keep = None
  if config.wug_limit is not None:
    counts = collections.Counter()
    for inp, out in pairs:
      sides = (out,) if config.output_only else (inp, out)
      for side in sides:
        toks = tuple(side.split())
        for size in range(1, config.wug_size + 1):
          for i in range(len(toks) - size + 1):
            counts[toks[i:i + size]] += 1
    keep = {g for g, n in counts.items() if n <= config.wug_limit}
  templ_to_frag: Dict[Tokens, Set[Fragment]] = collections.defaultdict(set)
  for inp, out in pairs:
    seq = joint(inp, out, config.output_only)
    if config.max_len is not None and len(seq) >= config.max_len:
      continue
    for templ, frag in templates_of(seq, config, keep):
      templ_to_frag[templ].add(frag)
  return templ_to_frag


def overlaps(frag: Fragment, fills: FrozenSet[Fragment]) -> bool:
  """The release's test: already a fill, or sharing a span with every fill."""
  return frag in fills or all(set(frag) & set(a) for a in fills)


def two_sided(templ: Tokens, output_only: bool) -> bool:
  """Holes on the input side and on the output side (or anywhere, LM)."""
  if output_only:
    return any(is_hole(t) for t in templ)
  cut = templ.index(SEP)
  return (any(is_hole(t) for t in templ[:cut])
          and any(is_hole(t) for t in templ[cut + 1:]))


def candidate_weights(templ_to_frag, config: GECAConfig
                      ) -> Dict[Tokens, Dict[Fragment, int]]:
  """target template -> {fill: number of distinct donor units offering it}.

  A unit is a template (window None) or an environment. Donors of a target
  t are the units with more than one fragment that hold a template t1 != t
  sharing a fragment with t (the release's templ_to_templ with
  multiplicity > 1; the paper's rule: f1 in t1 and in t'1 = t, t'1 != t1,
  env(t1) = env(t2) gives t/f2). For a unit other than env(t), every
  template is != t; in env(t), t itself does not count. With window None
  env(t) = t offers only t's own fragments, left out anyway.
  """
  unit_frags: Dict[Tokens, Set[Fragment]] = collections.defaultdict(set)
  # unit -> fragment -> the number of the unit's templates that have it
  unit_count: Dict[Tokens, collections.Counter] = collections.defaultdict(
      collections.Counter)
  for templ, frags in templ_to_frag.items():
    unit_frags[environment(templ, config.window)] |= frags
    unit_count[environment(templ, config.window)].update(frags)
  frag_to_units = collections.defaultdict(set)
  for unit, frags in unit_frags.items():
    if len(frags) > 1:
      for f in frags:
        frag_to_units[f].add(unit)
  table = {}
  for templ, frags in templ_to_frag.items():
    if not two_sided(templ, config.output_only):
      continue
    donors = set()
    for f in frags:
      donors |= frag_to_units[f]
    own = environment(templ, config.window)
    if not any(unit_count[own][f] > 1 for f in frags):
      donors.discard(own)  # no t1 != t there shares a fragment with t
    weights = collections.Counter()
    fills = frozenset(frags)
    for unit in donors:
      for f2 in unit_frags[unit]:
        if not overlaps(f2, fills):
          weights[f2] += 1
    if weights:
      table[templ] = dict(weights)
  return table


def fill(templ: Tokens, frag: Fragment) -> Tokens:
  return tuple(t for tok in templ
               for t in (frag[int(tok[4:])] if is_hole(tok) else (tok,)))


def augment(pairs: Sequence[Tuple[str, str]], config: GECAConfig
            ) -> Tuple[List[Tuple[str, str]], Dict]:
  """Every realizable fill of every target (no sampling, no cap).

  Returns:
    The sorted new pairs and the weight table (for cross-checks).
  """
  pairs = prepare(pairs, config)
  table = candidate_weights(index(pairs, config), config)
  train_in = {i for i, _ in pairs}
  train_out = {o for _, o in pairs}
  new = set()
  for templ, weights in table.items():
    for frag in weights:
      seq = fill(templ, frag)
      if config.output_only:
        inp, out = "", " ".join(seq)
      else:
        cut = seq.index(SEP)
        inp, out = " ".join(seq[:cut]), " ".join(seq[cut + 1:])
      if out in train_out or (not config.output_only and inp in train_in):
        continue
      new.add((inp, out))
  return sorted(new), table
