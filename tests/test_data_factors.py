"""Zhou et al. 2023's data factors: the primitive lexicon (Eq. 1), K×
primitive augmentation (`primaug`) and AugZero (`augzero`), through the
pipeline too. Hand-made data whose answers are counted by hand, and SCAN
(generated here)."""

import collections
import json
import os

import pytest

from csl_jax.data import lexicon as lexicon_lib
from csl_jax.data import scan
from csl_jax.data import token_copies
from csl_jax.data import tsv
from csl_jax.errors import InputError
from csl_jax.methods.augzero import augment as augzero
from csl_jax.methods.primaug import augment as primaug

# `walk`/`jump` and their actions occur in exactly the same pairs; `twice`
# occurs with no single output token; `sea level` -> `0` always together.
PAIRS = [("walk", "W"), ("jump", "J"), ("walk twice", "W W"),
         ("jump twice", "J J"), ("walk and jump", "W J"),
         ("walk at sea level", "W 0"), ("jump", "J")]


def test_lexicon_by_hand():
  # `at` occurs exactly where `0` does: Eq. 1 keeps it (it cannot tell a
  # function word seen once from a primitive) ...
  assert lexicon_lib.lexicon(PAIRS) == [
      ("at", "0"), ("jump", "J"), ("level", "0"), ("sea", "0"),
      ("walk", "W")]
  # ... until it occurs without `0`; `twice` and `and` never qualify.
  assert lexicon_lib.lexicon(PAIRS + [("walk at", "W")]) == [
      ("jump", "J"), ("level", "0"), ("sea", "0"), ("walk", "W")]


def test_lexicon_of_scan_is_its_six_primitives():
  train, _ = scan.make_split("addprim_jump")
  assert lexicon_lib.lexicon([(e.input, e.output) for e in train]) == [
      ("jump", "I_JUMP"), ("left", "I_TURN_LEFT"), ("look", "I_LOOK"),
      ("right", "I_TURN_RIGHT"), ("run", "I_RUN"), ("walk", "I_WALK")]


def test_units_copy_co_occurring_tokens_together():
  assert primaug.units(PAIRS) == [(("at", "level", "sea"), ("0",)),
                                  (("jump",), ("J",)),
                                  (("walk",), ("W",))]
  # `a` twice in one example, `b` once: the same examples, one unit.
  assert primaug.units([("a b a", "X X"), ("c", "Y"), ("d", "Z")]) == [
      (("a", "b"), ("X",)), (("c",), ("Y",)), (("d",), ("Z",))]


def _unit_copies(text, units_of):
  """{unit: the copy indices its tokens carry in `text`}."""
  found = collections.defaultdict(set)
  for token in text.split():
    base = token_copies.original_token(token)
    if base in units_of:
      index = int(token.rpartition("@")[2]) if base != token else 1
      found[units_of[base]].add(index)
  return found


@pytest.mark.parametrize("factor", [2, 5])
def test_primaug_copies_are_consistent_distinct_and_map_back(factor):
  config = primaug.PrimAugConfig(factor=factor, seed=3)
  new, stats = primaug.augment(PAIRS, config)
  new = list(new)
  found = primaug.units(PAIRS)
  units_in = {t: u for u, (a, _) in enumerate(found) for t in a}
  units_out = {t: u for u, (_, b) in enumerate(found) for t in b}
  back = collections.Counter()
  for x, y in new:
    source = (" ".join(map(token_copies.original_token, x.split())),
              " ".join(map(token_copies.original_token, y.split())))
    assert source in PAIRS
    back[source] += 1
    # One copy per unit, the same on both sides (`sea@3 level@3` -> `0@3`).
    cx, cy = _unit_copies(x, units_in), _unit_copies(y, units_out)
    assert cx == cy and all(len(v) == 1 for v in cx.values())
    assert all(1 <= min(v) <= factor + 1 for v in cx.values())
  # At most K - 1 new pairs per example, distinct per example (a pair
  # listed twice, like the data's `jump`, may get the same copy twice: the
  # data's repetition is kept), none an original pair.
  assert not set(new) & set(PAIRS)
  counts = collections.Counter(new)
  repeated = {token_copies.original_token(p[0]) for p, n in counts.items()
              if n > 1}
  # At K = 5 (six forms, four new pairs each) the two jump examples share
  # a copy at this seed; at K = 2 (three forms, one each) they do not.
  assert repeated == ({"jump"} if factor == 5 else set())
  # `jump` is listed twice: its two examples each get their own copies.
  for pair in set(PAIRS):
    assert back[pair] <= (factor - 1) * PAIRS.count(pair)
  assert stats["generated"] == len(new)
  assert stats["draws"] <= 2 * factor * len(PAIRS)
  assert stats["num_with_primitives"] == len(PAIRS)
  # Seeded: the same seed, the same pairs; another seed, others.
  assert list(primaug.augment(PAIRS, config)[0]) == new
  if factor == 5:
    assert list(primaug.augment(
        PAIRS, primaug.PrimAugConfig(factor=5, seed=4))[0]) != new


@pytest.mark.parametrize("factor", [2, 5])
def test_primaug_exact_gives_every_example_k_minus_1(factor):
  # attempts = 0 (GeoQuery, App. C.2): every example with primitives gets
  # exactly K - 1 new versions, distinct per example. PAIRS' examples have
  # one unit (`walk`, `jump twice`) or two (`walk and jump`, `walk at sea
  # level`).
  config = primaug.PrimAugConfig(factor=factor, seed=3, attempts=0,
                                 forms="k")
  new, stats = primaug.augment(PAIRS, config)
  new = list(new)
  assert stats["generated"] == len(new) == (factor - 1) * len(PAIRS)
  assert stats["per_example"] == {str(factor - 1): len(PAIRS)}
  assert stats["forms"] == factor
  # The one-unit examples get every copy of their unit: walk@2 .. walk@K.
  walks = sorted(x for x, _ in new if x.startswith("walk") and " " not in x)
  assert walks == sorted(f"walk@{i}" for i in range(2, factor + 1))
  # App. C.1's K + 1 forms: K - 1 of the K copies walk@2 .. walk@K+1.
  plus = list(primaug.augment(PAIRS, primaug.PrimAugConfig(
      factor=factor, seed=3, attempts=0))[0])
  walks = [x for x, _ in plus if x.startswith("walk") and " " not in x]
  assert len(walks) == len(set(walks)) == factor - 1
  assert set(walks) < {f"walk@{i}" for i in range(2, factor + 2)}
  both = [x for x, _ in new if " and " in x]
  assert len(set(both)) == factor - 1 and "walk and jump" not in both
  assert list(primaug.augment(PAIRS, config)[0]) == new  # seeded
  # The paper's SCAN procedure (up to 2K draws) falls short at K = 20.
  short = primaug.augment(PAIRS, primaug.PrimAugConfig(factor=20, seed=0))
  assert len(list(short[0])) < 19 * len(PAIRS)
  with pytest.raises(InputError, match="attempts"):
    primaug.PrimAugConfig(attempts=-1)


def test_primaug_on_scan_pairs_are_scan_pairs():
  """Renaming a copy back gives the source pair, so each new pair is a
  correct SCAN pair of renamed primitives; K = 2 gives at most one each."""
  train, _ = scan.make_split("addprim_jump")
  pairs = [(e.input, e.output) for e in train[:300]] + [("jump", "I_JUMP")]
  new, stats = primaug.augment(pairs, primaug.PrimAugConfig(factor=2))
  new = list(new)
  for x, y in new:
    back = " ".join(map(token_copies.original_token, x.split()))
    assert scan.interpret(back) == " ".join(
        map(token_copies.original_token, y.split()))
  # K = 2: App. C.1's three forms, jump, jump@2 and jump@3.
  assert {x for x, _ in new if x.startswith("jump@") and " " not in x} == {
      "jump@2", "jump@3"}
  assert ("jump@2", "I_JUMP@2") in new and ("jump@3", "I_JUMP@3") in new
  assert stats["num_units"] == 6 and len(new) <= len(pairs)
  assert stats["forms"] == 3
  assert sum(stats["per_example"].values()) == len(pairs)


def test_augzero_is_k_bijective_copies():
  k = 4
  new = list(augzero.copies(PAIRS, augzero.AugZeroConfig(k=k)))
  assert len(PAIRS) + len(new) == k * len(PAIRS)
  vocab = lambda side, rows: {t for r in rows for t in r[side].split()}
  for side in (0, 1):
    assert len(vocab(side, PAIRS + new)) == k * len(vocab(side, PAIRS))
  # Copy i (i = 2..k) is the training set, token by token renamed.
  for i in range(2, k + 1):
    block = new[(i - 2) * len(PAIRS):(i - 1) * len(PAIRS)]
    assert [tuple(" ".join(map(token_copies.original_token, s.split()))
                  for s in pair) for pair in block] == PAIRS
    assert all(t.endswith(f"@{i}") for pair in block
               for s in pair for t in s.split())
  assert new[0] == ("walk@2", "W@2")


def test_a_token_with_the_separator_is_refused_naming_file_and_line():
  pairs = [("walk", "W"), ("mail me@home", "M")]
  with pytest.raises(InputError, match=r"train.tsv:2: token 'me@home'"):
    list(augzero.copies(pairs, augzero.AugZeroConfig(k=2), "train.tsv"))
  with pytest.raises(InputError, match=r"train.tsv:2: "):
    primaug.augment(pairs, primaug.PrimAugConfig(factor=2), "train.tsv")
  with pytest.raises(InputError, match="k must be >= 2"):
    augzero.AugZeroConfig(k=1)
  with pytest.raises(InputError, match="factor must be >= 2"):
    primaug.PrimAugConfig(factor=1)
  with pytest.raises(InputError, match=r"primaug forms: 'k\+1'"):
    primaug.PrimAugConfig(forms="k+1")


def test_methods_through_the_pipeline(tmp_path):
  from csl_jax.pipeline import augment as pipeline  # pylint: disable=g-import-not-at-top
  data = tmp_path / "data"
  data.mkdir()
  tsv.write_tsv(data / "train.tsv", PAIRS)
  tsv.write_tsv(data / "test.tsv", [("jump and walk", "J W")])
  run = str(tmp_path / "run")
  summary = pipeline.augment(run, dataset="tsv", data_dir=str(data),
                             methods=["primaug", "augzero"])
  assert not any(s["cached"] for s in summary["stages"].values())
  zero = tsv.read_tsv(os.path.join(run, "augzero", "synthetic.tsv"))
  assert len(zero) == (20 - 1) * len(PAIRS)  # default k = 20
  prim = tsv.read_tsv(os.path.join(run, "primaug", "synthetic.tsv"))
  assert 0 < len(prim) <= (20 - 1) * len(PAIRS)
  report = open(os.path.join(run, "report.md"), encoding="utf-8").read()
  # A dataset without splits is named by its directory.
  assert report.startswith(f"# Augmentation: tsv / {data}\n")
  assert "vocabulary | — | 7 -> 140 / 3 -> 60 |" in report
  assert "3: at level sea -> 0; jump -> J; walk -> W |" in report
  again = pipeline.augment(run, dataset="tsv", data_dir=str(data),
                           methods=["primaug", "augzero"])
  assert all(s["cached"] for s in again["stages"].values())


def test_selectors_read_copies_as_the_tokens_they_copy(tmp_path):
  """UAT and CMaxEnt parse SCAN commands: over primaug's and AugZero's
  candidates they read `jump@2` as `jump`, so every candidate is a query
  (not only those without a copy) and the subset written is of the
  candidates as they are, copies included."""
  from csl_jax.pipeline import augment as pipeline  # pylint: disable=g-import-not-at-top
  train, _ = scan.make_split("addprim_jump")
  data = tmp_path / "data"
  data.mkdir()
  tsv.write_tsv(data / "train.tsv", train[:200] + [tsv.Example(
      "jump", "I_JUMP")])
  tsv.write_tsv(data / "test.tsv", [tsv.Example("jump twice",
                                                "I_JUMP I_JUMP")])
  run = str(tmp_path / "run")
  pipeline.augment(run, dataset="tsv", data_dir=str(data),
                   methods=["primaug_2", "augzero_20"],
                   select=["uat", "cmaxent"], select_num=150)
  for method in ("primaug_2", "augzero_20"):
    pool = set(tsv.read_tsv(os.path.join(run, method, "candidates.tsv")))
    for selector in ("uat", "cmaxent"):
      chosen = tsv.read_tsv(os.path.join(run, method, f"{selector}_150",
                                         "synthetic.tsv"))
      assert len(chosen) == 150 and set(chosen) <= pool
      # AugZero's candidates all hold copies; primaug's nearly all do.
      assert sum("@" in ex.input for ex in chosen) >= 140
      for ex in chosen:
        back = pipeline.originals([ex])[0]
        assert scan.interpret(back.input) == back.output
  assert pipeline.originals([tsv.Example("jump@2 twice@13", "I_JUMP@2")]) \
      == [tsv.Example("jump twice", "I_JUMP")]


def test_experiment_vocabulary_gets_the_new_tokens(tmp_path):
  from csl_jax.experiments import runner  # pylint: disable=g-import-not-at-top
  known = tmp_path / "train.tsv"
  tsv.write_tsv(known, PAIRS)
  copies = tmp_path / "copies.tsv"
  tsv.write_tsv(copies, [("walk@2 twice", "W@2 W@2"), ("walk", "W")])
  assert runner._new_tokens([str(known)], [str(copies), None]) == [  # pylint: disable=protected-access
      "W@2", "walk@2"]
  # Kept with the files' hashes: reused while they are unchanged (a rerun
  # does not read the copies again), recomputed when one changes.
  keep = str(tmp_path / "new_tokens.json")
  assert runner._new_tokens([str(known)], [str(copies)], keep) == [  # pylint: disable=protected-access
      "W@2", "walk@2"]
  with open(keep, encoding="utf-8") as f:
    kept = json.load(f)
  kept["tokens"] = ["kept"]
  with open(keep, "w", encoding="utf-8") as f:
    json.dump(kept, f)
  assert runner._new_tokens([str(known)], [str(copies)], keep) == ["kept"]  # pylint: disable=protected-access
  tsv.write_tsv(copies, [("run@3", "R@3")])
  assert runner._new_tokens([str(known)], [str(copies)], keep) == [  # pylint: disable=protected-access
      "R@3", "run@3"]
  with pytest.raises(InputError, match="experiment.mixing"):
    runner.experiment(str(tmp_path / "x"), dataset="scan",
                      splits=["simple"], mixing="sum")


TOY_PAIRS = [("walk twice and run", "W W R"), ("run", "R")]


def test_augzero_mixed_copies_by_hand():
  from csl_jax.testing import models  # pylint: disable=g-import-not-at-top
  rules = models.TOY_RULES
  # One derivation of 4 rule applications (and, twice, walk, run), each in
  # copy 1 or 2, at least one in 2: 2**4 - 1 mixed copies.
  seen = set()
  for seed in range(200):
    config = augzero.AugZeroConfig(k=2, mix=True, seed=seed)
    (x, y), (x1, y1) = augzero.mixed_copies(TOY_PAIRS, rules, config)
    seen.add((x, y))
    assert (x1, y1) == ("run@2", "R@2")  # one rule: in copy 2
    walk, twice, conj, run = x.split()
    w1, w2, r = y.split()
    assert w1 == w2 == walk.replace("walk", "W") and r == run.replace("run",
                                                                       "R")
    assert tuple(" ".join(map(token_copies.original_token, s.split()))
                 for s in (x, y)) == TOY_PAIRS[0]
  assert len(seen) == 15 and ("walk twice and run", "W W R") not in seen
  assert ("walk twice@2 and run", "W W R") in seen
  # Every rule application in copy i: the plain copies.
  config = augzero.AugZeroConfig(k=3, mix=True, mix_prob=1.0)
  assert list(augzero.mixed_copies(TOY_PAIRS, rules, config)) == list(
      augzero.copies(TOY_PAIRS, config))
  stats = {}
  out = list(augzero.mixed_copies([("walk thrice", "W W W")], rules,
                                  augzero.AugZeroConfig(k=2, mix=True),
                                  stats=stats))
  assert out == [("walk@2 thrice@2", "W@2 W@2 W@2")]
  assert stats["not_derived"] == 1
  with pytest.raises(InputError, match="mix_prob"):
    augzero.AugZeroConfig(mix=True, mix_prob=0.0)
  with pytest.raises(InputError, match="k must be of type int, got '20'"):
    augzero.AugZeroConfig(k="20")
  with pytest.raises(InputError, match="factor must be of type int"):
    primaug.PrimAugConfig(factor=2.5)
  # A rule of nonterminals alone writes nothing: the application forced
  # into copy i is one with terminals, so no "copy" is the pair itself.
  from csl_jax.qcfg.rules import parse_rules  # pylint: disable=g-import-not-at-top
  concat = parse_rules("NT_1 NT_2 ### NT_1 NT_2\nwalk ### W\nrun ### R\n")
  got = {pair for seed in range(50) for pair in augzero.mixed_copies(
      [("walk run", "W R")], concat,
      augzero.AugZeroConfig(k=2, mix=True, seed=seed))}
  assert got == {("walk@2 run", "W@2 R"), ("walk run@2", "W R@2"),
                 ("walk@2 run@2", "W@2 R@2")}


def test_augzero_mix_through_the_pipeline(tmp_path, clear_gin):
  import gin  # pylint: disable=g-import-not-at-top
  from csl_jax.pipeline import augment as pipeline  # pylint: disable=g-import-not-at-top
  from csl_jax.qcfg.rules import save_rules  # pylint: disable=g-import-not-at-top
  from csl_jax.testing import models  # pylint: disable=g-import-not-at-top
  del clear_gin
  data = tmp_path / "data"
  data.mkdir()
  tsv.write_tsv(data / "train.tsv", TOY_PAIRS)
  run = str(tmp_path / "run")
  with pytest.raises(InputError, match="list `csl` before it"):
    pipeline.augment(run, dataset="tsv", data_dir=str(data),
                     methods=["augzero_mix"])
  grammar = tmp_path / "toy.qcfg"
  save_rules(str(grammar), models.TOY_RULES)
  gin.bind_parameter("augzero.AugZeroConfig.grammar", str(grammar))
  gin.bind_parameter("augzero.AugZeroConfig.k", 3)
  summary = pipeline.augment(run, dataset="tsv", data_dir=str(data),
                             methods=["augzero_mix"])
  assert not summary["stages"]["augzero_mix/generate"]["cached"]
  rows = tsv.read_tsv(os.path.join(run, "augzero_mix", "synthetic.tsv"))
  assert len(rows) == 2 * len(TOY_PAIRS)
  assert ("run@3", "R@3") in rows
  gin.bind_parameter("augzero.AugZeroConfig.seed", 1)
  again = pipeline.augment(run, dataset="tsv", data_dir=str(data),
                           methods=["augzero_mix"])
  assert not again["stages"]["augzero_mix/generate"]["cached"]


def test_primaug_geoquery_gin_is_app_c2():
  """GeoQuery's entities (App. C.2): K forms and exactly K - 1 new versions
  of every example; SCAN's class defaults are App. C.1's K + 1 forms."""
  import gin  # pylint: disable=g-import-not-at-top
  from csl_jax import assets  # pylint: disable=g-import-not-at-top
  assert (primaug.PrimAugConfig().forms,
          primaug.PrimAugConfig().attempts) == ("k_plus_1", 2)
  gin.clear_config()
  try:
    gin.parse_config_file(assets.resolve("gin/primaug/geoquery.gin"))
    config = primaug.PrimAugConfig()
  finally:
    gin.clear_config()
  assert (config.forms, config.attempts) == ("k", 0)
