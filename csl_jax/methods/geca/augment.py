"""GECA (Andreas, 2020) on integer-encoded data: `augment(pairs, config)`.

The paper's rule (§3, boxed): if fragments f1 and f2 share an environment,
every other template of f1 also takes f2. The authors' release realizes it
by linking, for every fragment, every pair of its templates (Σ_f |T(f)|²
steps: 2·10⁹ on SCAN, ~5·10¹⁰ on COGS; the cost that made GECA "not
computationally tractable" on COGS for Qiu et al. 2022, C.4). Here the
same candidate sets and weights come from fragment *sets* instead:

* a unit is a template (environment = whole template) or an environment;
  K(u) is the set of fragments seen in unit u, and units with |K(u)| > 1
  are donors (the release's multiplicity > 1);
* the candidate fills of a target template t are the fragments of the
  donors that share a fragment with F(t), weighted by the number of such
  distinct donors; t's own environment (window k) counts only where
  another of its templates shares a fragment with t (the rule's
  t'1 != t1). This depends on F(t) and that environment's donor signature
  where it does not count, so it is computed once per distinct such key,
  through an inverted index fragment -> distinct donor fragment sets
  (with their unit counts).

Templates and fragments are interned as hashes (`kernel.py`); a stored
(template, fragment) pair is its sequence plus span positions, from which
both are rebuilt only for what is generated. Enumeration runs in shards on
two threads; targets are visited in a seeded random order in chunks, so a
cap (`n_sample`) stops early and memory stays bounded. `augment_reference`
is the plain-Python twin for small inputs.
"""

import collections
import concurrent.futures
import contextlib
import dataclasses
import os
import resource
import tempfile
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from csl_jax.errors import InputError
from csl_jax.methods.geca.config import GECAConfig

SEP_TEXT = "▷"
# The columns a stored (template, fragment) pair is rebuilt from.
_REP = ("seq", "pos", "size", "ns")
# Peak bytes per stored (template, fragment) pair while the index is built
# (compact columns + sort temporaries); measured: the peak over the pairs
# of COGS without wug_limit (BENCHMARKS "Issue 12 — GECA", rows G7).
_BYTES_PER_PAIR = 160
_SAMPLE_FOR_ESTIMATE = 256
MAX_SEQUENCE = np.iinfo(np.int16).max


class GECAResourceError(InputError):
  """GECA would need more memory than allowed; carries the estimate."""

  def __init__(self, message: str, estimate: Dict):
    super().__init__(message)
    self.estimate = estimate


@dataclasses.dataclass
class _Encoded:
  vocab: List[str]          # id -> word; id 0 is the boundary
  tokens: np.ndarray        # joint sequences, flat int32
  offsets: np.ndarray       # int64, len = number of sequences + 1
  train_in: np.ndarray      # sorted hashes of training inputs
  train_out: np.ndarray     # sorted hashes of training outputs


def prepare_pairs(pairs: Sequence[Tuple[str, str]], config: GECAConfig
                  ) -> List[Tuple[str, str]]:
  """The release's data preparation: hold-out, then dedup (sorted)."""
  pairs = [(str(i), str(o)) for i, o in pairs]
  if config.holdout:
    # The release: np.random.seed(seed); np.random.shuffle(train); the first
    # `holdout` lines are validation. RandomState reproduces that order.
    order = list(range(len(pairs)))
    np.random.RandomState(config.seed).shuffle(order)
    pairs = [pairs[k] for k in order[config.holdout:]]
  if config.dedup:
    pairs = sorted(set(pairs))
  return pairs


def _encode(pairs, config: GECAConfig) -> Tuple[_Encoded, np.ndarray]:
  """Joint sequences of the pairs shorter than max_len, hashes of the
  training sides, and the n-grams allowed as spans (`wug_limit`)."""
  from csl_jax.methods.geca import kernel  # pylint: disable=g-import-not-at-top
  ids = {}
  vocab = [SEP_TEXT]

  def enc(text):
    out = []
    for w in text.split():
      k = ids.get(w)
      if k is None:
        k = ids[w] = len(vocab)
        vocab.append(w)
      out.append(k)
    return out

  joint, sides_in, sides_out = [], [], []
  for inp, out in pairs:
    i, o = enc(inp), enc(out)
    sides_in.append(i)
    sides_out.append(o)
    seq = o if config.output_only else i + [0] + o
    if config.max_len is None or len(seq) < config.max_len:
      if len(seq) > MAX_SEQUENCE:  # span positions are stored as int16
        raise InputError(f"GECA indexes sequences of at most {MAX_SEQUENCE:,}"
                         f" tokens (input and output); a training pair has "
                         f"{len(seq):,}: set GECAConfig.max_len")
      joint.append(seq)

  def flat(seqs):
    offsets = np.zeros(len(seqs) + 1, np.int64)
    offsets[1:] = np.cumsum([len(s) for s in seqs])
    tokens = np.fromiter((t for s in seqs for t in s), np.int32,
                         int(offsets[-1]))
    return tokens, offsets

  tokens, offsets = flat(joint)
  in_tok, in_off = flat(sides_in)
  out_tok, out_off = flat(sides_out)
  e = _Encoded(vocab, tokens, offsets,
               np.unique(kernel.sequence_hashes(in_tok, in_off)),
               np.unique(kernel.sequence_hashes(out_tok, out_off)))
  sides = (out_tok, out_off) if config.output_only else (
      np.concatenate([in_tok, out_tok]),
      np.concatenate([in_off[:-1], out_off + in_off[-1]]))
  allowed = np.zeros(0, np.uint64)
  if config.wug_limit is not None:
    grams, counts = np.unique(
        kernel.ngram_hashes(sides[0], sides[1], config.wug_size),
        return_counts=True)
    allowed = grams[counts <= config.wug_limit]
  return e, allowed


def _columns(rows: np.ndarray, c: int, window: bool) -> Dict[str, np.ndarray]:
  """Compact typed columns of the kernel's record rows."""
  from csl_jax.methods.geca import kernel as k  # pylint: disable=g-import-not-at-top
  cols = {
      "th": rows[:, k.COL_TH].copy(),
      "th2": rows[:, k.COL_TH2].astype(np.uint32),
      "fh": rows[:, k.COL_FH].copy(),
      "fh2": rows[:, k.COL_FH2].astype(np.uint32),
      "seq": rows[:, k.COL_SEQ].astype(np.int32),
      "ns": rows[:, k.COL_NS].astype(np.int8),
      "two": rows[:, k.COL_TWO].astype(bool),
      "pos": rows[:, k.NUM_FIXED_COLS::2][:, :c].astype(np.int16),
      "size": rows[:, k.NUM_FIXED_COLS + 1::2][:, :c].astype(np.int8),
  }
  if window:
    cols["uh"] = rows[:, k.COL_UH].copy()
  return cols


def _peak_rss_gb() -> float:
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _enumerate(e: _Encoded, allowed, config: GECAConfig, stats: Dict
               ) -> Dict[str, np.ndarray]:
  """All (template, fragment) pairs, in shards on two threads, after a
  resource estimate from a random sample of sequences."""
  from csl_jax.methods.geca import kernel  # pylint: disable=g-import-not-at-top
  nseq = len(e.offsets) - 1
  window = -1 if config.window is None else config.window
  args = (config.wug_size, config.wug_count, allowed,
          config.wug_limit is not None, window, config.output_only)
  rng = np.random.default_rng(config.seed)
  sample = np.sort(rng.choice(nseq, min(nseq, _SAMPLE_FOR_ESTIMATE),
                              replace=False)) if nseq else np.zeros(0, int)
  limit = config.memory_limit_gb * 2**30
  # The sample a few sequences at a time, stopping once its pairs alone
  # (scaled to the index) pass the limit: the estimate itself stays small.
  counted = 0
  for a in range(0, len(sample), 8):
    counted += len(kernel.enumerate_pairs(e.tokens, e.offsets,
                                          sample[a:a + 8], *args))
    if counted * nseq / len(sample) * _BYTES_PER_PAIR > limit:
      break
  per_seq = counted / max(1, len(sample))
  estimate = {"sequences": nseq, "pairs_per_sequence": round(per_seq, 1),
              "estimated_pairs": int(per_seq * nseq),
              "estimated_gb": round(per_seq * nseq * _BYTES_PER_PAIR / 2**30,
                                    2),
              "memory_limit_gb": config.memory_limit_gb}
  stats["estimate"] = estimate
  if per_seq * nseq * _BYTES_PER_PAIR > limit:
    raise GECAResourceError(
        f"GECA would index ~{estimate['estimated_pairs']:,} (template, "
        f"fragment) pairs, ~{estimate['estimated_gb']} GB > memory_limit_gb="
        f"{config.memory_limit_gb}; set wug_limit (e.g. 50) or raise the "
        "limit", estimate)
  # Shards small enough that the 4 in flight hold a tenth of the limit.
  shard = max(1, min(512, nseq // 8 + 1, int(
      limit / 40 / max(per_seq * _BYTES_PER_PAIR, 1.0))))
  shards = [np.arange(a, min(nseq, a + shard)) for a in range(0, nseq, shard)]
  parts, stored = [], 0
  with concurrent.futures.ThreadPoolExecutor(2) as pool:
    # At most 4 shards in flight: their wide record rows stay few.
    pending = collections.deque()
    for k in range(len(shards) + 4):
      if k < len(shards):
        pending.append(pool.submit(kernel.enumerate_pairs, e.tokens,
                                   e.offsets, shards[k], *args))
      if len(pending) < 4 and k < len(shards):
        continue
      if not pending:
        break
      cols = _columns(pending.popleft().result(), config.wug_count,
                      config.window is not None)
      stored += len(cols["th"])
      parts.append(cols)
      if stored * _BYTES_PER_PAIR > limit:
        for f in pending:
          f.cancel()
        estimate["stopped_after_pairs"] = stored
        raise GECAResourceError(
            f"GECA stopped after {stored:,} pairs: over memory_limit_gb="
            f"{config.memory_limit_gb} (estimate {estimate})", estimate)
  if not parts:
    return _columns(np.zeros((0, 8 + 2 * config.wug_count), np.uint64),
                    config.wug_count, config.window is not None)
  # Column by column, freeing each shard's copy as it is joined.
  return {k: np.concatenate([p.pop(k) for p in parts]) for k in list(parts[0])}


def _intern(h: np.ndarray, check: Optional[np.ndarray], what: str):
  """Dense ids (int32 when they fit) of hash values; a representative row
  of each id."""
  order = np.argsort(h)
  hs = h[order]
  first = np.ones(len(h), bool)
  np.not_equal(hs[1:], hs[:-1], out=first[1:])
  del hs
  if check is not None:
    cs = check[order]
    if np.any(~first[1:] & (cs[1:] != cs[:-1])):
      raise RuntimeError(f"64-bit {what} hash collision; please report")
    del cs
  n = int(first.sum())
  ids = np.empty(len(h), np.int32 if n < 2**31 else np.int64)
  ids[order] = np.cumsum(first) - 1
  return ids, order[first]


def _sorted_unique(keys: np.ndarray) -> np.ndarray:
  """np.unique for one big int64 array (sort + mask; numpy's hash-based
  unique is several times slower here)."""
  keys = np.sort(keys)
  keep = np.ones(len(keys), bool)
  np.not_equal(keys[1:], keys[:-1], out=keep[1:])
  return keys[keep]


def _csr(keys: np.ndarray, n: int, stride: int):
  """(ptr, values) of the sorted unique keys `row * stride + value`."""
  rows, values = keys // stride, keys % stride
  ptr = np.zeros(n + 1, np.int64)
  np.cumsum(np.bincount(rows, minlength=n), out=ptr[1:])
  return ptr, values


def _sub_csr(ptr, values, select):
  """The rows `select` of a CSR, as a new CSR."""
  lens = ptr[select + 1] - ptr[select]
  new_ptr = np.zeros(len(select) + 1, np.int64)
  np.cumsum(lens, out=new_ptr[1:])
  idx = np.repeat(ptr[select] - new_ptr[:-1], lens) + np.arange(new_ptr[-1])
  return new_ptr, values[idx]


def _rows(pairs: Dict[str, np.ndarray], rep: np.ndarray
          ) -> Dict[str, np.ndarray]:
  """Where each template (or fragment) can be rebuilt from: one stored
  pair's sequence and span positions."""
  return {k: pairs[k][rep] for k in _REP}


def _span_hashes(e: _Encoded, rows: Dict[str, np.ndarray], max_size: int):
  """kernel.span_hashes on two threads."""
  from csl_jax.methods.geca import kernel  # pylint: disable=g-import-not-at-top
  n = len(rows["seq"])
  cuts = [0, n // 2, n]
  with concurrent.futures.ThreadPoolExecutor(2) as pool:
    parts = list(pool.map(
        lambda ab: kernel.span_hashes(
            e.tokens, e.offsets, *(rows[k][ab[0]:ab[1]] for k in _REP),
            max_size), zip(cuts[:-1], cuts[1:])))
  return np.concatenate(parts)


@dataclasses.dataclass
class _Index:
  """Algorithm 1's maps, as arrays."""
  trow: Dict[str, np.ndarray]  # template id -> where to rebuild it from
  frow: Dict[str, np.ndarray]  # fragment id -> where to rebuild it from
  frag_spans: np.ndarray    # fragment -> span hashes (0: no span)
  targets: np.ndarray       # two-sided template ids
  target_sig: np.ndarray    # target -> target signature id
  tsig_ptr: np.ndarray      # target signature -> its fragment ids
  tsig_fids: np.ndarray
  tsig_excl: np.ndarray     # target signature -> donor signature less one
  inv_ptr: np.ndarray       # fragment -> donor signatures containing it
  inv_dsig: np.ndarray
  dsig_ptr: np.ndarray      # donor signature -> its fragment ids
  dsig_fids: np.ndarray
  dsig_count: np.ndarray    # donor signature -> number of donor units


def _build_index(e: _Encoded, pairs: Dict[str, np.ndarray],
                 config: GECAConfig, stats: Dict) -> _Index:
  """Builds the index; consumes `pairs` (its big columns are freed)."""
  from csl_jax.methods.geca import kernel  # pylint: disable=g-import-not-at-top
  num_pairs = len(pairs["th"])
  tid, t_rep = _intern(pairs.pop("th"), pairs.pop("th2"), "template")
  fid, f_rep = _intern(pairs.pop("fh"), pairs.pop("fh2"), "fragment")
  nt, nf = len(t_rep), len(f_rep)
  trow, frow = _rows(pairs, t_rep), _rows(pairs, f_rep)
  two = pairs.pop("two")[t_rep]
  uh = pairs.pop("uh", None)
  for k in _REP:
    del pairs[k]
  del t_rep, f_rep
  tf_ptr, tf_fid = _csr(_sorted_unique(tid.astype(np.int64) * nf + fid),
                        nt, nf)
  if config.window is None:
    del tid
    uf_ptr, uf_fid, nu = tf_ptr, tf_fid, nt
  else:
    uid, u_rep = _intern(uh, None, "environment")
    nu = len(u_rep)
    t_uid = np.empty(nt, uid.dtype)  # template -> its environment
    t_uid[tid] = uid
    del tid
    uf_keys = _sorted_unique(uid.astype(np.int64) * nf + fid)
    uf_ptr, uf_fid = _csr(uf_keys, nu, nf)
    del uid, uh
    own_shared = _own_unit_shared(tf_ptr, tf_fid, t_uid, uf_keys, nf)
    del uf_keys
  del fid
  mult = np.diff(uf_ptr)
  donors = np.nonzero(mult > 1)[0]
  d_ptr, d_fid = _sub_csr(uf_ptr, uf_fid, donors)
  dsig_h = kernel.signature_hashes(d_ptr, d_fid)
  _, first, d_sig, dsig_count = np.unique(
      dsig_h, return_index=True, return_inverse=True, return_counts=True)
  dsig_ptr, dsig_fids = _sub_csr(d_ptr, d_fid, first)
  # Inverted index: fragment -> the donor signatures that contain it.
  owner = np.repeat(np.arange(len(first)), np.diff(dsig_ptr))
  order = np.argsort(dsig_fids, kind="stable")
  inv_dsig = owner[order]
  inv_ptr = np.zeros(nf + 1, np.int64)
  np.cumsum(np.bincount(dsig_fids, minlength=nf), out=inv_ptr[1:])
  frag_spans = _span_hashes(e, frow, config.wug_size)
  targets = np.nonzero(two)[0]
  t_ptr, t_fid = _sub_csr(tf_ptr, tf_fid, targets)
  del tf_ptr, tf_fid, uf_ptr, uf_fid
  tsig_h = kernel.signature_hashes(t_ptr, t_fid)
  if config.window is None:
    # env(t) = t offers t's own fragments alone: nothing to leave out.
    _, tfirst, target_sig = np.unique(tsig_h, return_index=True,
                                      return_inverse=True)
    tsig_excl = np.full(len(tfirst), -1, np.int64)
  else:
    # The rule's t'1 != t1: a target's own environment donates to it only
    # where another of its templates shares a fragment with the target;
    # else one unit of that environment's donor signature is left out, so
    # the targets are keyed by (fragment set, signature left out).
    u = t_uid[targets]
    unit_dsig = np.full(nu, -1, np.int64)
    unit_dsig[donors] = d_sig.reshape(-1)
    t_excl = np.where(own_shared[targets], -1, unit_dsig[u])
    del u, unit_dsig, t_uid, own_shared
    _, tfirst, target_sig = np.unique(
        np.stack([tsig_h, t_excl.astype(np.uint64)], axis=1), axis=0,
        return_index=True, return_inverse=True)
    tsig_excl = t_excl[tfirst]
  tsig_ptr, tsig_fids = _sub_csr(t_ptr, t_fid, tfirst)
  stats.update({
      "pairs_indexed": int(num_pairs),
      "templates": int(nt), "fragments": int(nf),
      "units": int(nu), "donor_units": int(len(donors)),
      "donor_signatures": int(len(first)),
      "target_templates": int(len(targets)),
      "target_signatures": int(len(tfirst)),
  })
  return _Index(trow, frow, frag_spans, targets,
                target_sig.reshape(-1), tsig_ptr, tsig_fids, tsig_excl,
                inv_ptr, inv_dsig, dsig_ptr, dsig_fids, dsig_count)


def _own_unit_shared(tf_ptr, tf_fid, t_uid, uf_keys, nf) -> np.ndarray:
  """template -> whether another template of its environment has one of
  its fragments: n(env(t), f) >= 2 for some f in F(t), n(u, f) the number
  of templates of u with f (`uf_keys`: the sorted unit * nf + fragment)."""
  n_t = np.diff(tf_ptr)
  t_of = np.repeat(np.arange(len(n_t)), n_t)
  at = np.searchsorted(uf_keys, t_uid[t_of].astype(np.int64) * nf + tf_fid)
  del t_of
  n_uf = np.bincount(at, minlength=len(uf_keys))
  if not len(at):
    return np.zeros(len(n_t), bool)
  return np.logical_or.reduceat(n_uf[at] > 1, tf_ptr[:-1])


def _decode(e: _Encoded, toks, output_only: bool) -> Tuple[str, str]:
  toks = list(toks)
  words = [e.vocab[t] for t in toks]
  if output_only:
    return "", " ".join(words)
  cut = toks.index(0)
  return " ".join(words[:cut]), " ".join(words[cut + 1:])


def _preview(e: _Encoded, t: Sequence, f: Sequence) -> str:
  """The new pair with the substituted fragment in [brackets]; `t`, `f`:
  where the template and the fragment are rebuilt from (seq, pos, size,
  ns)."""
  from csl_jax.methods.geca import kernel_reference as ref  # pylint: disable=g-import-not-at-top
  templ, _ = ref._replay(e.tokens, e.offsets, *t)  # pylint: disable=protected-access
  _, spans = ref._replay(e.tokens, e.offsets, *f)  # pylint: disable=protected-access
  words = []
  for x in templ:
    if x < 0:
      words.append("[" + " ".join(e.vocab[y] for y in spans[-x - 1]) + "]")
    else:
      words.append(SEP_TEXT if x == 0 else e.vocab[x])
  return " ".join(words)


Rep = Dict[str, np.ndarray]  # seq, pos, size, ns: where to rebuild from


@dataclasses.dataclass
class _Draws:
  """What the seeded draw reads, asked for chunk by chunk: the two-sided
  templates in template-hash order, and the candidate fills of their
  fragment-set signatures."""
  num_targets: int
  # target positions -> (signature keys, where to rebuild the templates)
  targets: Callable[[np.ndarray], Tuple[np.ndarray, Rep]]
  # distinct signature keys -> (ptr, fill ids ascending by fragment hash,
  # weights, candidate positions -> where to rebuild the fragments)
  candidates: Callable[[np.ndarray], Tuple[np.ndarray, np.ndarray,
                                           np.ndarray,
                                           Callable[[np.ndarray], Rep]]]


def _local_draws(index: _Index, config: GECAConfig) -> _Draws:
  from csl_jax.methods.geca import kernel  # pylint: disable=g-import-not-at-top

  def targets(tpos):
    t = index.targets[tpos]
    return index.target_sig[tpos], {k: index.trow[k][t] for k in _REP}

  def candidates(usig):
    s_ptr, s_fid = _sub_csr(index.tsig_ptr, index.tsig_fids, usig)
    ptr, fid, w = kernel.candidates(
        s_ptr, s_fid, index.tsig_excl[usig], index.inv_ptr, index.inv_dsig,
        index.dsig_ptr, index.dsig_fids, index.dsig_count, index.frag_spans,
        config.weighting == "uniform")
    return ptr, fid, w, lambda j: {k: index.frow[k][fid[j]] for k in _REP}

  return _Draws(len(index.targets), targets, candidates)


def _partitioned_draws(e: _Encoded, allowed: np.ndarray, config: GECAConfig,
                       stats: Dict, directory: str, local: str) -> _Draws:
  """The index built by `partitioned`'s joins (on Beam with
  `config.runner`) in `directory` (a URL too); the draw reads the targets
  and candidates it visits from the memory-mapped tables (copied into the
  local directory `local` first where `directory` is a URL), so the driver
  holds the visit order and one chunk, not the index."""
  # pylint: disable=g-import-not-at-top
  from csl_jax.beam import file_urls
  from csl_jax.methods.geca import partitioned
  # pylint: enable=g-import-not-at-top
  ctx = partitioned.Context(e.tokens, e.offsets, allowed, config,
                            config.num_shards, directory)
  partitioned.clear(directory)
  file_urls.make_dirs(directory)
  if config.runner:
    from csl_jax.methods.geca import beam_index  # pylint: disable=g-import-not-at-top
    beam_index.run(ctx, config.runner, config.pipeline_args)
  else:
    partitioned.run_local(ctx)
  counts = partitioned.read_stats(directory)
  stats.update({k: int(counts.get(k, 0)) for k in _INDEX_STATS})
  if file_urls.is_url(directory):
    partitioned.fetch(directory, local)
    directory = local
  targets = partitioned.Written(directory, "targets")
  cand = partitioned.Written(directory, "candidates")

  def target_rows(tpos):
    rows = targets.rows(tpos, ("sig",) + _REP)
    return rows.pop("sig"), rows

  def candidates(usig):
    lo, hi = cand.ranges(usig, "tsig", config.num_shards)
    n = hi - lo
    ptr = np.zeros(len(usig) + 1, np.int64)
    np.cumsum(n, out=ptr[1:])
    rows = np.repeat(lo - ptr[:-1], n) + np.arange(ptr[-1])
    got = cand.rows(rows, ("fh", "w"))
    return ptr, got["fh"], got["w"], lambda j: cand.rows(rows[j], _REP)

  return _Draws(len(targets), target_rows, candidates)


_INDEX_STATS = ("pairs_indexed", "templates", "fragments", "units",
                "donor_units", "donor_signatures", "target_templates",
                "target_signatures")


def _generate(e: _Encoded, draws: _Draws, config: GECAConfig, stats: Dict):
  """Targets in seeded random order, chunk by chunk, until n_sample."""
  from csl_jax.methods.geca import kernel  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(config.seed)
  order = rng.permutation(draws.num_targets)
  want = np.inf if config.n_sample is None else config.n_sample
  accepted_keys = set()
  out_pairs, out_tf, previews = [], [], []
  considered = novel_fail = 0
  chunk, start = 1024, 0
  budget = 4_000_000  # candidate entries per chunk
  while start < len(order) and len(out_pairs) < want:
    tpos = order[start:start + chunk]
    start += len(tpos)
    sig, t = draws.targets(tpos)
    usig, local_sig = np.unique(sig, return_inverse=True)
    c_ptr, c_fid, c_w, fill_rows = draws.candidates(usig)
    # Adapt the chunk so that candidate lists stay within the budget.
    per_target = max(1.0, len(c_fid) / max(1, len(usig)))
    chunk = int(np.clip(budget / per_target, 256, 262144))
    # Draws are needed only up to the largest candidate multiset.
    totals = np.bincount(np.repeat(np.arange(len(usig)), np.diff(c_ptr)),
                         weights=c_w, minlength=len(usig))
    width = config.variants if totals.max(initial=0) > config.variants else 0
    pick = kernel.draw_fills(c_ptr, c_w, local_sig.reshape(-1),
                             config.variants,
                             rng.random((len(tpos), width)))
    rows, cols = np.nonzero(pick >= 0)
    if not len(rows):
      continue
    t_ids = tpos[rows]
    f_ids = c_fid[pick[rows, cols]]
    t = {k: t[k][rows] for k in _REP}
    f = fill_rows(pick[rows, cols])
    flat, ptr, in_h, out_h = kernel.fill_pairs(
        e.tokens, e.offsets, *(t[k] for k in _REP), *(f[k] for k in _REP),
        config.wug_size, config.output_only)
    considered += len(rows)
    novel = ~np.isin(out_h, e.train_out)
    if not config.output_only:
      novel &= ~np.isin(in_h, e.train_in)
    novel_fail += int((~novel).sum())
    key = in_h * np.uint64(0x9E3779B97F4A7C15) + out_h
    for k in np.nonzero(novel)[0]:
      kk = int(key[k])
      if kk in accepted_keys:
        continue
      accepted_keys.add(kk)
      out_pairs.append(_decode(e, flat[ptr[k]:ptr[k + 1]],
                               config.output_only))
      out_tf.append((int(t_ids[k]), int(f_ids[k])))
      if len(previews) < config.preview:
        previews.append(_preview(e, [t[c][k] for c in _REP],
                                 [f[c][k] for c in _REP]))
      if len(out_pairs) >= want:
        break
  stats.update({"targets_visited": int(min(start, len(order))),
                "fills_considered": int(considered),
                "rejected_not_novel": int(novel_fail),
                "preview": previews})
  return out_pairs, out_tf


def augment(pairs: Sequence[Tuple[str, str]], config: GECAConfig,
            seed: Optional[int] = None, work_dir: Optional[str] = None
            ) -> Tuple[List[Tuple[str, str]], Dict]:
  """GECA's new pairs from training pairs.

  Args:
    pairs: (input, output) training pairs (space-separated tokens).
    config: the settings; `seed` overrides `config.seed` when given.
    seed: see config.
    work_dir: with `config.num_shards` > 1, where the partitioned index
      writes its tables (every Beam worker must reach it); None: a
      temporary directory.

  Returns:
    (new pairs in generation order, statistics): the statistics have the
    paper's figures (generated, distinct templates and fragments used),
    index sizes, times, peak RSS and `preview` (the first pairs with the
    substituted fragment in brackets).

  Raises:
    GECAResourceError: the index would exceed `config.memory_limit_gb`.
  """
  if seed is not None:
    config = dataclasses.replace(config, seed=seed)
  if config.wug_size > 127:
    raise InputError("GECA wug_size must be <= 127")
  times = {}
  stats: Dict = {"config": dataclasses.asdict(config)}
  t0 = time.perf_counter()
  train = prepare_pairs(pairs, config)
  e, allowed = _encode(train, config)
  stats["train_pairs"] = len(train)
  stats["sequences_indexed"] = len(e.offsets) - 1
  times["encode"] = time.perf_counter() - t0
  with contextlib.ExitStack() as stack:
    t1 = time.perf_counter()
    if config.num_shards > 1:
      # The draw reads the tables there: they live until it is done.
      local = stack.enter_context(tempfile.TemporaryDirectory())
      draws = _partitioned_draws(e, allowed, config, stats,
                                 work_dir or local, local)
      times["index"] = time.perf_counter() - t1
      empty = stats["pairs_indexed"] == 0
    else:
      stored = _enumerate(e, allowed, config, stats)
      times["enumerate"] = time.perf_counter() - t1
      t1 = time.perf_counter()
      empty = len(stored["th"]) == 0
      if not empty:
        draws = _local_draws(_build_index(e, stored, config, stats), config)
        times["index"] = time.perf_counter() - t1
    if empty:
      stats.update(generated=0, templates_used=0, fragments_used=0,
                   preview=[], seconds=times, peak_rss_gb=_peak_rss_gb())
      return [], stats
    t1 = time.perf_counter()
    new, used = _generate(e, draws, config, stats)
  times["generate"] = time.perf_counter() - t1
  times["total"] = time.perf_counter() - t0
  stats.update({
      "generated": len(new),
      "templates_used": len({t for t, _ in used}),
      "fragments_used": len({f for _, f in used}),
      "seconds": {k: round(v, 3) for k, v in times.items()},
      "peak_rss_gb": round(_peak_rss_gb(), 3),
      "cpu_count": os.cpu_count(),
  })
  return new, stats


def candidate_table(pairs: Sequence[Tuple[str, str]], config: GECAConfig
                    ) -> Dict[Tuple[str, ...], Dict[Tuple[Tuple[str, ...],
                                                        ...], int]]:
  """target template -> {fill: weight}, in `augment_reference`'s notation
  (holes "\\x00WUG<k>", boundary "\\x00SEP"); for small data and tests."""
  from csl_jax.methods.geca import kernel  # pylint: disable=g-import-not-at-top
  from csl_jax.methods.geca import kernel_reference as ref  # pylint: disable=g-import-not-at-top
  train = prepare_pairs(pairs, config)
  e, allowed = _encode(train, config)
  stored = _enumerate(e, allowed, config, {})
  if len(stored["th"]) == 0:
    return {}
  index = _build_index(e, stored, config, {})
  c_ptr, c_fid, c_w = kernel.candidates(
      index.tsig_ptr, index.tsig_fids, index.tsig_excl, index.inv_ptr,
      index.inv_dsig, index.dsig_ptr, index.dsig_fids, index.dsig_count,
      index.frag_spans, config.weighting == "uniform")

  def word(t):
    return f"\x00WUG{-t - 1}" if t < 0 else (
        "\x00SEP" if t == 0 else e.vocab[t])

  def replay(rows, k):
    return ref._replay(e.tokens, e.offsets, rows["seq"][k], rows["pos"][k],  # pylint: disable=protected-access
                       rows["size"][k], rows["ns"][k])

  table = {}
  for k, t in enumerate(index.targets):
    s = index.target_sig[k]
    if c_ptr[s] == c_ptr[s + 1]:
      continue
    templ = tuple(word(x) for x in replay(index.trow, t)[0])
    table[templ] = {
        tuple(tuple(word(x) for x in span)
              for span in replay(index.frow, c_fid[j])[1]): int(c_w[j])
        for j in range(c_ptr[s], c_ptr[s + 1])}
  return table
