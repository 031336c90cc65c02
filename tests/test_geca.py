"""Tests for GECA (csl_jax.methods.geca): the paper's toy examples, the
Numba kernels against their pure-Python twins, the whole algorithm against
the literal reference, a SCAN-like validity check and the pipeline adapter.
No network, no shared data."""

import collections
import dataclasses
import json
import os

import gin
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import numpy as np
import pytest

from csl_jax.data import scan
from csl_jax.data.tsv import read_tsv, write_tsv
from csl_jax.errors import InputError
from csl_jax.methods import base
from csl_jax.methods.geca import augment as augment_lib
from csl_jax.methods.geca import augment_reference
from csl_jax.methods.geca import kernel
from csl_jax.methods.geca import kernel_reference
from csl_jax.methods.geca import stats as stats_lib
from csl_jax.methods.geca.config import GECAConfig
from csl_jax.pipeline import cache

ALL = dict(n_sample=None, variants=10**6)  # every candidate, no sampling

SPANISH = [("I sing", "Canto"),
           ("I sing maravillosamente", "Canto maravillosamente"),
           ("I dax maravillosamente", "Dajo maravillosamente")]


@pytest.mark.parametrize("wug_size", [1, 4])
def test_g1_paper_example_4(wug_size):
  config = GECAConfig(wug_size=wug_size, wug_count=2, **ALL)
  new, stats = augment_lib.augment(SPANISH, config)
  assert new == [("I dax", "Dajo")]
  assert stats["preview"] == ["I [dax] ▷ [Dajo]"]
  assert stats["templates_used"] == 1 and stats["fragments_used"] == 1


def test_preview_of_a_pair_longer_than_127_tokens():
  # The preview replays spans from the stored int8/int16 columns: at token
  # 128 and on, `pos + size` in int8 wrapped (an endless loop).
  tail = " " + " ".join(f"p{k}" for k in range(130))
  pairs = [(x, y + tail) for x, y in SPANISH]
  new, stats = augment_lib.augment(pairs, GECAConfig(wug_size=1, **ALL))
  assert new == [("I dax", "Dajo" + tail)]
  assert stats["preview"][0].startswith("I [dax] ▷ [Dajo] p0 p1")


def test_g1_one_span_generates_nothing():
  new, stats = augment_lib.augment(
      SPANISH, GECAConfig(wug_size=1, wug_count=1, **ALL))
  assert new == [] and stats["generated"] == 0


@pytest.mark.parametrize("window", [None, 1, 2])
def test_g2_toy_language_model(window):
  lm = [("", "The cat sang"), ("", "The wug sang"), ("", "The cat daxed")]
  config = GECAConfig(wug_size=2, wug_count=1, window=window,
                      output_only=True, **ALL)
  new, _ = augment_lib.augment(lm, config)
  assert ("", "The wug daxed") in new
  assert ("", "The sang daxed") not in new
  assert new == augment_reference.augment(lm, config)[0]


# ---- kernels vs their twins -------------------------------------------------

def _encode(pairs, config):
  return augment_lib._encode(augment_lib.prepare_pairs(pairs, config), config)  # pylint: disable=protected-access


words = st.sampled_from(list("abcde"))
outs = st.sampled_from(["A", "B", "C", "a", "D"])
pair_lists = st.lists(
    st.tuples(st.lists(words, min_size=1, max_size=4).map(" ".join),
              st.lists(outs, min_size=1, max_size=4).map(" ".join)),
    min_size=1, max_size=7)
configs = st.builds(
    GECAConfig, wug_size=st.integers(1, 2), wug_count=st.integers(1, 3),
    wug_limit=st.sampled_from([None, 1, 3]),
    window=st.sampled_from([None, 0, 1]),
    max_len=st.sampled_from([None, 7]), dedup=st.booleans(),
    weighting=st.sampled_from(["official", "uniform"]),
    n_sample=st.just(None), variants=st.just(10**6))
# The kernels' own test draws the language-model mode (outputs alone) too.
kernel_configs = st.tuples(configs, st.booleans()).map(
    lambda c: dataclasses.replace(c[0], output_only=c[1]))
_SETTINGS = settings(max_examples=40, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])


def _sorted_rows(rows):
  fixed = rows[:, :kernel.NUM_FIXED_COLS]
  return fixed[np.lexsort(fixed.T[::-1])]


@_SETTINGS
@given(pair_lists, kernel_configs)
def test_kernels_match_twins(pairs, config):
  e, allowed = _encode(pairs, config)
  t, o = e.tokens, e.offsets
  for fn in ("sequence_hashes",):
    np.testing.assert_array_equal(getattr(kernel, fn)(t, o),
                                  getattr(kernel_reference, fn)(t, o))
  np.testing.assert_array_equal(
      np.sort(kernel.ngram_hashes(t, o, config.wug_size)),
      np.sort(kernel_reference.ngram_hashes(t, o, config.wug_size)))
  seqs = np.arange(len(o) - 1)
  args = (seqs, config.wug_size, config.wug_count, allowed,
          config.wug_limit is not None,
          -1 if config.window is None else config.window, config.output_only)
  rows = kernel.enumerate_pairs(t, o, *args)
  twin = kernel_reference.enumerate_pairs(t, o, *args)
  np.testing.assert_array_equal(_sorted_rows(rows), _sorted_rows(twin))
  if not len(rows):
    return
  cols = augment_lib._columns(rows, config.wug_count, True)  # pylint: disable=protected-access
  span_args = (t, o, cols["seq"], cols["pos"], cols["size"], cols["ns"],
               config.wug_size)
  np.testing.assert_array_equal(kernel.span_hashes(*span_args),
                                kernel_reference.span_hashes(*span_args))
  index = augment_lib._build_index(e, dict(cols), config, {})  # pylint: disable=protected-access
  np.testing.assert_array_equal(
      kernel.signature_hashes(index.tsig_ptr, index.tsig_fids),
      kernel_reference.signature_hashes(index.tsig_ptr, index.tsig_fids))
  cand_args = (index.tsig_ptr, index.tsig_fids, index.tsig_excl,
               index.inv_ptr, index.inv_dsig, index.dsig_ptr,
               index.dsig_fids, index.dsig_count, index.frag_spans,
               config.weighting == "uniform")
  got, want = kernel.candidates(*cand_args), kernel_reference.candidates(
      *cand_args)
  for a, b in zip(got, want):
    np.testing.assert_array_equal(a, b)
  c_ptr, c_fid, c_w = got
  uniforms = np.random.default_rng(0).random((len(index.targets), 2))
  np.testing.assert_array_equal(
      kernel.draw_fills(c_ptr, c_w, index.target_sig, 2, uniforms),
      kernel_reference.draw_fills(c_ptr, c_w, index.target_sig, 2, uniforms))
  if not len(c_fid):
    return
  tr = index.targets
  fr = c_fid[np.arange(len(tr)) % len(c_fid)]
  # Pair each target with some candidate of the same hole count.
  ok = index.trow["ns"][tr] == index.frow["ns"][fr]
  tr, fr = tr[ok], fr[ok]
  t_rows, f_rows = index.trow, index.frow
  fill_args = (t, o) + tuple(t_rows[k][tr] for k in ("seq", "pos", "size",
                                                     "ns")) + tuple(
      f_rows[k][fr] for k in ("seq", "pos", "size", "ns")) + (
          config.wug_size, config.output_only)
  for a, b in zip(kernel.fill_pairs(*fill_args),
                  kernel_reference.fill_pairs(*fill_args)):
    np.testing.assert_array_equal(a, b)


@_SETTINGS
@given(pair_lists, configs)
def test_augment_matches_reference(pairs, config):
  new, stats = augment_lib.augment(pairs, config)
  want, table = augment_reference.augment(pairs, config)
  assert sorted(new) == want
  assert len(set(new)) == len(new) == stats["generated"]
  if config.weighting == "uniform":
    table = {t: {f: 1 for f in fills} for t, fills in table.items()}
  assert augment_lib.candidate_table(pairs, config) == table


# ---- windowed environments: the boxed rule's t'1 != t1 ----------------------
# The rule (§3): w = t1/f1, x = t'1/f1, y = t2/f2, env(w, t1) = env(y, t2),
# t'1 != t1 give z = t'1/f2. With a window, env(t1) may be the target's own
# environment: it donates only through another template t1 != t'1 there.


def _windowed_all_ways(pairs, config):
  """The new pairs of the one build, the partitioned index and the twin,
  checked equal."""
  new = augment_lib.augment(pairs, config)[0]
  assert sorted(new) == augment_reference.augment(pairs, config)[0]
  assert augment_lib.augment(
      pairs, dataclasses.replace(config, num_shards=2))[0] == new
  return sorted(new)


def test_window_own_environment_alone_generates_nothing():
  # Fragments (1 token, 1 span) with their templates, window 1:
  #   a: x _ y p   b: x _ y q   (one environment x _ y, two templates)
  #   p: x a y _   q: x b y _   (one environment y _ END, two templates)
  #   x, y: _ a y p, x a _ p, ... (environments of one fragment each)
  # Every fragment has exactly one template, so no t'1 != t1 exists.
  # (Before the fix: x a y q and x b y p, each from its own environment.)
  config = GECAConfig(wug_size=1, wug_count=1, window=1, output_only=True,
                      **ALL)
  assert _windowed_all_ways([("", "x a y p"), ("", "x b y q")], config) == []


def test_window_own_environment_alone_conditional():
  # The same with input and output (1x2 spans: a ... A, b ... B, etc.): each
  # fragment again has one template; before the fix 4 pairs.
  config = GECAConfig(wug_size=1, wug_count=2, window=1, **ALL)
  pairs = [("x a y p", "A z P"), ("x b y q", "B z Q")]
  assert _windowed_all_ways(pairs, config) == []


@pytest.mark.parametrize("lines, want", [
    # Templates (window 1; fragment: template, environment):
    #   x a y: a: x _ y (x _ y)     x: _ a y (| _ a)   y: x a _ (a _ |)
    #   x b y: b: x _ y (x _ y)     x: _ b y (| _ b)   y: x b _ (b _ |)
    #   z a:   a: z _   (z _ |)     z: _ a   (| _ a)
    # * t'1 = z _ (a): t1 = x _ y != t'1 has a; its environment x _ y
    #   (t2 = x _ y) has b -> z b (whole-template mode finds it too);
    # * t'1 = _ b y (x): t1 = _ a y has x; env | _ a is also that of
    #   t2 = _ a with z -> z b y (windowed only: t1 != t2);
    # * not: z a y (t'1 = _ a y, x; x's other template _ b y has env
    #   | _ b with x alone), x a (t'1 = _ a, z: z has one template).
    (["x a y", "x b y", "z a"], ["z b", "z b y"]),
    #   c a d e: a: c _ d e (c _ d)   e: c a d _ (d _ |)
    #   c a d f: a: c _ d f (c _ d)   f: c a d _ (d _ |)
    #   c b d g: b: c _ d g (c _ d)   g: c b d _ (d _ |)
    #   (c, d: environments of the fragment c, or d, alone)
    # * t'1 = c _ d e (a): t1 = c _ d f != t'1 has a, in t'1's own
    #   environment c _ d, which has b (t2 = c _ d g) -> c b d e; and so
    #   c b d f;
    # * not: c a d g (t'1 = c _ d g: b has one template; t'1 = c a d _:
    #   e and f have one template each), c b d e from c b d _ (g: one).
    (["c a d e", "c a d f", "c b d g"], ["c b d e", "c b d f"]),
])
def test_window_rule_generates(lines, want):
  config = GECAConfig(wug_size=1, wug_count=1, window=1, output_only=True,
                      **ALL)
  assert _windowed_all_ways([("", x) for x in lines], config) == [
      ("", x) for x in want]


def _boxed_rule_table(pairs, config):
  """The rule read literally over all template pairs (slow): target t'1
  takes f2 from env(t1) for every t1 != t'1 sharing a fragment f1 with it
  (weight: the distinct environments), less the release's overlap."""
  ref = augment_reference
  t2f = ref.index(ref.prepare(pairs, config), config)
  env = {t: ref.environment(t, config.window) for t in t2f}
  fills_of = collections.defaultdict(set)
  for t2, frags in t2f.items():
    fills_of[env[t2]] |= frags
  table = {}
  for t, frags in t2f.items():
    if not ref.two_sided(t, config.output_only):
      continue
    units = {env[t1] for t1, f1 in t2f.items() if t1 != t and f1 & frags}
    weights = collections.Counter(
        f2 for u in units for f2 in fills_of[u]
        if not ref.overlaps(f2, frozenset(frags)))
    if weights:
      table[t] = dict(weights)
  return table


# Few words and short lines: shared environments are common.
dense_pairs = st.lists(
    st.tuples(st.lists(st.sampled_from(list("abc")), min_size=1,
                       max_size=4).map(" ".join),
              st.lists(st.sampled_from(list("ABa")), min_size=1,
                       max_size=4).map(" ".join)),
    min_size=2, max_size=7)
window_configs = st.builds(
    GECAConfig, wug_size=st.integers(1, 2), wug_count=st.integers(1, 2),
    window=st.sampled_from([0, 1, 2]), output_only=st.booleans(),
    weighting=st.sampled_from(["official", "uniform"]),
    n_sample=st.just(None), variants=st.just(10**6))


@_SETTINGS
@given(dense_pairs, window_configs)
def test_window_kernel_and_twin_are_the_boxed_rule(pairs, config):
  table = _boxed_rule_table(pairs, config)
  _, twin = augment_reference.augment(pairs, config)
  assert twin == table
  if config.weighting == "uniform":
    table = {t: {f: 1 for f in fills} for t, fills in table.items()}
  assert augment_lib.candidate_table(pairs, config) == table
  new, _ = augment_lib.augment(pairs, config)
  assert sorted(new) == augment_reference.augment(pairs, config)[0]


@_SETTINGS
@given(pair_lists, st.integers(0, 3), st.integers(1, 3))
def test_cap_and_variants_give_a_seeded_subset(pairs, seed, variants):
  base_config = GECAConfig(wug_size=1, wug_count=2, **ALL)
  everything = set(augment_lib.augment(pairs, base_config)[0])
  config = GECAConfig(wug_size=1, wug_count=2, n_sample=3,
                      variants=variants, seed=seed)
  new, _ = augment_lib.augment(pairs, config)
  assert set(new) <= everything and len(new) <= 3
  assert new == augment_lib.augment(pairs, config)[0]  # seeded


def test_release_holdout_order():
  pairs = [(f"w{k}", f"W{k}") for k in range(20)]
  order = list(range(20))
  np.random.seed(3)  # the release: np.random.seed(seed); shuffle(train)
  np.random.shuffle(order)
  config = GECAConfig(holdout=5, seed=3, dedup=False)
  assert augment_lib.prepare_pairs(pairs, config) == [pairs[k]
                                                      for k in order[5:]]


# ---- SCAN-like data -------------------------------------------------------

def test_scan_like_pairs_are_valid():
  # One-clause commands, `jump` only alone (an addprim_jump in miniature).
  commands = [c for c in scan.all_commands()
              if " and " not in c and " after " not in c
              and ("jump" not in c or c == "jump")]
  train = [(c, scan.interpret(c)) for c in commands]
  config = GECAConfig(wug_size=1, wug_count=2, max_len=40, n_sample=None)
  new, stats = augment_lib.augment(train, config)
  assert new and stats["fragments_used"] >= 1
  for inp, out in new:
    assert scan.is_valid_command(inp) and scan.interpret(inp) == out
  assert sum("jump" in inp for inp, _ in new) >= 0.9 * len(new)
  overlap = stats_lib.overlap_stats(
      train, new, [(c, scan.interpret(c)) for c in scan.all_commands()
                   if "jump" in c and c != "jump" and " and " not in c
                   and " after " not in c])
  assert overlap["full_overlap_before"] == 0
  assert overlap["full_overlap_after"] > 0
  assert overlap["cooccurrence_after"] > overlap["cooccurrence_before"]


# ---- errors, resources, pipeline -------------------------------------------

def test_bad_settings_are_input_errors():
  with pytest.raises(InputError):
    GECAConfig(weighting="frequency")
  with pytest.raises(InputError):
    GECAConfig(wug_size=0)
  # A gin binding of the wrong type: one line, not a kernel's traceback.
  with pytest.raises(InputError, match="wug_size must be of type int, got "
                     "'4'"):
    GECAConfig(wug_size="4")
  with pytest.raises(InputError, match="window must be of type int or None"):
    GECAConfig(window=1.5)
  with pytest.raises(InputError, match="memory_limit_gb must be > 0"):
    GECAConfig(memory_limit_gb=float("nan"))
  # Span positions are int16: a longer sequence is refused, not misread.
  long_pair = [("a " * 40000, "b")] + SPANISH
  with pytest.raises(InputError, match="at most 32,767 tokens .* 40,002"):
    augment_lib.augment(long_pair, GECAConfig(wug_size=1))


def test_nothing_generated_is_a_run_with_zero_pairs(tmp_path, clear_gin):
  # One wug: no fragment has a donor elsewhere (G1), so GECA makes nothing;
  # the run reports 0 pairs instead of failing on its empty synthetic.tsv.
  from csl_jax.cli import main as cli  # pylint: disable=g-import-not-at-top
  del clear_gin
  data = tmp_path / "data"
  data.mkdir()
  write_tsv(str(data / "train.tsv"), SPANISH)
  out = str(tmp_path / "run")
  assert cli.main(["augment", "--out", out, "--dataset", "tsv", "--data_dir",
                   str(data), "--method", "geca",
                   "--gin.geca.GECAConfig.wug_size=1",
                   "--gin.geca.GECAConfig.wug_count=1"]) == 0
  with open(os.path.join(out, "report.md"), encoding="utf-8") as f:
    assert "| pairs | 3 | 0 |" in f.read()


def test_memory_limit_stops_cleanly_with_an_estimate():
  config = GECAConfig(wug_size=4, wug_count=2, memory_limit_gb=1e-9)
  with pytest.raises(augment_lib.GECAResourceError) as err:
    augment_lib.augment(SPANISH, config)
  assert err.value.estimate["estimated_pairs"] > 0
  assert "wug_limit" in str(err.value)


def test_memory_estimate_stops_early(monkeypatch):
  # Over the limit after the first few sampled sequences: the estimate
  # enumerates no more of them (it was the whole sample, up to 256).
  seen = []
  real = kernel.enumerate_pairs

  def counting(tokens, offsets, seqs, *args):
    seen.append(len(seqs))
    return real(tokens, offsets, seqs, *args)

  monkeypatch.setattr(kernel, "enumerate_pairs", counting)
  pairs = [(f"x{i} y{i} z", f"X{i} Y{i}") for i in range(100)]
  with pytest.raises(augment_lib.GECAResourceError):
    augment_lib.augment(pairs, GECAConfig(wug_size=2, memory_limit_gb=1e-6))
  assert seen == [8]


def test_method_stage_writes_candidates(tmp_path):
  train, test = str(tmp_path / "train.tsv"), str(tmp_path / "test.tsv")
  write_tsv(train, SPANISH)
  write_tsv(test, [("I  dax", "Dajo")])  # spaces as a hand-made file has
  method = base.get("geca")
  method.config = GECAConfig(wug_size=1, wug_count=2)
  data = base.RunData(str(tmp_path), {"train": train, "test": test})
  stages = method.stages(data, str(tmp_path / "geca"))
  assert [s.name for s in stages] == ["generate"]
  json.dumps(stages[0].config)  # JSON-able cache key
  out = str(tmp_path / "geca" / "generate")
  summary = cache.run_stage(stages[0], out)  # as the pipeline runs it
  json.dumps(summary)
  assert read_tsv(summary["candidates"]) == [("I dax", "Dajo")]
  assert summary["overlap"]["full_overlap_after"] == 100.0
  assert os.path.exists(os.path.join(out, "stats.json"))
  rows = dict(method.report_rows({"generate": summary}))
  assert rows["GECA generated pairs"] == "1"
  assert rows["GECA full-example overlap with test"] == "0.0% -> 100.0%"
  method.eval_part = "gen"  # COGS's: the row names the part it is of
  assert "GECA full-example overlap with gen" in dict(
      method.report_rows({"generate": summary}))
  method.eval_part = "test"
  # A windowed stage cached under the old rule is made again; the
  # whole-template key (every shipped setting) is as it was.
  assert "window_rule" not in stages[0].config
  method.config = GECAConfig(wug_size=1, wug_count=2, window=1)
  assert method.stages(data, str(tmp_path / "geca"))[0].config[
      "window_rule"] == 2


@pytest.mark.parametrize("name, wug_size, limit, dedup, part", [
    ("scan", 1, None, True, "test"), ("geoquery", 4, 50, False, "test"),
    ("cogs", 4, 50, True, "gen")])
def test_gin_files(name, wug_size, limit, dedup, part):
  # The release's flags: --dedup in its SCAN script only; COGS's overlap
  # figures against gen, its compositional part.
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  gin.clear_config()
  try:
    gin.parse_config_file(os.path.join(root, "gin", "geca", f"{name}.gin"))
    method = base.get("geca")
  finally:
    gin.clear_config()
  config = method.config
  assert config.wug_size == wug_size and config.wug_limit == limit
  assert config.window is None and config.wug_count == 2
  assert (config.dedup, method.eval_part) == (dedup, part)
