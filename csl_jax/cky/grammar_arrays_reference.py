"""Plain-loop twin of `grammar_arrays.encode_qcfg`: the arrays built one
rule and one token at a time (the implementation before the arrays were
built with numpy from cached per-rule symbols)."""

from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from csl_jax.cky.grammar_arrays import (DEFAULT_MAX_NTS, QCFGArrays,
                                        _symbols)
from csl_jax.errors import InputError
from csl_jax.qcfg.rules import Rule, format_rule


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
