"""Pure-Python twin of `kernel.py`: the same functions, written plainly.

Same names, arguments and results (numpy arrays) as the Numba kernels, so
tests can run both on small random inputs and compare.
"""

import numpy as np

from csl_jax.methods.geca.kernel import (COL_FH, COL_TH, ENV_END,
                                         NUM_FIXED_COLS, PAD, SEP, SPAN_END)

_MASK = (1 << 64) - 1
_OFF1, _P1 = 0xCBF29CE484222325, 0x100000001B3
_OFF2, _P2 = 0x84222325CBF29CE4, 0x9E3779B97F4A7C15
_M1, _M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
_TOKEN_SHIFT = 1_000_003


def _step(h, tok, p):
  return ((h ^ (int(tok) + _TOKEN_SHIFT)) * p) & _MASK


def _mix(h):
  h ^= h >> 30
  h = (h * _M1) & _MASK
  h ^= h >> 27
  h = (h * _M2) & _MASK
  return h ^ (h >> 31)


def _fold(toks, off, p):
  h = off
  for t in toks:
    h = _step(h, t, p)
  return _mix(h)


def hash_tokens(seq, start, stop):
  toks = list(seq[start:stop])
  return (np.uint64(_fold(toks, _OFF1, _P1)),
          np.uint64(_fold(toks, _OFF2, _P2) >> 32))


def sequence_hashes(tokens, offsets):
  return np.array([hash_tokens(tokens, offsets[q], offsets[q + 1])[0]
                   for q in range(len(offsets) - 1)], np.uint64)


def ngram_hashes(tokens, offsets, max_size):
  out = []
  for q in range(len(offsets) - 1):
    seq = list(tokens[offsets[q]:offsets[q + 1]])
    for i in range(len(seq)):
      for size in range(1, max_size + 1):
        gram = seq[i:i + size]
        if len(gram) < size or any(t <= 0 for t in gram):
          break
        out.append(hash_tokens(gram, 0, size)[0])
  return np.array(out, np.uint64)


def _replace_all(seq, start, size, hole):
  old = seq[start:start + size]
  out, i = [], 0
  while i < len(seq):
    if seq[i:i + size] == old:
      out.append(hole)
      i += size
    else:
      out.append(seq[i])
      i += 1
  return out


def _env_hash(templ, window):
  codes = []
  for j, t in enumerate(templ):
    if t < 0:
      codes += [templ[d] if 0 <= d < len(templ) else PAD
                for d in range(j - window, j + window + 1)]
      codes.append(ENV_END)
  return np.uint64(_fold(codes, _OFF1, _P1))


def enumerate_pairs(tokens, offsets, seqs, wug_size, wug_count, allowed,
                    use_allowed, window, output_only):
  allowed = {int(a) for a in allowed}
  ncol = NUM_FIXED_COLS + 2 * wug_count
  rows = []
  for q in seqs:
    found = {}

    def search(cur, begin, level, used, q=q, found=found):
      for size in range(1, wug_size + 1):
        for i in range(begin, len(cur) - size + 1):
          arg = cur[i:i + size]
          if any(t <= 0 for t in arg):
            continue
          if use_allowed and int(hash_tokens(arg, 0, size)[0]) not in allowed:
            continue
          if any(set(u) & set(arg) for u, _, _ in used):
            continue
          templ = _replace_all(cur, i, size, -(level + 1))
          spans = used + ((arg, i, size),)
          codes = [t for u, _, _ in spans for t in list(u) + [SPAN_END]]
          th, th2 = hash_tokens(templ, 0, len(templ))
          row = [0] * ncol
          row[0], row[1] = int(th), int(th2)
          row[2] = _fold(codes, _OFF1, _P1)
          row[3] = _fold(codes, _OFF2, _P2) >> 32
          row[4] = int(th) if window < 0 else int(_env_hash(templ, window))
          row[5], row[6] = q, level + 1
          if output_only:
            two = any(t < 0 for t in templ)
          else:
            cut = templ.index(SEP)
            two = (any(t < 0 for t in templ[:cut])
                   and any(t < 0 for t in templ[cut + 1:]))
          row[7] = int(two)
          for p, (_, pos, sz) in enumerate(spans):
            row[NUM_FIXED_COLS + 2 * p] = pos
            row[NUM_FIXED_COLS + 2 * p + 1] = sz
          found.setdefault((row[COL_TH], row[COL_FH]), row)
          if level + 1 < wug_count:
            search(templ, i + 1, level + 1, spans)

    search(list(tokens[offsets[q]:offsets[q + 1]]), 0, 0, ())
    rows.extend(found.values())
  return np.array(rows, np.uint64).reshape(-1, ncol)


def _replay(tokens, offsets, seq, pos, size, ns):
  # Python ints: the stored columns are int8/int16, whose sums wrap.
  pos, size = [int(x) for x in pos], [int(x) for x in size]
  cur = list(tokens[offsets[seq]:offsets[seq + 1]])
  spans = []
  for k in range(int(ns)):
    spans.append(cur[pos[k]:pos[k] + size[k]])
    cur = _replace_all(cur, pos[k], size[k], -(k + 1))
  return cur, spans


def span_hashes(tokens, offsets, seq, pos, size, ns, max_size):
  del max_size
  out = np.zeros(pos.shape, np.uint64)
  for k in range(len(seq)):
    _, spans = _replay(tokens, offsets, seq[k], pos[k], size[k], ns[k])
    for p, span in enumerate(spans):
      out[k, p] = hash_tokens(span, 0, len(span))[0]
  return out


def signature_hashes(ptr, ids):
  return np.array([hash_tokens(ids, ptr[k], ptr[k + 1])[0]
                   for k in range(len(ptr) - 1)], np.uint64)


def candidates(sig_ptr, sig_fids, sig_excl, inv_ptr, inv_dsig, dsig_ptr,
               dsig_fids, dsig_count, frag_spans, uniform):
  def spans(f):
    return {int(h) for h in frag_spans[f] if h != 0}

  ptr, fids, wts = [0], [], []
  for k in range(len(sig_ptr) - 1):
    s = [int(f) for f in sig_fids[sig_ptr[k]:sig_ptr[k + 1]]]
    donors = {int(d) for f in s for d in inv_dsig[inv_ptr[f]:inv_ptr[f + 1]]}
    weight = {}
    for d in donors:
      units = int(dsig_count[d]) - int(d == sig_excl[k])  # own unit left out
      for f2 in dsig_fids[dsig_ptr[d]:dsig_ptr[d + 1]]:
        if units:
          weight[int(f2)] = weight.get(int(f2), 0) + units
    for f2 in sorted(weight):
      if f2 in s or all(spans(f2) & spans(f) for f in s):
        continue
      fids.append(f2)
      wts.append(1 if uniform else weight[f2])
    ptr.append(len(fids))
  return (np.array(ptr, np.int64), np.array(fids, np.int64),
          np.array(wts, np.int64))


def draw_fills(cand_ptr, cand_w, target_sig, variants, uniforms):
  width = max([min(variants, cand_ptr[s + 1] - cand_ptr[s])
               for s in target_sig], default=0)
  out = np.full((len(target_sig), width), -1, np.int64)
  for t, s in enumerate(target_sig):
    # The multiset as an explicit list of copies, as the release builds it.
    copies = [j for j in range(cand_ptr[s], cand_ptr[s + 1])
              for _ in range(cand_w[j])]
    if len(copies) <= variants:
      picks = copies
    else:
      picks = []
      for v in range(variants):
        r = min(int(uniforms[t, v] * len(copies)), len(copies) - 1)
        picks.append(copies.pop(r))
    distinct = list(dict.fromkeys(picks))
    out[t, :len(distinct)] = distinct
  return out


def fill_pairs(tokens, offsets, t_seq, t_pos, t_size, t_ns, f_seq, f_pos,
               f_size, f_ns, max_size, output_only):
  del max_size
  flat, ptr, in_hash, out_hash = [], [0], [], []
  for k in range(len(t_seq)):
    templ, _ = _replay(tokens, offsets, t_seq[k], t_pos[k], t_size[k],
                       t_ns[k])
    _, spans = _replay(tokens, offsets, f_seq[k], f_pos[k], f_size[k],
                       f_ns[k])
    seq = [x for t in templ for x in (spans[-t - 1] if t < 0 else [t])]
    flat += seq
    ptr.append(len(flat))
    if output_only:
      in_hash.append(0)
      out_hash.append(hash_tokens(seq, 0, len(seq))[0])
    else:
      cut = seq.index(SEP)
      in_hash.append(hash_tokens(seq, 0, cut)[0])
      out_hash.append(hash_tokens(seq, cut + 1, len(seq))[0])
  return (np.array(flat, np.int32), np.array(ptr, np.int64),
          np.array(in_hash, np.uint64), np.array(out_hash, np.uint64))
