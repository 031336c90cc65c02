"""Integer encoding of a QCFG for the Numba kernels.

Terminals get ids >= 0 in separate source and target vocabularies; `NT_k` is
encoded as -k. Example tokens that the grammar never mentions are encoded as
UNKNOWN, which no rule terminal equals.
"""

import dataclasses
import itertools
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from csl_jax.errors import InputError
from csl_jax.qcfg.rules import Rule, nt_index, format_rule

UNKNOWN = np.iinfo(np.int32).min
DEFAULT_MAX_NTS = 4


@dataclasses.dataclass(frozen=True)
class QCFGArrays:
  rules: Tuple[Rule, ...]
  source_vocab: Dict[str, int]
  target_vocab: Dict[str, int]
  src_sym: np.ndarray  # [R, max source length] int32, padded with 0
  src_len: np.ndarray  # [R] int32
  tgt_sym: np.ndarray  # [R, max target length] int32
  tgt_len: np.ndarray  # [R] int32
  num_nts: np.ndarray  # [R] int32
  tgt_first: np.ndarray  # [R, max target length] bool: first use of its NT
  max_nts: int
  # Rules indexed by their rarest source terminal (CSR over source ids), and
  # rules without source terminals: a pair only looks at rules anchored on
  # its own tokens.
  anchor_off: np.ndarray
  anchor_rules: np.ndarray
  free_rules: np.ndarray

  @property
  def num_rules(self) -> int:
    return len(self.rules)

  def encode_source(self, tokens: Sequence[str]) -> np.ndarray:
    return _encode(tokens, self.source_vocab)

  def encode_target(self, tokens: Sequence[str]) -> np.ndarray:
    return _encode(tokens, self.target_vocab)

  def clamp(self, source_ids: np.ndarray, target_ids: np.ndarray
            ) -> Tuple[np.ndarray, np.ndarray]:
    """Ids of a shared vocabulary (`encode_qcfg(vocab=...)`) that this
    grammar's snapshot does not have: UNKNOWN, as `encode_*` would give."""
    ns, nt = len(self.source_vocab), len(self.target_vocab)
    return (np.where(source_ids < ns, source_ids, UNKNOWN).astype(np.int32),
            np.where(target_ids < nt, target_ids, UNKNOWN).astype(np.int32))


def _encode(tokens: Sequence[str], vocab: Dict[str, int]) -> np.ndarray:
  try:
    return np.array(list(map(vocab.__getitem__, tokens)), dtype=np.int32)
  except KeyError:
    return np.array([vocab.get(t, UNKNOWN) for t in tokens], dtype=np.int32)


def _symbols(tokens: Sequence[str], vocab: Dict[str, int]) -> List[int]:
  return [-k if (k := nt_index(t)) else vocab.setdefault(t, len(vocab))
          for t in tokens]


def rule_symbols(rule: Rule, vocab: Tuple[Dict[str, int], Dict[str, int]]
                 ) -> Tuple[List[int], List[int]]:
  """A rule's (source, target) symbols; new terminals grow `vocab`."""
  return _symbols(rule.source, vocab[0]), _symbols(rule.target, vocab[1])


def encode_qcfg(rules: Sequence[Rule], max_nts: int = DEFAULT_MAX_NTS,
                vocab: Optional[Tuple[Dict[str, int], Dict[str, int]]] = None,
                symbols: Optional[Callable[[Rule], Tuple[List[int],
                                                         List[int]]]] = None
                ) -> QCFGArrays:
  """`vocab`: (source, target) token ids shared with other grammars, grown
  in place by this grammar's new terminals (ids are never reassigned, so
  sequences encoded with them stay valid; `clamp` them for a grammar built
  before their tokens were added). The grammar keeps a snapshot.
  `symbols`: a cache of `rule_symbols` over the same `vocab` (a search
  encodes the same rules into many grammars)."""
  rules = tuple(rules)
  source_vocab: Dict[str, int] = vocab[0] if vocab else {}
  target_vocab: Dict[str, int] = vocab[1] if vocab else {}
  if symbols is None:
    pairs = [rule_symbols(r, (source_vocab, target_vocab)) for r in rules]
  else:
    pairs = [symbols(r) for r in rules]
  src_flat, src_len = _flat([s for s, _ in pairs])
  tgt_flat, tgt_len = _flat([t for _, t in pairs])
  src_row = np.repeat(np.arange(len(rules)), src_len)
  num_nts = np.bincount(src_row[src_flat < 0],
                        minlength=len(rules)).astype(np.int32)
  over = np.flatnonzero(num_nts > max_nts)
  if len(over):
    i = int(over[0])
    raise InputError(f"rule {i + 1} ({format_rule(rules[i])!r}) has "
                     f"{num_nts[i]} NTs, more than max_nts={max_nts}")
  src_sym = _pad(src_flat, src_len)
  tgt_sym = _pad(tgt_flat, tgt_len)
  # The first target position of each NT of a rule.
  tgt_first = np.zeros(tgt_sym.shape, dtype=np.bool_)
  tgt_row = np.repeat(np.arange(len(rules)), tgt_len)
  nt_at = np.flatnonzero(tgt_flat < 0)
  key = tgt_row[nt_at] * (1 - int(tgt_flat.min(initial=0))) - tgt_flat[nt_at]
  _, first = np.unique(key, return_index=True)
  at = nt_at[first]
  tgt_first[tgt_row[at], at - _starts(tgt_len)[tgt_row[at]]] = True
  anchor_off, anchor_rules, free_rules = _anchor_index(
      src_flat, src_row, len(rules), len(source_vocab))
  if vocab:
    source_vocab, target_vocab = dict(source_vocab), dict(target_vocab)
  return QCFGArrays(rules, source_vocab, target_vocab, src_sym, src_len,
                    tgt_sym, tgt_len, num_nts, tgt_first, max_nts,
                    anchor_off, anchor_rules, free_rules)


def _flat(seqs: Sequence[Sequence[int]]) -> Tuple[np.ndarray, np.ndarray]:
  lengths = np.fromiter(map(len, seqs), np.int32, len(seqs))
  flat = np.fromiter(itertools.chain.from_iterable(seqs), np.int32,
                     int(lengths.sum()))
  return flat, lengths


def _starts(lengths: np.ndarray) -> np.ndarray:
  starts = np.zeros(len(lengths), np.int64)
  np.cumsum(lengths[:-1], out=starts[1:])
  return starts


def _pad(flat: np.ndarray, lengths: np.ndarray) -> np.ndarray:
  """[rows, max(lengths, 1)] int32, zero-padded."""
  width = max(int(lengths.max(initial=0)), 1)
  arr = np.zeros((len(lengths), width), dtype=np.int32)
  row = np.repeat(np.arange(len(lengths)), lengths)
  arr[row, np.arange(len(flat)) - _starts(lengths)[row]] = flat
  return arr


def _anchor_index(src_flat: np.ndarray, src_row: np.ndarray, num_rules: int,
                  vocab_size: int):
  """Each rule under its rarest source terminal (fewest rules, then lowest
  id), CSR over ids; rules without one apart."""
  terms = src_flat >= 0
  # Distinct (rule, terminal), by rule (sort + mask: np.unique's hash
  # table was the slowest part on 10^6 pairs).
  pairs = np.sort(src_row[terms].astype(np.int64) * max(vocab_size, 1)
                  + src_flat[terms])
  pairs = pairs[np.r_[True, pairs[1:] != pairs[:-1]]] if len(pairs) else pairs
  rows, toks = pairs // max(vocab_size, 1), pairs % max(vocab_size, 1)
  freq = np.bincount(toks, minlength=vocab_size)
  anchors = np.full(num_rules, -1, np.int64)
  if len(pairs):
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    best = np.minimum.reduceat(freq[toks] * vocab_size + toks, starts)
    anchors[rows[starts]] = best % vocab_size
  free = np.flatnonzero(anchors < 0).astype(np.int32)
  anchored = np.flatnonzero(anchors >= 0)
  order = anchored[np.argsort(anchors[anchored], kind="stable")]
  off = np.zeros(vocab_size + 1, np.int64)
  np.cumsum(np.bincount(anchors[anchored], minlength=vocab_size),
            out=off[1:])
  return off, order.astype(np.int32), free
