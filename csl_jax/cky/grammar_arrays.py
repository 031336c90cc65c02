"""Integer encoding of a QCFG for the Numba kernels.

Terminals get ids >= 0 in separate source and target vocabularies; `NT_k` is
encoded as -k. Example tokens that the grammar never mentions are encoded as
UNKNOWN, which no rule terminal equals.
"""

import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

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


def encode_qcfg(rules: Sequence[Rule], max_nts: int = DEFAULT_MAX_NTS,
                vocab: Optional[Tuple[Dict[str, int], Dict[str, int]]] = None
                ) -> QCFGArrays:
  """`vocab`: (source, target) token ids shared with other grammars, grown
  in place by this grammar's new terminals (ids are never reassigned, so
  sequences encoded with them stay valid; `clamp` them for a grammar built
  before their tokens were added). The grammar keeps a snapshot."""
  rules = tuple(rules)
  source_vocab: Dict[str, int] = vocab[0] if vocab else {}
  target_vocab: Dict[str, int] = vocab[1] if vocab else {}
  srcs, tgts, nts = [], [], []
  for i, rule in enumerate(rules):
    srcs.append(_symbols(rule.source, source_vocab))
    nts.append(sum(1 for sym in srcs[-1] if sym < 0))
    if nts[-1] > max_nts:
      raise InputError(f"rule {i + 1} ({format_rule(rule)!r}) has "
                       f"{nts[-1]} NTs, more than max_nts={max_nts}")
    tgts.append(_symbols(rule.target, target_vocab))

  def pad(seqs):
    width = max([len(s) for s in seqs] + [1])
    arr = np.zeros((len(seqs), width), dtype=np.int32)
    for i, s in enumerate(seqs):
      arr[i, :len(s)] = s
    return arr, np.array([len(s) for s in seqs], dtype=np.int32)

  src_sym, src_len = pad(srcs)
  tgt_sym, tgt_len = pad(tgts)
  num_nts = np.array(nts, dtype=np.int32)
  tgt_first = np.zeros(tgt_sym.shape, dtype=np.bool_)
  for i, tgt in enumerate(tgts):
    seen = set()
    for t, sym in enumerate(tgt):
      if sym < 0 and sym not in seen:
        tgt_first[i, t] = True
        seen.add(sym)
  anchor_off, anchor_rules, free_rules = _anchor_index(srcs, len(source_vocab))
  if vocab:
    source_vocab, target_vocab = dict(source_vocab), dict(target_vocab)
  return QCFGArrays(rules, source_vocab, target_vocab, src_sym, src_len,
                    tgt_sym, tgt_len, num_nts, tgt_first, max_nts,
                    anchor_off, anchor_rules, free_rules)


def _anchor_index(srcs: List[List[int]], vocab_size: int):
  freq = np.zeros(vocab_size, np.int64)
  for s in srcs:
    for t in set(s):
      if t >= 0:
        freq[t] += 1
  anchors = [min((t for t in set(s) if t >= 0), key=lambda t: (freq[t], t),
                 default=-1) for s in srcs]
  free = np.array([r for r, a in enumerate(anchors) if a < 0], np.int32)
  order = sorted((a, r) for r, a in enumerate(anchors) if a >= 0)
  off = np.zeros(vocab_size + 1, np.int64)
  for a, _ in order:
    off[a + 1] += 1
  off = np.cumsum(off)
  return off, np.array([r for _, r in order], np.int32), free
