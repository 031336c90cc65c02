"""GECA's index as joins of partitioned tables, for Beam or in-process.

The local index (`augment._build_index`) holds every (template, fragment)
pair of the data at once: several GB on COGS without `wug_limit` (BENCHMARKS
"Issue 12 — GECA", rows G7).
Here the same maps are built as a chain of joins, every one keyed by a
hash partition, so that no step needs more than its partition:

  E  sequences (a shard each)  -> (template, fragment) rows by template
  U  environments (window k)   -> donor units; each template's own
                                  environment where it may not donate
                                  to it (the rule's t'1 != t1)
  T  templates                 -> targets (written), target fragment sets,
                                  donor units (window None)
  D  donor signatures          -> unit counts; inverted index fragment -> donor
  S  target signatures         -> their fragments, by fragment (a
                                  signature: a fragment set, and with a
                                  window the donor signature of the own
                                  environment left out, if any)
  J1 fragments                 -> (target signature, donor signature) pairs
  J2 donor signatures          -> weighted fills of each target signature
  C  target signatures         -> candidate table (written): Σ weights,
                                  fills in the set or overlapping all of it
                                  left out (the release's `overlap`)

A stage is a function of one partition: `fn(context, partition, inputs)`
with `inputs` a dict of lists of tables (dicts of equal-length columns);
it returns (name, partition, table) rows for the next stages, and writes
its final tables and statistics into `directory` itself. `run_local` runs
the chain in this process; `beam_index.run` runs the same functions as
`CoGroupByKey`s. Partitions are ranges of the 64-bit hash (upper bits), so
the targets come back in template-hash order: the order of the local
template ids, which the seeded draw (`augment._generate`) depends on. The
draw itself stays sequential on the driver (a seeded order over targets,
stopped at `n_sample`), over arrays the size of the targets and the
candidate table, not of the pairs: the new pairs equal the local ones for
any settings, runner and partition count.
"""

import collections
import concurrent.futures
import dataclasses
import io
import json
import os
import shutil
import tempfile
import threading
from typing import Callable, Dict, Iterable, List, Optional, Tuple

import numpy as np

from csl_jax import files
from csl_jax.beam import file_urls
from csl_jax.methods.geca import augment as augment_lib  # the one build's helpers
from csl_jax.methods.geca.config import GECAConfig

Table = Dict[str, np.ndarray]
Rows = Iterable[Tuple[str, int, Table]]
_REP = augment_lib._REP  # pylint: disable=protected-access


@dataclasses.dataclass
class Context:
  """What every stage may read: the encoded data and the settings."""
  tokens: np.ndarray
  offsets: np.ndarray
  allowed: np.ndarray
  config: GECAConfig
  num_partitions: int
  directory: str


def partition_of(h: np.ndarray, n: int) -> np.ndarray:
  """Range partition of 64-bit hashes: monotone in the hash."""
  return ((h >> np.uint64(32)) * np.uint64(n) >> np.uint64(32)).astype(
      np.int64)


def _take(table: Table, idx) -> Table:
  return {k: v[idx] for k, v in table.items()}


def _concat(tables: List[Table]) -> Optional[Table]:
  tables = [t for t in tables if len(next(iter(t.values())))]
  if not tables:
    return None
  return {k: np.concatenate([t[k] for t in tables]) for k in tables[0]}


def _route(name: str, table: Table, key: str, n: int) -> Rows:
  """The table's rows, split by the partition of column `key`."""
  if not len(table[key]):
    return
  part = partition_of(table[key], n)
  order = np.argsort(part, kind="stable")
  bounds = np.searchsorted(part[order], np.arange(n + 1))
  for p in range(n):
    if bounds[p] < bounds[p + 1]:
      yield name, p, _take(table, order[bounds[p]:bounds[p + 1]])


def _first_of_groups(*keys: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
  """(order sorting by keys, last key most significant, stable; mask of
  each group's first row in that order)."""
  order = np.lexsort(keys)
  return order, _starts(order, keys)


def _starts(order: np.ndarray, keys) -> np.ndarray:
  first = np.ones(len(order), bool)
  if len(order):
    same = np.ones(len(order) - 1, bool)
    for k in keys:
      ks = k[order]
      same &= ks[1:] == ks[:-1]
    first[1:] = ~same
  return first


_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _mix(h: np.ndarray) -> np.ndarray:
  """splitmix64's finalizer, elementwise."""
  h = h ^ (h >> np.uint64(30))
  h = h * _MIX1
  h ^= h >> np.uint64(27)
  h *= _MIX2
  return h ^ (h >> np.uint64(31))


def _distinct(a: np.ndarray, b: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
  """(an order with equal (a, b) rows adjacent; mask of each group's first
  row): one sort of a 64-bit hash of the pair, faster than sorting both
  keys (BENCHMARKS "Issue 16 → GECA's index as partitioned joins, locally
  and on Beam"); where two pairs share that hash it sorts both keys."""
  with np.errstate(over="ignore"):
    h = _mix(_mix(a) + b)
  order = np.argsort(h)
  hs = h[order]
  same_h = hs[1:] == hs[:-1]
  del hs
  first = _starts(order, (a, b))
  if np.any(same_h & first[1:]):  # different pairs, one hash
    return _first_of_groups(b, a)
  return order, first


def _group_ptr(first: np.ndarray) -> np.ndarray:
  starts = np.flatnonzero(first)
  return np.append(starts, len(first)).astype(np.int64)


def _signatures(ptr: np.ndarray, fh: np.ndarray) -> np.ndarray:
  """Hash of each group's set of distinct fragment hashes (the sum of
  their mixes: independent of the rows' order)."""
  if not len(fh):
    return np.zeros(len(ptr) - 1, np.uint64)
  with np.errstate(over="ignore"):
    return _mix(np.add.reduceat(_mix(fh), ptr[:-1]))


def _write_stats(ctx: Context, stage: str, part: int, stats: Dict) -> None:
  file_urls.write_bytes(
      file_urls.join(ctx.directory, f"stats-{stage}-{part:05d}.json"),
      json.dumps(stats, sort_keys=True).encode())


# The final tables' files (`_save`): all a rerun removes of a work_dir, which
# may hold the user's own files.
TABLE_PATTERNS = ("targets-*.npy", "candidates-*.npy")
# The joins' intermediate files, a folder of the run's own name.
FLOW_DIR = "geca_flow.tmp"


def _save(ctx: Context, name: str, part: int, table: Table) -> None:
  """A final table of a partition, a `.npy` file per column (the driver
  memory-maps them: `Written`); nothing for an empty table."""
  if not len(next(iter(table.values()))):
    return
  for col, values in table.items():
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(values), allow_pickle=False)
    file_urls.write_bytes(
        file_urls.join(ctx.directory, f"{name}-{part:05d}.{col}.npy"),
        buf.getvalue())


def _unit_rows(keys: np.ndarray, table: Table, min_size: int
               ) -> Tuple[Table, Table]:
  """Sets of fragments per key: (one copy of the rows of each distinct
  fragment set of at least `min_size` fragments, keyed by its signature
  `sig`; the number of keys with each signature)."""
  order, first = _distinct(keys, table["fh"])
  rows = _take(table, order[first])
  rows["key"] = keys[order[first]]
  rows = _take(rows, np.argsort(rows["key"], kind="stable"))
  ptr = _group_ptr(_starts(np.arange(len(rows["key"])), (rows["key"],)))
  sizes = np.diff(ptr)
  sig = _signatures(ptr, rows["fh"])
  rows["sig"] = np.repeat(sig, sizes)
  big = sizes >= min_size
  sig_order = np.argsort(sig[big], kind="stable")
  sig_first = _starts(sig_order, (sig[big],))
  counts = np.diff(_group_ptr(sig_first))
  keep_sigs = sig[big][sig_order[sig_first]]
  # One copy of each signature's rows: those of its first key.
  first_key = np.zeros(len(sig), bool)
  first_key[np.flatnonzero(big)[sig_order[sig_first]]] = True
  lists = _take(rows, np.repeat(first_key, sizes))
  lists.pop("key")
  return lists, {"sig": keep_sigs, "count": counts.astype(np.int64)}


def stage_e(ctx: Context, index: int, shard: np.ndarray) -> Rows:
  """The (template, fragment) pairs of shard `index` of the sequences."""
  from csl_jax.methods.geca import kernel  # pylint: disable=g-import-not-at-top
  config = ctx.config
  window = -1 if config.window is None else config.window
  rows = kernel.enumerate_pairs(
      ctx.tokens, ctx.offsets, shard, config.wug_size, config.wug_count,
      ctx.allowed, config.wug_limit is not None, window, config.output_only)
  cols = augment_lib._columns(rows, config.wug_count, True)  # pylint: disable=protected-access
  _write_stats(ctx, "E", index, {"pairs_indexed": int(len(rows))})
  del rows
  order, first = _distinct(cols["th"], cols["fh"])
  cols = _take(cols, order[first])
  cols["spans"] = kernel.span_hashes(
      ctx.tokens, ctx.offsets, *(cols[k] for k in _REP), config.wug_size)
  n = ctx.num_partitions
  if config.window is not None:
    yield from _route("uf", {k: cols[k] for k in ("uh", "th", "fh", "spans")
                             + _REP}, "uh", n)
  del cols["uh"]
  yield from _route("tf", cols, "th", n)
  distinct = augment_lib._sorted_unique(cols["fh"])  # pylint: disable=protected-access
  yield from _route("frag", {"fh": distinct}, "fh", n)


def stage_t(ctx: Context, part: int, inputs: Dict[str, List[Table]]) -> Rows:
  """Templates: targets (written), their fragment sets, donor units."""
  tf = _concat(inputs.get("tf", []))
  if tf is None:
    _write_stats(ctx, "T", part, {})
    return
  order, first = _distinct(tf["th"], tf["fh"])
  fh2 = tf["fh2"][order]
  if np.any(~first[1:] & (fh2[1:] != fh2[:-1])):
    raise RuntimeError("64-bit fragment hash collision; please report")
  tf = _take(tf, order[first])
  tf = _take(tf, np.argsort(tf["th"], kind="stable"))
  ptr = _group_ptr(_starts(np.arange(len(tf["th"])), (tf["th"],)))
  th2 = tf["th2"]
  if np.any(np.repeat(th2[ptr[:-1]], np.diff(ptr)) != th2):
    raise RuntimeError("64-bit template hash collision; please report")
  sizes = np.diff(ptr)
  # The donor signature of the own environment left out (0: none).
  excl = np.zeros(len(sizes), np.uint64)
  own = _concat(inputs.get("own", []))
  if own is not None:
    excl[np.searchsorted(tf["th"][ptr[:-1]], own["th"])] = own["excl"]
  sig = _target_keys(_signatures(ptr, tf["fh"]), excl)
  two = tf["two"][ptr[:-1]]
  rep = _take(tf, ptr[:-1])
  targets = {"th": tf["th"][ptr[:-1]][two], "sig": sig[two],
             **{k: rep[k][two] for k in _REP}}
  _save(ctx, "targets", part, targets)
  # Each distinct target signature's fragment rows, once per partition.
  _, one = np.unique(sig[two], return_index=True)
  chosen = np.zeros(len(sizes), bool)
  chosen[np.flatnonzero(two)[one]] = True
  rows = np.repeat(chosen, sizes)
  lists = {"fh": tf["fh"][rows], "spans": tf["spans"][rows],
           "sig": np.repeat(sig, sizes)[rows],
           "excl": np.repeat(excl, sizes)[rows]}
  yield from _route("tsig", lists, "sig", ctx.num_partitions)
  stats = {"templates": int(len(sizes)),
           "target_templates": int(two.sum())}
  if ctx.config.window is None:
    yield from _donors(ctx, tf["th"], tf)
    stats["units"] = stats["templates"]
  _write_stats(ctx, "T", part, stats)


def _target_keys(sig: np.ndarray, excl: np.ndarray) -> np.ndarray:
  """A target's signature: its fragment set's, mixed with the donor
  signature left out where there is one."""
  with np.errstate(over="ignore"):
    return np.where(excl == 0, sig, _mix(_mix(sig) + excl))


def _own_units(uf: Table) -> Table:
  """(th, excl) of each template whose environment may not donate to it:
  no other template there has one of its fragments (the paper's rule: f1
  in t1 and in t'1, t'1 != t1), though the environment is a donor unit
  (two or more fragments); excl is that unit's donor signature."""
  order, first = _distinct(uf["th"], uf["fh"])
  rows = {k: uf[k][order[first]] for k in ("uh", "th", "fh")}
  # n(u, f): the number of templates of environment u with fragment f.
  order, first = _distinct(rows["uh"], rows["fh"])
  ptr = _group_ptr(first)
  n_uf = np.empty(len(order), np.int64)
  n_uf[order] = np.repeat(np.diff(ptr), np.diff(ptr))
  # Each unit's fragment set and its signature (as `_unit_rows`).
  unit_fh = rows["fh"][order[first]]
  unit = rows["uh"][order[first]]
  by_unit = np.argsort(unit, kind="stable")
  u_ptr = _group_ptr(_starts(by_unit, (unit,)))
  u_sig = _signatures(u_ptr, unit_fh[by_unit])
  u_size = np.diff(u_ptr)
  u_keys = unit[by_unit][u_ptr[:-1]]
  # Per template: shared with another template of its environment or not.
  th, t_inv = np.unique(rows["th"], return_inverse=True)
  shared = np.bincount(t_inv.reshape(-1), weights=n_uf > 1,
                       minlength=len(th)) > 0
  t_unit = np.empty(len(th), np.uint64)
  t_unit[t_inv.reshape(-1)] = rows["uh"]
  at = np.searchsorted(u_keys, t_unit)
  leave = ~shared & (u_size[at] > 1)
  return {"th": th[leave], "excl": u_sig[at][leave]}


def _donors(ctx: Context, keys: np.ndarray, table: Table) -> Rows:
  lists, counts = _unit_rows(keys, {k: table[k] for k in ("fh", "spans") +
                                    _REP}, 2)
  n = ctx.num_partitions
  yield from _route("dlist", lists, "sig", n)
  yield from _route("dcount", counts, "sig", n)


def stage_u(ctx: Context, part: int, inputs: Dict[str, List[Table]]) -> Rows:
  """Environments (window k): donor units."""
  uf = _concat(inputs.get("uf", []))
  if uf is None:
    _write_stats(ctx, "U", part, {})
    return
  yield from _donors(ctx, uf["uh"], uf)
  yield from _route("own", _own_units(uf), "th", ctx.num_partitions)
  _write_stats(ctx, "U", part, {"units": int(len(np.unique(uf["uh"])))})


def _dedup_lists(lists: Table) -> Table:
  """One copy of each (signature, fragment) row."""
  order, first = _distinct(lists["sig"], lists["fh"])
  return _take(lists, order[first])


def stage_d(ctx: Context, part: int, inputs: Dict[str, List[Table]]) -> Rows:
  """Donor signatures: unit counts, the inverted index."""
  counts = _concat(inputs.get("dcount", []))
  lists = _concat(inputs.get("dlist", []))
  if counts is None:
    _write_stats(ctx, "D", part, {})
    return
  sig, inv = np.unique(counts["sig"], return_inverse=True)
  total = np.bincount(inv.reshape(-1), weights=counts["count"],
                      minlength=len(sig)).astype(np.int64)
  lists = _dedup_lists(lists)
  lists["count"] = total[np.searchsorted(sig, lists["sig"])]
  n = ctx.num_partitions
  yield from _route("inv", {"fh": lists["fh"], "dsig": lists["sig"]}, "fh", n)
  yield "dtable", part, lists
  _write_stats(ctx, "D", part, {"donor_units": int(total.sum()),
                                "donor_signatures": int(len(sig))})


def stage_s(ctx: Context, part: int, inputs: Dict[str, List[Table]]) -> Rows:
  """Target signatures: their fragments, by fragment."""
  lists = _concat(inputs.get("tsig", []))
  if lists is None:
    _write_stats(ctx, "S", part, {})
    return
  lists = _dedup_lists(lists)
  yield from _route("q", {"fh": lists["fh"], "tsig": lists["sig"],
                          "excl": lists.pop("excl")}, "fh",
                    ctx.num_partitions)
  yield "tlist", part, lists
  _write_stats(ctx, "S", part,
               {"target_signatures": int(len(np.unique(lists["sig"])))})


def _join(left: np.ndarray, right: np.ndarray) -> Tuple[np.ndarray,
                                                         np.ndarray]:
  """Index pairs (i, j) with left[i] == right[j]."""
  order = np.argsort(right, kind="stable")
  rs = right[order]
  lo = np.searchsorted(rs, left, "left")
  hi = np.searchsorted(rs, left, "right")
  n = hi - lo
  i = np.repeat(np.arange(len(left)), n)
  start = np.repeat(lo - np.cumsum(n) + n, n)
  j = order[start + np.arange(len(i))]
  return i, j


def stage_j1(ctx: Context, part: int, inputs: Dict[str, List[Table]]) -> Rows:
  """Fragments: each target signature meets the donors sharing one."""
  frag = _concat(inputs.get("frag", []))
  distinct = (np.zeros(0, np.uint64) if frag is None else
              augment_lib._sorted_unique(frag["fh"]))  # pylint: disable=protected-access
  _write_stats(ctx, "J1", part, {"fragments": int(len(distinct))})
  inv, q = _concat(inputs.get("inv", [])), _concat(inputs.get("q", []))
  if inv is None or q is None:
    return
  i, j = _join(q["fh"], inv["fh"])
  pairs = {"tsig": q["tsig"][i], "dsig": inv["dsig"][j],
           "excl": q["excl"][i]}
  order, first = _distinct(pairs["tsig"], pairs["dsig"])
  yield from _route("pairs", _take(pairs, order[first]), "dsig",
                    ctx.num_partitions)


def stage_j2(ctx: Context, part: int, inputs: Dict[str, List[Table]]) -> Rows:
  """Donor signatures: their fragments offered to each target signature."""
  pairs, dtable = (_concat(inputs.get("pairs", [])),
                   _concat(inputs.get("dtable", [])))
  if pairs is None or dtable is None:
    return
  order, first = _distinct(pairs["tsig"], pairs["dsig"])
  pairs = _take(pairs, order[first])
  i, j = _join(pairs["dsig"], dtable["sig"])
  # Less the target signature's own environment where it is left out.
  w = dtable["count"][j] - (pairs["excl"][i] == pairs["dsig"][i])
  i, j, w = i[w > 0], j[w > 0], w[w > 0]
  offer = {"tsig": pairs["tsig"][i], "fh": dtable["fh"][j],
           "w": w, "spans": dtable["spans"][j],
           **{k: dtable[k][j] for k in _REP}}
  yield from _route("offer", offer, "tsig", ctx.num_partitions)


def stage_c(ctx: Context, part: int, inputs: Dict[str, List[Table]]) -> Rows:
  """Target signatures: the candidate table (written)."""
  offer, tlist = (_concat(inputs.get("offer", [])),
                  _concat(inputs.get("tlist", [])))
  if offer is None or tlist is None:
    return
  order, first = _distinct(offer["tsig"], offer["fh"])
  ptr = _group_ptr(first)
  weights = np.add.reduceat(offer["w"][order], ptr[:-1]) if len(order) else (
      np.zeros(0, np.int64))
  cand = _take(offer, order[first])
  cand["w"] = weights.astype(np.int64)
  # Left out: fills in the target's set, or sharing a span with every one.
  i, j = _join(cand["tsig"], tlist["sig"])
  same = cand["fh"][i] == tlist["fh"][j]
  a, b = cand["spans"][i], tlist["spans"][j]
  share = np.zeros(len(i), bool)
  for p in range(a.shape[1]):
    for r in range(b.shape[1]):
      share |= (a[:, p] != 0) & (a[:, p] == b[:, r])
  in_set = np.bincount(i[same], minlength=len(cand["fh"])) > 0
  misses = np.bincount(i[~share], minlength=len(cand["fh"]))
  keep = ~in_set & (misses > 0)
  cand = _take(cand, keep)
  del cand["spans"]
  if ctx.config.weighting == "uniform":
    cand["w"] = np.ones(len(cand["w"]), np.int64)
  order, _ = _first_of_groups(cand["fh"], cand["tsig"])
  _save(ctx, "candidates", part, _take(cand, order))
  yield from ()  # the last stage: its table is written, nothing flows on


STAGES: Tuple[Tuple[str, Callable, Tuple[str, ...]], ...] = (
    ("U", stage_u, ("uf",)),
    ("T", stage_t, ("tf", "own")),
    ("D", stage_d, ("dcount", "dlist")),
    ("S", stage_s, ("tsig",)),
    ("J1", stage_j1, ("inv", "q", "frag")),
    ("J2", stage_j2, ("pairs", "dtable")),
    ("C", stage_c, ("offer", "tlist")),
)


def shards_of(num_sequences: int, num_partitions: int) -> List[np.ndarray]:
  """The sequence shards of stage E (about 4 per partition)."""
  n = max(1, 4 * num_partitions)
  bounds = [num_sequences * s // n for s in range(n + 1)]
  return [np.arange(bounds[s], bounds[s + 1]) for s in range(n)
          if bounds[s] < bounds[s + 1]]


def run_local(ctx: Context) -> None:
  """The stages in this process, partition by partition. What flows
  between stages waits in local array files (`directory`/FLOW_DIR, or a
  temporary directory where `directory` is a URL), so memory holds one
  shard or one partition of one stage at a time, not the whole index."""
  flow = (tempfile.mkdtemp(prefix="geca-flow") if file_urls.is_url(
      ctx.directory) else os.path.join(ctx.directory, FLOW_DIR))
  os.makedirs(flow, exist_ok=True)
  files_of: Dict[str, Dict[int, List[str]]] = collections.defaultdict(
      lambda: collections.defaultdict(list))
  buffered: Dict[Tuple[str, int], List[Table]] = collections.defaultdict(list)
  size = [0]

  def flush():
    for (name, p), tables in buffered.items():
      path = os.path.join(flow, f"{name}-{p:05d}-{len(files_of[name][p])}.npz")
      np.savez(path, **_concat(tables))
      files_of[name][p].append(path)
    buffered.clear()
    size[0] = 0

  def put(rows: Rows):
    with lock:
      for name, p, table in rows:
        buffered[name, p].append(table)
        size[0] += sum(v.nbytes for v in table.values())
        if size[0] > _FLOW_BUFFER_BYTES:
          flush()

  lock = threading.Lock()  # workers take while the main thread puts

  def take(name: str, p: int) -> List[Table]:
    tables = []
    with lock:
      paths = files_of[name].pop(p, [])
      tables = buffered.pop((name, p), [])
    for path in paths:
      with np.load(path, allow_pickle=False) as z:
        tables.append({k: z[k] for k in z.files})
      os.remove(path)
    return tables

  # Two threads (the kernels and numpy's sorts release the GIL); results
  # are put in order.
  try:
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
      shards = shards_of(len(ctx.offsets) - 1, ctx.num_partitions)
      for rows in pool.map(lambda ks: list(stage_e(ctx, *ks)),
                           enumerate(shards)):
        put(rows)
      for _, fn, names in STAGES:
        with lock:
          flush()
        parts = sorted({p for n in names for p in files_of[n]})
        for rows in pool.map(
            lambda p, fn=fn, names=names: list(
                fn(ctx, p, {n: take(n, p) for n in names})), parts):
          put(rows)
  finally:
    shutil.rmtree(flow, ignore_errors=True)


# What waits in memory between stages before it goes to files (run_local).
_FLOW_BUFFER_BYTES = 256 << 20


class Written:
  """A final table as its partitions wrote it, memory-mapped: rows are read
  from disk only when asked for."""

  def __init__(self, directory: str, name: str):
    cols = collections.defaultdict(dict)
    for f in os.listdir(directory):
      if f.startswith(name + "-") and f.endswith(".npy"):
        part, col = f[len(name) + 1:-4].split(".", 1)
        cols[int(part)][col] = np.load(os.path.join(directory, f),
                                       mmap_mode="r", allow_pickle=False)
    self.partitions = sorted(cols)
    self.parts = [cols[p] for p in self.partitions]
    sizes = [len(next(iter(t.values()))) for t in self.parts]
    self.starts = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=self.starts[1:])

  def __len__(self) -> int:
    return int(self.starts[-1])

  def rows(self, idx: np.ndarray, columns: Iterable[str]) -> Table:
    """Rows `idx` (over the partitions in order) of the given columns."""
    idx = np.asarray(idx, np.int64)
    which = np.searchsorted(self.starts, idx, "right") - 1
    out = {}
    for col in columns:
      first = self.parts[0][col] if self.parts else np.zeros(0)
      values = np.empty((len(idx),) + first.shape[1:], first.dtype)
      for k in np.unique(which):
        sel = which == k
        values[sel] = self.parts[k][col][idx[sel] - self.starts[k]]
      out[col] = values
    return out

  def ranges(self, keys: np.ndarray, column: str, num_partitions: int
             ) -> Tuple[np.ndarray, np.ndarray]:
    """For each key, the [lo, hi) rows whose sorted `column` equals it; the
    partitions are ranges of the key's hash (`partition_of`)."""
    lo = np.zeros(len(keys), np.int64)
    hi = np.zeros(len(keys), np.int64)
    want = partition_of(keys, num_partitions)
    for k, p in enumerate(self.partitions):
      sel = want == p
      if sel.any():
        col = self.parts[k][column]
        lo[sel] = np.searchsorted(col, keys[sel], "left") + self.starts[k]
        hi[sel] = np.searchsorted(col, keys[sel], "right") + self.starts[k]
    return lo, hi


def read_stats(directory: str) -> Dict[str, int]:
  """The stages' statistics, summed over partitions."""
  stats: Dict[str, int] = collections.Counter()
  for path in file_urls.matching(directory, "stats-*.json"):
    stats.update(json.loads(file_urls.read_bytes(path)))
  return dict(stats)


def clear(directory: str) -> None:
  """Removes an earlier run's tables and flow (a rerun starts from
  nothing); nothing else there."""
  for pattern in TABLE_PATTERNS + ("stats-*.json",):
    file_urls.delete(file_urls.matching(directory, pattern))
  flow = os.path.join(directory, FLOW_DIR)
  if not file_urls.is_url(directory) and os.path.isdir(flow):
    shutil.rmtree(flow)


def fetch(directory: str, local: str) -> None:
  """Copies the final tables of a URL directory into `local` (the driver
  memory-maps them from there)."""
  for path in (p for pattern in TABLE_PATTERNS
               for p in file_urls.matching(directory, pattern)):
    name = path.rstrip("/").rsplit("/", 1)[-1]
    files.atomic_write_bytes(os.path.join(local, name),
                             file_urls.read_bytes(path))
