"""Structurally diverse selectors: templates, UAT, CMaxEnt, hybrid (#14)."""

import collections
import math
import re

import gin
import hypothesis
from hypothesis import strategies as st
import numpy as np
import pytest
import scipy.stats

from csl_jax import assets
from csl_jax import selection
from csl_jax.data.tsv import Example
from csl_jax.errors import InputError
from csl_jax.qcfg import output_cfg
from csl_jax.selection import cmaxent
from csl_jax.selection import cmaxent_kernel
from csl_jax.selection import cmaxent_kernel_reference
from csl_jax.selection import diversity
from csl_jax.selection import structure_kernel
from csl_jax.selection import structure_kernel_reference
from csl_jax.selection import templates
from csl_jax.selection import uat

GEO = [
    "answer ( intersection ( city , loc_2 ( m0 ) ) )",
    "answer ( intersection ( city , loc_2 ( m1 ) ) )",
    "answer ( population_1 ( m0 ) )",
    "answer ( count ( intersection ( river , loc_2 ( m0 ) ) ) )",
    "answer ( largest ( intersection ( state , next_to_2 ( m0 ) ) ) )",
    "answer ( most ( state , traverse_1 , river ) )",
    "answer ( exclude ( river , traverse_2 ( m0 ) ) )",
    "answer ( area_1 ( m0 ) )",
    "answer ( high_point_1 ( m0 ) )",
    "answer ( state )",
]


def _pool(outputs, copies=1):
  return [Example(f"q{i} {c}", o) for i, o in enumerate(outputs)
          for c in range(copies)]


# --- Templates, atoms, compounds ----------------------------------------------


def test_parse_brackets_funql():
  tree = templates.parse_brackets(GEO[0])
  assert tree == ("answer", (("intersection", (
      ("city", ()), ("loc_2", (("m0", ()),)))),))


@pytest.mark.parametrize("bad", ["answer ( city", "answer ( )", "a ) b", ""])
def test_parse_brackets_rejects(bad):
  with pytest.raises(InputError):
    templates.parse_brackets(bad)


def test_geoquery_key_and_template():
  ex = Example("x", "answer ( intersection ( city , loc_2 ( m3 ) ) )")
  key = templates.GEOQUERY.key(ex.output)
  assert key == "answer ( intersection ( city , loc_2 ( entity ) ) )"
  tree = templates.GEOQUERY.tree(key)
  assert templates.GEOQUERY.template(tree) == (
      "answer(op(table,property(entity)))")


def test_every_funql_terminal_has_a_class():
  cfg = output_cfg.load_output_cfg(assets.resolve("tasks/geoquery/funql.cfg"))
  words = [t for t in cfg.terminals if t not in ("(", ")", ",")
           and not (t.startswith("m") and t[1:].isdigit()) and t != "0"]
  missing = [w for w in words if w not in templates.FUNQL_CLASSES]
  assert not missing


def test_cogs_tree_and_template():
  ex = Example("x", "like ( agent = * giraffe , ccomp = notice ( agent = "
               "Olivia , theme = cake ( nmod . in = garden ) ) )")
  key = templates.COGS.key(ex.output)
  assert "Olivia" not in key and "entity" in key
  tree = templates.COGS.tree(key)
  assert tree[0] == "like"
  assert tree[1][0] == ("agent", (("*", (("giraffe", ()),)),))
  assert "nmod.in" in templates.atoms(tree)
  assert templates.COGS.template(tree) == (
      "w(agent(*(w)),ccomp(w(agent(entity),theme(w(nmod.in(w))))))")


def test_scan_tree_and_template():
  ex = Example("jump around left twice and walk", "I_JUMP")
  tree = templates.SCAN.tree(templates.SCAN.key(ex.input))
  assert templates.SCAN.template(tree) == (
      "conj(num(around(verb,dir)),verb)")
  with pytest.raises(InputError):
    templates.SCAN.tree("jump jump")
  # SCAN*'s primitives are verbs like SCAN's own.
  assert templates.SCAN.template(templates.SCAN.tree(
      "p87 around left twice and p4")) == "conj(num(around(verb,dir)),verb)"
  with pytest.raises(InputError):
    templates.SCAN.tree("p8x twice")


def test_every_scan_star_command_is_a_scan_query():
  import random  # pylint: disable=g-import-not-at-top
  from csl_jax.data import scan_star  # pylint: disable=g-import-not-at-top
  pool = scan_star.generate(random.Random(0), 300, 1, 30,
                            scan_star.primitives())
  feats = diversity.featurize(pool, "auto", structure=False)
  assert feats.abstraction == "scan" and feats.valid.all()


def test_smcalflow_sexpr():
  ex = Example("x", '( Yield ( Event.subject_? ( ?= " team lunch " ) ) :n 3 )')
  key = templates.SMCALFLOW.key(ex.output)
  assert '"' not in key
  tree = templates.SMCALFLOW.tree(key)
  assert tree[0] == "Yield"
  assert ("entity", ()) in tree[1]
  # SMCalFlow-CS's long literals are numbers too.
  assert templates.SMCALFLOW.key("( toDays 7L ) ( f -2L x7L )") == \
      templates.SMCALFLOW.key("( toDays 3 ) ( f 5 x7L )")
  # SMCalFlow-CS's files write programs compactly: a number touches ")".
  compact = ["(Yield (nextDayOfMonth (Today) 7L))",
             "(Yield (nextDayOfMonth (Today) 10L))",
             "( Yield ( nextDayOfMonth ( Today ) 7L ) )"]
  assert {templates.SMCALFLOW.key(p) for p in compact} == {
      "(Yield (nextDayOfMonth (Today) entity))",
      "( Yield ( nextDayOfMonth ( Today ) entity ) )"}
  assert templates.SMCALFLOW.key("(f 3.5)(g x7L)") == "(f entity)(g x7L)"


def test_detect():
  assert templates.detect(_pool(GEO)) == "geoquery"
  assert templates.detect([Example("walk", "I_WALK")]) == "scan"
  assert templates.detect([Example("x", "( Yield x )")]) == "smcalflow"
  assert templates.detect([Example("x", "dust ( agent = Emma )")]) == "cogs"
  # GECA's ill-formed programs (no bracket after `answer`) among them:
  # still a GeoQuery pool, the misfits never selected.
  noisy = _pool(GEO) + [Example("x", "answer state , loc_1 ( m0 ) )")] * (
      len(_pool(GEO)) - 1)
  assert templates.detect(noisy) == "geoquery"
  assert templates.detect(noisy + noisy[-2:]) == "cogs"  # not most
  with pytest.raises(InputError):
    templates.get("nope")


def test_compounds_height_and_terminal():
  tree = templates.parse_brackets(GEO[0])
  names = [c[0] for c in templates.compounds(tree)]
  assert "intersection>city" in names
  assert "intersection(city,loc_2$)" in names
  assert "intersection(city,loc_2(m0))" in names
  # One leaf child: the pair and the height-1 compound are one subtree.
  assert "loc_2(m0)" in names and "loc_2>m0" not in names
  assert len(names) == len(set(names))  # no compound twice in this tree
  assert "answer(intersection(city,loc_2$))" in names
  assert not any(n.startswith("answer(intersection$") for n in names)
  # Each compound's supers are strictly larger occurrences of this tree.
  for name, i, sups in templates.compounds(tree):
    assert all(s != i for s in sups)


def test_keysers_weight_zero_when_always_inside_super():
  # intersection>city occurs only inside intersection(city,loc_2$):
  # P(super | G) = 1 -> w = 0.
  feats = diversity.featurize(_pool(GEO[:2]), "geoquery", "keysers")
  names = feats.compound_names
  w = feats.compounds.toarray()[0]
  assert w[names.index("intersection>city")] == 0.0
  assert w[names.index("answer(intersection(city,loc_2$))")] == 1.0
  none = diversity.featurize(_pool(GEO[:2]), "geoquery", "none")
  row = none.compounds.toarray()[0]
  assert row[none.compound_names.index("intersection>city")] == 1
  assert row[none.compound_names.index("loc_2(entity)")] == 1  # once
  assert "loc_2>entity" not in none.compound_names


def test_featurize_dedups_entities():
  feats = diversity.featurize(_pool(GEO), "auto")
  assert feats.num_queries == len(GEO) - 1  # m0 / m1 queries are one
  assert feats.query_of[0] == feats.query_of[1]
  with pytest.raises(InputError):
    diversity.featurize(_pool(GEO), "auto", "bogus")
  with pytest.raises(InputError):
    diversity.featurize([], "auto")
  with pytest.raises(InputError):
    diversity.featurize([Example("x", "answer ( city")], "geoquery")


COGS = [
    "like ( agent = * giraffe , ccomp = notice ( agent = Olivia , theme = "
    "cake ( nmod . in = garden ) ) )",
    "help ( theme = rose , agent = dog )",
    "dust ( agent = * sailor , theme = boy )",
    "roll ( agent = Emma , theme = teacher )",
    "lend ( agent = Jack , recipient = * pancake , theme = teacher )",
    "prove ( agent = Olivia , ccomp = burn ( theme = pen ) )",
    "sleep ( agent = * cat ( nmod . on = * mat ( nmod . beside = Ava ) ) )",
    "roll ( agent = Liam , theme = teacher )",
    "cake",
    "help ( theme = rose",  # unreadable: never selected, UNPARSED template
]


def _same_structure(a, b):
  (t1, n1, v1, a1, an1, c1, cn1), (t2, n2, v2, a2, an2, c2, cn2) = a, b
  np.testing.assert_array_equal(t1, t2)
  np.testing.assert_array_equal(v1, v2)
  assert (n1, an1, cn1) == (n2, an2, cn2)
  for x, y in ((a1, a2), (c1, c2)):
    assert x.shape == y.shape
    for part in ("indptr", "indices", "data"):  # same ids, same floats
      np.testing.assert_array_equal(getattr(x, part), getattr(y, part))


@pytest.mark.parametrize("abstraction", ["cogs", "geoquery"])
@pytest.mark.parametrize("weighting", ["keysers", "none"])
@pytest.mark.parametrize("with_compounds", [True, False])
def test_structure_kernel_equals_reference(abstraction, weighting,
                                           with_compounds):
  keys = COGS if abstraction == "cogs" else GEO + ["answer ( city"]
  abst = templates.get(abstraction)
  keys = [abst.key(k) for k in keys]
  counts = np.arange(1, len(keys) + 1)
  _same_structure(
      structure_kernel.structure(keys, abst, counts, weighting,
                                 with_compounds),
      structure_kernel_reference.structure(keys, abst, counts, weighting,
                                           with_compounds))


_WORDS = ["a", "b", "*", "nmod", ".", "in", "entity", "loc_2", "city"]


@st.composite
def _bracketed(draw, depth=0):
  label = " ".join(draw(st.lists(st.sampled_from(_WORDS), min_size=1,
                                 max_size=3)))
  shape = draw(st.sampled_from(["leaf", "=", "("] if depth < 3 else ["leaf"]))
  if shape == "leaf":
    return label
  if shape == "=":
    return f"{label} = {draw(_bracketed(depth + 1))}"
  kids = draw(st.lists(_bracketed(depth + 1), min_size=1, max_size=3))
  return f"{label} ( {' , '.join(kids)} )"


_TOKEN_SOUP = st.lists(st.sampled_from(_WORDS + ["(", ")", ",", "="]),
                       max_size=12).map(" ".join)


@hypothesis.settings(max_examples=80, deadline=None)
@hypothesis.given(st.lists(st.one_of(_bracketed(), _TOKEN_SOUP), min_size=1,
                           max_size=8),
                  st.sampled_from(["cogs", "geoquery"]),
                  st.sampled_from(["keysers", "none"]))
def test_structure_kernel_equals_reference_random(keys, abstraction,
                                                  weighting):
  # Random trees (nested `=` and brackets, multi-token labels) and token
  # soup (unbalanced, empty labels, trailing tokens): same parse, same
  # errors, same ids and weights.
  abst = templates.get(abstraction)
  counts = np.arange(len(keys)) % 3 + 1
  _same_structure(
      structure_kernel.structure(keys, abst, counts, weighting),
      structure_kernel_reference.structure(keys, abst, counts, weighting))


def test_structure_kernel_declines_names_it_cannot_keep_apart():
  # `$` is how compound names mark a truncated node: a label with it could
  # give two structures one name, so the bulk kernel leaves it to the twin.
  abst = templates.get("geoquery")
  keys = ["answer ( a$ ( b ) )", "answer ( a ( b ) )"]
  assert structure_kernel.structure(keys, abst, np.ones(2), "keysers") is None
  feats = diversity.featurize([Example("x", k) for k in keys], "geoquery")
  assert feats.num_queries == 2 and "a$" in feats.atom_names


# --- The bracketed featurization against its independent twin ---------------
# `structure_kernel_reference.by_example` shares none of `templates`' label
# code (keys, label chains, classes) with the kernel; compared by names.


class _KernelOnly:
  """`featurize`'s kernel, failing rather than falling back to the twin."""

  @staticmethod
  def structure(*args):
    out = structure_kernel.structure(*args)
    assert out is not None
    return out


def _kernel_by_example(outputs, abstraction, weighting):
  """`featurize` (production keys, labels and the kernel) per output."""
  feats = diversity.featurize([Example("x", o) for o in outputs],
                              abstraction, weighting, kernel=_KernelOnly)

  def row(m, names, q):
    lo, hi = m.indptr[q], m.indptr[q + 1]
    return {names[j]: float(v) for j, v in zip(m.indices[lo:hi],
                                               m.data[lo:hi])}
  out = []
  for q in feats.query_of:
    tmpl = feats.templates[feats.template_of[q]] if feats.valid[q] else None
    out.append((tmpl, row(feats.atoms, feats.atom_names, q),
                row(feats.compounds, feats.compound_names, q)))
  return out


_GEO_Q1 = ("answer(op(table,property(entity)))",
           {"answer": 1, "intersection": 1, "city": 1, "loc_2": 1,
            "entity": 1},
           # loc_2(entity): 1 of its 4 occurrences (Q2 has 3 examples) lies
           # in intersection(...); the rest only in supers of their own.
           {"answer(intersection(city,loc_2$))": 1.0,
            "intersection>city": 0.0, "intersection(city,loc_2$)": 0.0,
            "intersection(city,loc_2(entity))": 1.0, "loc_2(entity)": 0.75})
_GEO_Q2 = ("answer(property(entity))", {"answer": 1, "loc_2": 1, "entity": 1},
           {"answer(loc_2(entity))": 1.0, "loc_2(entity)": 0.25})
_COGS_Q1 = ("w(theme(*(w)),agent(entity))",
            {"help": 1, "theme": 1, "*": 1, "rose": 1, "agent": 1,
             "entity": 1},
            {"theme(*(rose))": 1.0, "*(rose)": 0.0, "agent(entity)": 0.0,
             "help(theme(*$),agent(entity))": 1.0})
_COGS_Q2 = ("w(nmod.in(w))", {"cake": 1, "nmod.in": 1, "garden": 1},
            {"cake(nmod.in(garden))": 1.0, "nmod.in(garden)": 0.0})

# (abstraction, outputs, per output (template, atoms, Keysers weights)),
# worked out by hand.
HAND_STRUCTURES = [
    ("geoquery", ["answer ( intersection ( city , loc_2 ( m0 ) ) )",
                  "answer ( loc_2 ( m3 ) )", "answer ( loc_2 ( m5 ) )",
                  "answer ( loc_2 ( 7 ) )", "answer ( city"],
     [_GEO_Q1, _GEO_Q2, _GEO_Q2, _GEO_Q2, (None, {}, {})]),
    ("cogs", ["help ( theme = * rose , agent = Emma )",
              "help ( theme = * rose , agent = Liam )",
              "cake ( nmod . in = garden )"],
     [_COGS_Q1, _COGS_Q1, _COGS_Q2]),
]


@pytest.mark.parametrize("abstraction, outputs, expected", HAND_STRUCTURES)
def test_structure_kernel_and_independent_twin_on_hand_trees(
    abstraction, outputs, expected):
  assert structure_kernel_reference.by_example(
      outputs, abstraction, "keysers") == expected
  assert _kernel_by_example(outputs, abstraction, "keysers") == expected
  # Unweighted: every compound occurs once in these trees.
  once = [(t, a, dict.fromkeys(c, 1.0)) for t, a, c in expected]
  assert structure_kernel_reference.by_example(
      outputs, abstraction, "none") == once
  assert _kernel_by_example(outputs, abstraction, "none") == once


_COGS_NOUNS = ["cake", "rose", "dog", "garden"]


@st.composite
def _cogs_np(draw, depth=0):
  kind = draw(st.sampled_from(["Emma", "Liam", "noun", "* noun", "nmod"]
                              if depth < 2 else ["Ava", "noun", "* noun"]))
  noun = draw(st.sampled_from(_COGS_NOUNS))
  if kind in ("noun", "* noun", "nmod"):
    head = noun if kind == "noun" or draw(st.booleans()) else f"* {noun}"
    if kind != "nmod":
      return head
    prep = draw(st.sampled_from(["in", "on", "beside"]))
    return f"{head} ( nmod . {prep} = {draw(_cogs_np(depth + 1))} )"
  return kind


@st.composite
def _cogs_output(draw, depth=0):
  verb = draw(st.sampled_from(["help", "like", "roll"]))
  roles = draw(st.lists(st.sampled_from(["agent", "theme", "recipient"]),
                        max_size=3, unique=True))
  args = [f"{r} = {draw(_cogs_np())}" for r in roles]
  if depth == 0 and draw(st.booleans()):
    args.append(f"ccomp = {draw(_cogs_output(1))}")
  return f"{verb} ( {' , '.join(args)} )" if args else verb


@st.composite
def _geo_set(draw, depth=0):
  shape = draw(st.sampled_from(["leaf", "1", "2", "most"] if depth < 3
                               else ["leaf"]))
  if shape == "leaf":
    return draw(st.sampled_from(["city", "state", "river", "major", "m0",
                                 "m1", "0", "traverse_1", "foo"]))
  if shape == "most":
    return f"most ( state , traverse_1 , {draw(_geo_set(depth + 1))} )"
  if shape == "1":
    f = draw(st.sampled_from(["loc_2", "population_1", "largest", "count",
                              "capital_1"]))
    return f"{f} ( {draw(_geo_set(depth + 1))} )"
  f = draw(st.sampled_from(["intersection", "exclude", "largest_one"]))
  return (f"{f} ( {draw(_geo_set(depth + 1))} , "
          f"{draw(_geo_set(depth + 1))} )")


_GEO_OUTPUT = _geo_set().map(lambda s: f"answer ( {s} )")
# Some cut short: unreadable, never selected.
_BROKEN = lambda s: s.rsplit(" ", 1)[0]


@hypothesis.settings(max_examples=150, deadline=None)
@hypothesis.given(st.sampled_from(["cogs", "geoquery"]), st.data(),
                  st.sampled_from(["keysers", "none"]))
def test_structure_kernel_matches_independent_twin(abstraction, data,
                                                   weighting):
  one = _cogs_output() if abstraction == "cogs" else _GEO_OUTPUT
  outputs = data.draw(st.lists(st.one_of(one, one.map(_BROKEN)),
                               min_size=1, max_size=10), label="outputs")
  # Repeats: queries with several examples, for the Keysers counts.
  outputs += data.draw(st.lists(st.sampled_from(outputs), max_size=4),
                       label="repeats")
  twin = structure_kernel_reference.by_example(outputs, abstraction,
                                               weighting)
  hypothesis.assume(any(t is not None for t, _, _ in twin))
  assert _kernel_by_example(outputs, abstraction, weighting) == twin


def test_funql_classes_follow_funql_cfg_categories():
  # The class table is the spec: checked against the CFG's categories
  # (Oren Table 2), and the twin's own copy against it.
  expected = {"intersection": "op", "exclude": "op", "count": "func",
              "sum": "func", "answer": "answer"}
  category = {"Major": "table", "ExtremeOne": "func", "MostFewest": "func"}
  with open(assets.resolve("tasks/geoquery/funql.cfg"), encoding="utf-8") as f:
    for line in f:
      lhs, _, rhs = line.partition("->")
      lhs = lhs.strip()
      if line.startswith("#") or not rhs or lhs == "Const":
        continue
      cls = category.get(lhs) or (
          "table" if lhs.endswith("Type") else
          "func" if lhs.endswith("Superlative") else
          "property" if "To" in lhs else None)
      for alt in rhs.split("|"):
        words = alt.split()
        if cls and len(words) == 1:
          assert expected.setdefault(words[0], cls) == cls, words[0]
  assert templates.FUNQL_CLASSES == expected
  assert {w: structure_kernel_reference.template_class(w, "geoquery")
          for w in expected} == expected


# --- UAT ----------------------------------------------------------------------


def _skewed(num_templates=12, seed=0, low=5):
  rng = np.random.default_rng(seed)
  counts = rng.integers(low, 200, num_templates)
  return np.repeat(np.arange(num_templates), counts), counts


def test_uat_alpha1_matches_pool_histogram():  # O1
  tmpl, counts = _skewed()
  for seed in range(5):
    idx = uat.uat_indices(tmpl, 400, 1.0, seed)
    observed = np.bincount(tmpl[idx], minlength=len(counts))
    expected = counts / counts.sum() * 400
    assert scipy.stats.chisquare(observed, expected).pvalue > 0.01


def test_uat_alpha0_covers_every_template():  # O2
  tmpl, counts = _skewed(low=30)
  # n <= min c(T) |T|; the multinomial entropy deficit is about
  # (|T| - 1) / 2n, so 0.05 nats needs n >~ 10 |T|.
  idx = uat.uat_indices(tmpl, 300, 0.0, 0)
  assert len(set(idx.tolist())) == 300
  hist = np.bincount(tmpl[idx], minlength=len(counts))
  assert (hist > 0).all()
  assert diversity.entropy(hist) > math.log(len(counts)) - 0.05
  hist = np.bincount(tmpl[uat.uat_indices(tmpl, 12, 0.0, 0)],
                     minlength=len(counts))
  assert (hist > 0).sum() >= 8  # n = |T|: most templates at once
  # Exhausted templates drop out: drawing everything works.
  idx = uat.uat_indices(tmpl, len(tmpl), 0.0, 1)
  assert sorted(idx.tolist()) == list(range(len(tmpl)))


def test_uat_monotone_in_alpha():  # O3
  counts = np.maximum(2, (2000 * 0.8 ** np.arange(40)).astype(int))  # Zipf-like
  tmpl = np.repeat(np.arange(40), counts)
  covered, ent = [], []
  for alpha in (0.0, 0.25, 0.5, 0.75, 1.0):
    c, e = [], []
    for seed in range(5):
      hist = np.bincount(tmpl[uat.uat_indices(tmpl, 60, alpha, seed)],
                         minlength=len(counts))
      c.append((hist > 0).sum())
      e.append(diversity.entropy(hist))
    covered.append(np.mean(c))
    ent.append(np.mean(e))
  assert all(a >= b - 1e-9 for a, b in zip(covered, covered[1:]))
  assert all(a >= b - 1e-9 for a, b in zip(ent, ent[1:]))


def test_uat_per_example_mode():
  tmpl, counts = _skewed()
  idx = uat.uat_indices(tmpl, 100, 0.0, 0, mode="per_example")
  assert len(set(idx.tolist())) == 100
  assert (np.bincount(tmpl[idx], minlength=len(counts)) > 0).sum() >= 10


def test_uat_bad_config(clear_gin):
  del clear_gin
  with pytest.raises(InputError):
    uat.UAT(alpha=1.5)
  with pytest.raises(InputError):
    uat.UAT(mode="x")
  # A gin binding of the wrong type: one line, not a comparison's TypeError.
  with pytest.raises(InputError, match="UAT.alpha must be of type float"):
    uat.UAT(alpha="0.5")
  with pytest.raises(InputError, match="UAT.num_shards must be of type int"):
    uat.UAT(num_shards="2")
  with pytest.raises(InputError, match="CMaxEnt.tol must be of type float"):
    selection.get("cmaxent").__class__(tol="x")
  gin.parse_config("UAT.alpha = 1.0")
  assert selection.get("uat").alpha == 1.0


# --- CMaxEnt ------------------------------------------------------------------


@st.composite
def _csr_pools(draw):
  num_q = draw(st.integers(1, 9))
  num_atoms = draw(st.integers(1, 5))
  num_feat = num_atoms + draw(st.integers(1, 6))
  rows = []
  for _ in range(num_q):
    feats = draw(st.sets(st.integers(0, num_feat - 1), min_size=1, max_size=5))
    rows.append({f: float(draw(st.integers(1, 3))) if f < num_atoms else
                 draw(st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.0]))
                 for f in sorted(feats)})
  avail = np.array([draw(st.integers(1, 3)) for _ in range(num_q)], np.int64)
  ptr = np.zeros(num_q + 1, np.int64)
  ptr[1:] = np.cumsum([len(r) for r in rows])
  ids = np.array([f for r in rows for f in r], np.int64)
  vals = np.array([v for r in rows for v in r.values()], np.float64)
  return ptr, ids, vals, num_atoms, num_feat, avail


@hypothesis.settings(max_examples=100, deadline=None)
@hypothesis.given(_csr_pools(), st.integers(1, 12), st.sampled_from([1, 2, 1024]),
                  st.sampled_from([0, 1, 1000]))
def test_greedy_kernel_equals_naive(pool, k, chunk, refresh_after):
  # chunk 1-2: many bound blocks (one per atom total at least); refresh_after
  # 0: bounds brought up to date every step, 1000: never on these pools.
  ptr, ids, vals, na, nf, avail = pool
  fast = cmaxent_kernel.greedy(ptr, ids, vals, na, nf, avail, k, 1e-9, chunk,
                               refresh_after)
  slow = cmaxent_kernel_reference.greedy(ptr, ids, vals, na, nf, avail, k,
                                         1e-9)
  np.testing.assert_array_equal(fast, slow)


def test_greedy_kernel_equals_naive_on_a_featurized_pool():
  # Hundreds of queries with real atoms, Keysers weights and repeats: many
  # blocks, stale bounds, refreshes; the naive greedy is the oracle.
  rng = np.random.default_rng(0)
  outs = [f"{v} ( agent = {a} , theme = {t} )" for v in ("roll", "help", "lend")
          for a in ("* cat", "dog", "Emma", "* boy ( nmod . in = * box )")
          for t in ("cake", "* rose", "Liam", "* mat ( nmod . on = dog )")]
  outs += [f"like ( agent = {a} , ccomp = {o} )" for a in ("cat", "Ava")
           for o in outs[:24]]
  pool = [Example(f"x{i}", outs[j])
          for i, j in enumerate(rng.integers(0, len(outs), 300))]
  feats = diversity.featurize(pool, "cogs")
  # pylint: disable-next=protected-access
  ptr, ids, vals, na, nf = cmaxent._matrix(feats)
  slow = cmaxent_kernel_reference.greedy(ptr, ids, vals, na, nf,
                                         feats.available(), 60, 1e-9)
  for chunk, refresh_after in ((1024, 1000), (4, 0), (3, 5)):
    fast = cmaxent_kernel.greedy(ptr, ids, vals, na, nf, feats.available(),
                                 60, 1e-9, chunk, refresh_after)
    np.testing.assert_array_equal(fast, slow)


@hypothesis.settings(max_examples=60, deadline=None)
@hypothesis.given(_csr_pools(), st.integers(1, 12), st.integers(0, 3))
def test_hybrid_kernel_equals_naive(pool, k, num_templates):
  ptr, ids, vals, na, nf, avail = pool
  num_q = len(ptr) - 1
  cuts = sorted(np.random.default_rng(k).integers(0, num_q + 1, num_templates))
  tmpl_ptr = np.array([0, *cuts, num_q], np.int64)
  u = np.random.default_rng(num_templates).random(k)
  fast = cmaxent_kernel.hybrid(ptr, ids, vals, na, nf, avail, tmpl_ptr, k, u,
                               1e-9)
  slow = cmaxent_kernel_reference.hybrid(ptr, ids, vals, na, nf, avail,
                                         tmpl_ptr, k, u, 1e-9)
  np.testing.assert_array_equal(fast, slow)


def _objective(feats, idx):
  d = diversity.diversity(feats, idx)
  return d["atom_entropy"] + d["compound_entropy"]


def test_greedy_first_step_is_brute_force_optimum():  # O4, toy pool
  feats = diversity.featurize(_pool(GEO), "geoquery")
  picks = cmaxent.greedy_queries(feats, 3)
  # Each greedy step is the exact argmax over all queries (brute force).
  chosen = []
  for step in range(3):
    def value(q):
      idx = [int(np.flatnonzero(feats.query_of == c)[0]) for c in chosen + [q]]
      return _objective(feats, idx)
    best = max(value(q) for q in range(feats.num_queries))
    assert value(int(picks[step])) >= best - 1e-9
    chosen.append(int(picks[step]))


def test_cmaxent_beats_random_entropy():  # O4
  outs = []
  rng = np.random.default_rng(0)
  for i in range(300):  # a skewed pool: mostly one structure
    outs.append(GEO[0] if rng.random() < 0.7 else GEO[rng.integers(len(GEO))])
  pool = [Example(f"u{i}", o.replace("m0", f"m{i % 10}"))
          for i, o in enumerate(outs)]
  feats = diversity.featurize(pool, "geoquery")
  idx = selection.get("cmaxent").select(pool, [], 30, 0)
  assert len(set(idx.tolist())) == 30
  rand = [_objective(feats, np.random.default_rng(s).permutation(300)[:30])
          for s in range(5)]
  assert _objective(feats, idx) > max(rand)


def test_selectors_distinct_indices_and_short_pool():
  pool = _pool(GEO, copies=3)
  for name in ("uat", "cmaxent", "cmaxent_uat"):
    idx = selection.get(name).select(pool, [], 10, 0)
    assert len(idx) == 10 and len(set(idx.tolist())) == 10
    everything = selection.get(name).select(pool, [], 100, 0)
    assert sorted(everything.tolist()) == list(range(len(pool)))
    with pytest.raises(InputError):
      selection.get(name).select(pool, [], 0, 0)
  with pytest.raises(InputError, match="select_num"):
    selection.get("random").select(pool, [], -1, 0)


def test_cmaxent_gin_config(clear_gin):
  del clear_gin
  gin.parse_config("CMaxEnt.weighting = 'none'\n"
                   "CMaxEntUAT.abstraction = 'geoquery'")
  assert selection.get("cmaxent").weighting == "none"
  assert selection.get("cmaxent_uat").abstraction == "geoquery"
  with pytest.raises(InputError):
    cmaxent.CMaxEnt(weighting="x")
  # Exact ties (tol 0) would be broken by float rounding, differently in
  # the kernel and its naive twin.
  with pytest.raises(InputError, match="tol"):
    cmaxent.CMaxEnt(tol=0.0)


@pytest.mark.parametrize("name", ["uat", "cmaxent", "cmaxent_uat"])
def test_selection_key_names_the_abstractions(name, monkeypatch):
  # A change to what an abstraction returns changes the selection: the
  # stage key must change with it (else a cached selection is reused).
  before = selection.get(name).config()
  monkeypatch.setattr(templates, "ABSTRACTIONS_VERSION",
                      templates.ABSTRACTIONS_VERSION + 1)
  assert selection.get(name).config() != before


def test_report_rows_and_plot(tmp_path):
  pool = _pool(GEO, copies=5)
  feats = diversity.featurize(pool, "geoquery")
  sel = {"uat": selection.get("uat").select(pool, [], 9, 0)}
  rows = diversity.report_rows(feats, sel, random_repeats=2)
  assert rows[0]["selector"] == "uat" and rows[0]["templates_covered"] >= 1
  assert rows[1]["selector"].startswith("random")
  path = tmp_path / "freq.png"
  diversity.plot_template_frequency(str(path), feats, sel)
  assert path.stat().st_size > 0


def test_pipeline_select_stage(tmp_path, clear_gin):
  del clear_gin
  from csl_jax.data import tsv  # pylint: disable=g-import-not-at-top
  from csl_jax.pipeline import augment  # pylint: disable=g-import-not-at-top
  from csl_jax.pipeline import cache  # pylint: disable=g-import-not-at-top
  cands = tmp_path / "candidates.tsv"
  train = tmp_path / "train.tsv"
  tsv.write_tsv(str(cands), _pool(GEO, copies=4))
  tsv.write_tsv(str(train), _pool(GEO[:2]))
  for name in ("uat", "cmaxent", "cmaxent_uat"):
    out = tmp_path / name
    summary = cache.run_stage(
        augment.select_stage(name, 12, 0, str(cands), str(train)), str(out))
    assert summary["num_examples"] == 12 and not summary["cached"]
    assert len(tsv.read_tsv(str(out / "synthetic.tsv"))) == 12
  again = cache.run_stage(
      augment.select_stage("uat", 12, 0, str(cands), str(train)),
      str(tmp_path / "uat"))
  assert again["cached"]
  gin.parse_config("UAT.alpha = 0.5")  # a selector option reruns the stage
  changed = cache.run_stage(
      augment.select_stage("uat", 12, 0, str(cands), str(train)),
      str(tmp_path / "uat"))
  assert not changed["cached"]


def test_pipeline_diversity_stage_and_shortfall(tmp_path, clear_gin):
  # The report's figures of a run's selections (one featurized pool for
  # all of them), and the line for a selection short of its k.
  del clear_gin
  from csl_jax.data import tsv  # pylint: disable=g-import-not-at-top
  from csl_jax.pipeline import augment  # pylint: disable=g-import-not-at-top
  from csl_jax.pipeline import cache  # pylint: disable=g-import-not-at-top
  from csl_jax.pipeline import report  # pylint: disable=g-import-not-at-top
  pool = _pool(GEO, copies=4) + [Example("bad", "answer ( city")] * 3
  cands, train = tmp_path / "candidates.tsv", tmp_path / "train.tsv"
  tsv.write_tsv(str(cands), pool)
  tsv.write_tsv(str(train), _pool(GEO[:2]))
  selections = []
  for name, k in (("uat", 100), ("cmaxent", 12)):
    stage = augment.select_stage(name, k, 0, str(cands), str(train))
    summary = cache.run_stage(stage, str(tmp_path / stage.name))
    selections.append((stage.name, str(tmp_path / stage.name /
                                       "synthetic.tsv")))
    line = report.shortfall(stage.name, summary)
    if k == 100:  # 40 readable of 43: all of them, and the report says so
      assert line == ("uat_100: 40 of 100 asked (the pool holds 43, 40 of "
                      "them selectable)")
    else:
      assert line is None
    # Distinct pairs: the pool's 40 + 1 (the bad one thrice).
    assert (summary["pool_size"], summary["pool_distinct"]) == (43, 41)
    assert summary["num_distinct"] == summary["num_examples"]
    assert report.repeats(stage.name, summary) is None
  # A pool that repeats a pair: a selection may repeat it, and says so.
  twice = tmp_path / "twice.tsv"
  tsv.write_tsv(str(twice), pool[:40] + pool[:40])
  summary = cache.run_stage(augment.select_stage("random", 60, 0, str(twice),
                                                 str(train)),
                            str(tmp_path / "twice"))
  picked = tsv.read_tsv(str(tmp_path / "twice" / "synthetic.tsv"))
  assert summary["num_distinct"] == len(set(picked)) < 60
  assert report.repeats("csl/random_60", summary) == (
      f"csl/random_60: {len(set(picked))} distinct pairs of the 60 selected: "
      "the pool repeats pairs (40 distinct of 80; CSL samples with "
      "replacement: `--gin.SampleConfig.dedup=True` samples distinct pairs)")
  # Another method's pool: no CSL hint (primaug's copies repeat pairs too).
  assert report.repeats("primaug_2/random_60", summary) == (
      f"primaug_2/random_60: {len(set(picked))} distinct pairs of the 60 "
      "selected: the pool repeats pairs (40 distinct of 80)")
  out = tmp_path / "diversity"
  summary = cache.run_stage(augment.diversity_stage(
      selections, str(cands), 0, abstraction="geoquery"), str(out))
  rows = {r["selection"]: r for r in summary["diversity"]}
  assert list(rows) == ["pool (all candidates)", "uat_100", "cmaxent_12"]
  # By hand: the 40 readable candidates are 10 outputs x 4, in 5 templates;
  # atoms are the tree nodes, entities abstracted.
  abst = templates.get("geoquery")
  trees = [abst.tree(abst.key(o)) for o in GEO]
  atoms = collections.Counter(a for t in trees for a in templates.atoms(t))
  total = sum(atoms.values())
  h_atoms = -sum(c / total * math.log(c / total) for c in atoms.values())
  uat_row = rows["uat_100"]
  assert uat_row["size"] == 40 and rows["pool (all candidates)"]["size"] == 43
  assert uat_row["templates_covered"] == len(
      {abst.template(t) for t in trees}) == 5
  assert uat_row["atom_entropy"] == pytest.approx(h_atoms)
  # 40 uniform picks of the 40 selectable candidates: the same figures.
  assert {k: uat_row["random"][k] for k in uat_row["random"]} == \
      pytest.approx({k: uat_row[k] for k in uat_row["random"]})
  # The other against diversity.py on the pool as CMaxEnt reads it.
  feats = diversity.featurize(pool, "geoquery")
  chosen = tsv.read_tsv(selections[1][1])
  expected = diversity.diversity(feats, [pool.index(ex) for ex in chosen])
  assert {k: rows["cmaxent_12"][k] for k in expected} == \
      pytest.approx(expected)
  assert (out / summary["plot"]).stat().st_size > 0
  assert cache.run_stage(augment.diversity_stage(
      selections, str(cands), 0, abstraction="geoquery"), str(out))["cached"]


def test_selection_without_the_test_templates(tmp_path, clear_gin):
  """Oren et al. App. A: candidates of a template the test part has are
  left out before any selector reads the pool. By hand: the test's one
  output `answer ( population_1 ( m2 ) )` has the template of GEO[2],
  GEO[7] and GEO[8] (population_1, area_1 and high_point_1 are each a
  `property` over an entity: `answer(property(entity))`), so their 3 x 4
  candidates go; the other 28 remain, and a k of 40 gets those 28."""
  del clear_gin
  # pylint: disable=g-import-not-at-top
  from csl_jax.data import tsv
  from csl_jax.pipeline import augment
  from csl_jax.pipeline import cache
  # pylint: enable=g-import-not-at-top
  pool = _pool(GEO, copies=4)
  cands, train = tmp_path / "candidates.tsv", tmp_path / "train.tsv"
  test = tmp_path / "test.tsv"
  tsv.write_tsv(str(cands), pool)
  tsv.write_tsv(str(train), _pool(GEO[:2]))
  tsv.write_tsv(str(test), [Example("how many", "answer ( population_1 "
                                                "( m2 ) )")])
  banned = {GEO[2], GEO[7], GEO[8]}
  exclude = ("test", str(test), "auto")
  for selector in ("random", "uat", "cmaxent"):
    stage = augment.select_stage(selector, 40, 0, str(cands), str(train),
                                 exclude=exclude)
    summary = cache.run_stage(stage, str(tmp_path / selector))
    chosen = tsv.read_tsv(str(tmp_path / selector / "synthetic.tsv"))
    assert not {ex.output for ex in chosen} & banned, selector
    assert len(chosen) == 28, selector
    assert summary["excluded"] == {"part": "test", "part_templates": 1,
                                   "candidates": 12}
    assert stage.config["exclude_templates_of"] == "test"
    assert str(test) in stage.inputs  # a changed test part reruns it
  # A test part of other programs is an error naming it; so is a pool
  # whose every candidate has a test template.
  other = tmp_path / "other.tsv"
  tsv.write_tsv(str(other), [Example("a", ") (")])
  with pytest.raises(InputError, match=re.escape(str(other))):
    cache.run_stage(augment.select_stage(
        "uat", 5, 0, str(cands), str(train),
        exclude=("test", str(other), "geoquery")), str(tmp_path / "o"))
  only = tmp_path / "only.tsv"
  tsv.write_tsv(str(only), [Example(f"q{i}", GEO[2]) for i in range(5)])
  with pytest.raises(InputError, match="every one of the 5 candidates"):
    cache.run_stage(augment.select_stage(
        "uat", 5, 0, str(only), str(train), exclude=exclude),
                    str(tmp_path / "e"))
  # The report's random baseline draws from the same 28: all of them, so
  # its figures are the selection's own.
  div = cache.run_stage(augment.diversity_stage(
      [("uat_40", str(tmp_path / "uat" / "synthetic.tsv"))], str(cands), 0,
      abstraction="geoquery", exclude=exclude),
                        str(tmp_path / "div"))
  row = div["diversity"][1]
  assert row["size"] == 28 and row["random"]["templates_covered"] == \
      row["templates_covered"]
  assert div["random_of"] == "the candidates of no test template"
  # Token copies are read as what they copy: `jump@2 twice` has the
  # template of the test's `run twice` (SCAN's verb twice).
  copied = tmp_path / "copied.tsv"
  tsv.write_tsv(str(copied), [("jump@2 twice", "I_JUMP@2 I_JUMP@2"),
                              ("walk@3 left", "I_TURN_LEFT I_WALK@3")])
  scan_test = tmp_path / "scan_test.tsv"
  tsv.write_tsv(str(scan_test), [("run twice", "I_RUN I_RUN")])
  cache.run_stage(augment.select_stage(
      "random", 5, 0, str(copied), str(train), copies=True,
      exclude=("test", str(scan_test), "auto")), str(tmp_path / "c"))
  assert tsv.read_tsv(str(tmp_path / "c" / "synthetic.tsv")) == [
      Example("walk@3 left", "I_TURN_LEFT I_WALK@3")]
  # Without it, the same selector takes them.
  whole = cache.run_stage(augment.select_stage("random", 40, 0, str(cands),
                                               str(train)),
                          str(tmp_path / "whole"))
  assert "excluded" not in whole
  assert {ex.output for ex in tsv.read_tsv(
      str(tmp_path / "whole" / "synthetic.tsv"))} >= banned


def test_report_measures_with_a_setting_only_every_selector_shares(
    clear_gin):
  """One bound setting was applied to every selector's figures: the
  hybrid's H(C) measured without the Keysers weights it selected with."""
  del clear_gin
  from csl_jax.pipeline import augment  # pylint: disable=g-import-not-at-top
  from csl_jax.pipeline import report  # pylint: disable=g-import-not-at-top
  assert augment.diversity_settings(["uat", "cmaxent", "cmaxent_uat"]) == (
      "auto", "keysers", {})
  gin.parse_config("CMaxEnt.weighting = 'none'")
  assert augment.diversity_settings(["cmaxent"]) == ("auto", "none", {})
  assert augment.diversity_settings(["uat", "cmaxent", "cmaxent_uat"]) == (
      "auto", "keysers", {"cmaxent": {"weighting": "none"}})
  gin.parse_config("UAT.abstraction = 'leaves'")
  assert augment.diversity_settings(["uat", "random"]) == (
      "leaves", "keysers", {})
  assert augment.diversity_settings(["uat", "cmaxent"]) == (
      "auto", "none", {"uat": {"abstraction": "leaves"}})
  # The report says so.
  info = {"csl": {"stage_order": ["diversity"], "stages": {"diversity": {
      "diversity": [], "abstraction": "auto", "weighting": "keysers",
      "random_repeats": 10,
      "selectors_differ": {"cmaxent": {"weighting": "none"}}}}}}
  notes = report._selections("/nonexistent", ["csl"], info)[1]  # pylint: disable=protected-access
  assert "csl: measured with auto templates and keysers weights, while " \
      "cmaxent selected with weighting none" in notes


def test_unparseable_candidates_are_not_a_template():
  # Two readable queries of one template and one unreadable output: the
  # pool covers one template, with entropy 0.
  pool = [Example("a", "answer ( state )"), Example("b", "answer ( river )"),
          Example("c", "answer state , loc_1 ( m0 ) )")]
  feats = diversity.featurize(pool, "geoquery")
  div = diversity.diversity(feats, np.arange(3))
  assert div["size"] == 3 and div["templates_covered"] == 1
  assert div["template_entropy"] == 0.0
  freq = diversity.template_frequencies(feats, np.arange(3))
  assert freq.tolist() == [1.0, 0.0]  # answer(table), <unparsed>
  # The random baseline draws from what a selector may pick: 2 of 2
  # readable examples, so its one template, every time.
  rows = diversity.report_rows(feats, {"sel": [0, 1]}, random_repeats=20)
  both = diversity.diversity(feats, [0, 1])
  assert {k: rows[1][k] for k in both} == pytest.approx(both)


def test_unparseable_candidates_are_never_selected():
  pool = _pool(GEO, copies=2) + [Example("bad", "answer ( city")] * 3
  feats = diversity.featurize(pool, "geoquery")
  assert (~feats.valid).sum() == 1
  bad = set(range(len(pool) - 3, len(pool)))
  for name in ("uat", "cmaxent", "cmaxent_uat"):
    chooser = selection.get(name)
    chooser.abstraction = "geoquery"
    idx = chooser.select(pool, [], 100, 0)
    assert len(idx) == len(pool) - 3 and not bad & set(idx.tolist())


# --- Distributed CMaxEnt (issue 16) --------------------------------------------


def _cogs_pool(size=300, seed=0):
  rng = np.random.default_rng(seed)
  outs = [f"{v} ( agent = {a} , theme = {t} )" for v in ("roll", "help", "lend")
          for a in ("* cat", "dog", "Emma", "* boy ( nmod . in = * box )")
          for t in ("cake", "* rose", "Liam", "* mat ( nmod . on = dog )")]
  return [Example(f"x{i}", outs[j])
          for i, j in enumerate(rng.integers(0, len(outs), size))]


def test_sharded_cmaxent_one_shard_is_the_exact_greedy():
  feats = diversity.featurize(_cogs_pool(), "cogs")
  np.testing.assert_array_equal(
      cmaxent.sharded_greedy_queries(feats, 30, 1),
      cmaxent.greedy_queries(feats, 30))


def test_sharded_cmaxent_is_greedy_over_the_shards_winners():
  feats = diversity.featurize(_cogs_pool(), "cogs")
  k, shards = 25, 3
  got = cmaxent.sharded_greedy_queries(feats, k, shards)
  avail = feats.available()
  assert len(got) == k
  assert (np.bincount(got, minlength=len(avail)) <= avail).all()
  # By the definition, with the naive greedy as the oracle at both levels.
  # pylint: disable-next=protected-access
  ptr, ids, vals, na, nf = cmaxent._matrix(feats)
  winners = []
  for queries in cmaxent.shard_of_queries(len(avail), shards):
    # pylint: disable-next=protected-access
    sub = cmaxent._rows(ptr, ids, vals, queries)
    winners.extend(queries[cmaxent_kernel_reference.greedy(
        *sub, na, nf, avail[queries], k, 1e-9)])
  union, times = np.unique(winners, return_counts=True)
  # pylint: disable-next=protected-access
  sub = cmaxent._rows(ptr, ids, vals, union)
  want = union[cmaxent_kernel_reference.greedy(*sub, na, nf, times, k, 1e-9)]
  np.testing.assert_array_equal(got, want)
  # Every query's shard holds it: the shards partition the queries.
  parts = np.concatenate(cmaxent.shard_of_queries(len(avail), shards))
  assert sorted(parts.tolist()) == list(range(len(avail)))


def test_sharded_cmaxent_config_errors():
  with pytest.raises(InputError, match="num_shards"):
    cmaxent.CMaxEnt(num_shards=0)
  with pytest.raises(InputError, match="runner needs num_shards"):
    cmaxent.CMaxEnt(runner="DirectRunner")
  with pytest.raises(InputError, match="no distributed version"):
    cmaxent.CMaxEntUAT(num_shards=2).select(_cogs_pool(50), [], 5, 0)
  assert "num_shards" not in cmaxent.CMaxEnt().config()


def test_beam_cmaxent_equals_local():
  pytest.importorskip("apache_beam")
  from csl_jax.selection import beam_cmaxent  # pylint: disable=g-import-not-at-top
  feats = diversity.featurize(_cogs_pool(), "cogs")
  np.testing.assert_array_equal(
      beam_cmaxent.sharded_greedy_queries(feats, 25, 3, 1e-9,
                                          "DirectRunner"),
      cmaxent.sharded_greedy_queries(feats, 25, 3))


@pytest.mark.parametrize("num_shards", [1, 3, 7])
def test_uat_templates_in_shards_number_as_the_whole_pool(num_shards):
  from csl_jax.selection import beam_uat  # pylint: disable=g-import-not-at-top
  pool = _cogs_pool()
  pool[5] = Example(pool[5].input, "not a cogs ( form")  # never usable
  feats = diversity.featurize(pool, "cogs", structure=False)
  usable = np.flatnonzero(feats.valid[feats.query_of])
  tmpl = np.unique(feats.template_of[feats.query_of[usable]],
                   return_inverse=True)[1]
  bounds = [len(pool) * s // num_shards for s in range(num_shards + 1)]
  shards = [beam_uat.shard_templates(pool, bounds[s], bounds[s + 1], "cogs")
            for s in range(num_shards)]
  got_usable, got_tmpl = beam_uat.number_templates(shards[::-1])
  np.testing.assert_array_equal(got_usable, usable)
  np.testing.assert_array_equal(got_tmpl, tmpl)
  assert 5 not in got_usable.tolist()


def test_beam_uat_equals_local():
  pytest.importorskip("apache_beam")
  pool = _cogs_pool()
  for seed in (0, 1):
    np.testing.assert_array_equal(
        uat.UAT(num_shards=3, runner="DirectRunner").select(pool, [], 40,
                                                            seed),
        uat.UAT().select(pool, [], 40, seed))
  with pytest.raises(InputError, match="num_shards"):
    uat.UAT(num_shards=0)


def test_bench_cmaxent_templates_counts_by_hand(load_script):
  """The O5 diagnostic's figures on six picks whose templates are known:
  two `intersection(table, property(entity))`, three `property(entity)`,
  one bare table."""
  bench = load_script("bench_cmaxent_templates", "benchmarks")
  pool = _pool(GEO)
  features = diversity.featurize(pool, "geoquery", "keysers")
  row = bench.spend(features, pool, np.array([0, 1, 2, 7, 8, 9]), top=2,
                    every=2)
  assert row["templates_covered"] == 3
  assert row["covered_after"] == [1, 2, 3]
  assert row["top1_share"] == 0.5 and row["top10_share"] == 1.0
  assert row["mean_output_tokens"] == pytest.approx((12 + 12 + 7 * 3 + 4) / 6)
  assert row["mean_input_tokens"] == 2.0
  first, second = row["top"]
  assert first["examples"] == 3 and second["examples"] == 2
  assert first["template"] == "answer(property(entity))"
  assert first["example"] == "q2 0\tanswer ( population_1 ( m0 ) )"
  assert "accepted_share" not in row
  # Outputs that hold an `intersection` refused: picks 0 and 1 of the six.
  accepted = {e.output: "intersection" not in e.output for e in pool}
  row = bench.spend(features, pool, np.array([0, 1, 2, 7, 8, 9]), top=2,
                    accepted=accepted)
  assert row["accepted_share"] == pytest.approx(4 / 6)


def test_leaves_abstraction_and_the_line_for_templates_that_are_programs(
    tmp_path, clear_gin):
  """Programs of one's own, `( move ( block red ) left )`: SMCalFlow's
  abstraction (what `auto` picks for a leading bracket) abstracts no leaf,
  so each of the 22 programs (8 moves, 14 puts) is a template (said, in the stage and the
  report); `leaves` keeps the functions: 2 templates, counted by hand."""
  del clear_gin
  from csl_jax.data import tsv  # pylint: disable=g-import-not-at-top
  from csl_jax.pipeline import augment  # pylint: disable=g-import-not-at-top
  from csl_jax.pipeline import cache  # pylint: disable=g-import-not-at-top
  from csl_jax.pipeline import report  # pylint: disable=g-import-not-at-top
  programs = [f"( move ( block {c} ) {d} )" for c in
              ("red", "green", "blue", "black") for d in ("left", "right")]
  programs += [f"( put ( block {c} ) ( on ( block {o} ) ) )" for c in
               ("red", "green", "blue", "black") for o in
               ("red", "green", "white", "grey") if c != o]  # 3+3+4+4
  pool = [Example(f"u{i}", p) for i, p in enumerate(programs)]
  assert templates.detect(pool) == "smcalflow"
  leaves = templates.get("leaves")
  assert {leaves.template(leaves.tree(p)) for p in programs} == {
      "move(block(entity),entity)", "put(block(entity),on(block(entity)))"}
  assert leaves.template(leaves.tree("answer ( state ( m0 ) )")) == \
      "answer(state(entity))"
  cands = tmp_path / "candidates.tsv"
  tsv.write_tsv(str(cands), pool)
  tsv.write_tsv(str(tmp_path / "train.tsv"), pool[:2])
  stage = augment.select_stage("random", 10, 0, str(cands),
                               str(tmp_path / "train.tsv"))
  cache.run_stage(stage, str(tmp_path / stage.name))
  selections = [(stage.name, str(tmp_path / stage.name / "synthetic.tsv"))]
  got = {}
  for name in ("auto", "leaves"):
    got[name] = cache.run_stage(augment.diversity_stage(
        selections, str(cands), 0, abstraction=name), str(tmp_path / name))
  assert (got["auto"]["pool_queries"], got["auto"]["pool_templates"]) == (
      22, 22)
  assert report.nothing_abstracted("m/diversity", got["auto"]) == (
      "m/diversity: the smcalflow abstraction makes each of the pool's 22 "
      "distinct programs a template of its own, so templates count distinct "
      "programs: set UAT.abstraction, CMaxEnt.abstraction and "
      "CMaxEntUAT.abstraction to one that fits the data ('leaves' for "
      "bracketed programs of your own: every leaf an entity)")
  assert got["leaves"]["pool_templates"] == 2
  assert report.nothing_abstracted("m/diversity", got["leaves"]) is None
  assert got["leaves"]["diversity"][0]["templates_covered"] == 2
