"""Tests for csl_jax.data.cogs (real COGS lines copied here; no shared data)."""

import os

import pytest

from csl_jax.data import cogs
from csl_jax.data.tsv import ReadStats
from csl_jax.errors import InputError


# (sentence, COGS LF, CSL variable-free form), copied from COGS train/gen and
# the published variable-free files.
CASES = [
    # Plain transitive, definite subject.
    ("The sailor dusted a boy .",
     "* sailor ( x _ 1 ) ; dust . agent ( x _ 2 , x _ 1 ) AND "
     "dust . theme ( x _ 2 , x _ 4 ) AND boy ( x _ 4 )",
     "dust ( agent = * sailor , theme = boy )"),
    # Passive; the agent follows the verb but its noun comes later.
    ("A rose was helped by a dog .",
     "rose ( x _ 1 ) AND help . theme ( x _ 3 , x _ 1 ) AND "
     "help . agent ( x _ 3 , x _ 6 ) AND dog ( x _ 6 )",
     "help ( theme = rose , agent = dog )"),
    ("A cake was stabbed by Scarlett .",
     "cake ( x _ 1 ) AND stab . theme ( x _ 3 , x _ 1 ) AND "
     "stab . agent ( x _ 3 , Scarlett )",
     "stab ( theme = cake , agent = Scarlett )"),
    # Two definites: both prefixes, by index.
    ("The cake was frozen by the giraffe .",
     "* cake ( x _ 1 ) ; * giraffe ( x _ 6 ) ; freeze . theme ( x _ 3 , x _ 1 )"
     " AND freeze . agent ( x _ 3 , x _ 6 )",
     "freeze ( theme = * cake , agent = * giraffe )"),
    # Unaccusative with a proper name.
    ("Oliver crumpled .", "crumple . theme ( x _ 1 , Oliver )",
     "crumple ( theme = Oliver )"),
    # PP dative with nmod: a noun before the verb (x _ 1 before x _ 2).
    ("A horse gave the cake beside a table to the mouse .",
     "* cake ( x _ 4 ) ; * mouse ( x _ 10 ) ; horse ( x _ 1 ) AND "
     "give . agent ( x _ 2 , x _ 1 ) AND give . theme ( x _ 2 , x _ 4 ) AND "
     "give . recipient ( x _ 2 , x _ 10 ) AND "
     "cake . nmod . beside ( x _ 4 , x _ 7 ) AND table ( x _ 7 )",
     "give ( agent = horse , theme = * cake ( nmod . beside = table ) , "
     "recipient = * mouse )"),
    # Double-object dative and its passive.
    ("Amelia gave Emma a strawberry .",
     "give . agent ( x _ 1 , Amelia ) AND give . recipient ( x _ 1 , Emma ) "
     "AND give . theme ( x _ 1 , x _ 4 ) AND strawberry ( x _ 4 )",
     "give ( agent = Amelia , recipient = Emma , theme = strawberry )"),
    ("Emma was given the box by the girl .",
     "* box ( x _ 4 ) ; * girl ( x _ 7 ) ; give . recipient ( x _ 2 , Emma ) "
     "AND give . theme ( x _ 2 , x _ 4 ) AND give . agent ( x _ 2 , x _ 7 )",
     "give ( recipient = Emma , theme = * box , agent = * girl )"),
    # nmod chain; `TV` is the noun `tv`; noun predicate before its nmod.
    ("The monkey ate the brick in a glass on a TV .",
     "* monkey ( x _ 1 ) ; * brick ( x _ 4 ) ; eat . agent ( x _ 2 , x _ 1 ) "
     "AND eat . theme ( x _ 2 , x _ 4 ) AND brick . nmod . in ( x _ 4 , x _ 7 )"
     " AND glass ( x _ 7 ) AND glass . nmod . on ( x _ 7 , x _ 10 ) AND "
     "tv ( x _ 10 )",
     "eat ( agent = * monkey , theme = * brick ( nmod . in = glass ( "
     "nmod . on = tv ) ) )"),
    # Subject nmod chain (gen, obj_pp_to_subj_pp).
    ("The baby on a tray in the house screamed .",
     "* baby ( x _ 1 ) ; * house ( x _ 7 ) ; baby . nmod . on ( x _ 1 , x _ 4 )"
     " AND tray ( x _ 4 ) AND tray . nmod . in ( x _ 4 , x _ 7 ) AND "
     "scream . agent ( x _ 8 , x _ 1 )",
     "scream ( agent = * baby ( nmod . on = tray ( nmod . in = * house ) ) )"),
    # ccomp.
    ("Emma said that the student painted a boy .",
     "* student ( x _ 4 ) ; say . agent ( x _ 1 , Emma ) AND "
     "say . ccomp ( x _ 1 , x _ 5 ) AND paint . agent ( x _ 5 , x _ 4 ) AND "
     "paint . theme ( x _ 5 , x _ 7 ) AND boy ( x _ 7 )",
     "say ( agent = Emma , ccomp = paint ( agent = * student , "
     "theme = boy ) )"),
    # xcomp: the control subject is repeated (common noun, then name).
    ("The girl needed to cook .",
     "* girl ( x _ 1 ) ; need . agent ( x _ 2 , x _ 1 ) AND "
     "need . xcomp ( x _ 2 , x _ 4 ) AND cook . agent ( x _ 4 , x _ 1 )",
     "need ( agent = * girl , xcomp = cook ( agent = * girl ) )"),
    ("A prisoner attempted to crawl .",
     "prisoner ( x _ 1 ) AND attempt . agent ( x _ 2 , x _ 1 ) AND "
     "attempt . xcomp ( x _ 2 , x _ 4 ) AND crawl . agent ( x _ 4 , x _ 1 )",
     "attempt ( agent = prisoner , xcomp = crawl ( agent = prisoner ) )"),
    ("David expected to cook .",
     "expect . agent ( x _ 1 , David ) AND expect . xcomp ( x _ 1 , x _ 3 ) "
     "AND cook . agent ( x _ 3 , David )",
     "expect ( agent = David , xcomp = cook ( agent = David ) )"),
    # xcomp inside ccomp.
    ("Liam hoped that the dog preferred to run .",
     "* dog ( x _ 4 ) ; hope . agent ( x _ 1 , Liam ) AND "
     "hope . ccomp ( x _ 1 , x _ 5 ) AND prefer . agent ( x _ 5 , x _ 4 ) AND "
     "prefer . xcomp ( x _ 5 , x _ 7 ) AND run . agent ( x _ 7 , x _ 4 )",
     "hope ( agent = Liam , ccomp = prefer ( agent = * dog , xcomp = run ( "
     "agent = * dog ) ) )"),
]

# Primitive rows: (word, LF) for each LAMBDA shape and a proper name.
PRIMITIVES = [
    ("touch", "LAMBDA a . LAMBDA b . LAMBDA e . touch . agent ( e , b ) AND "
              "touch . theme ( e , a )"),
    ("roll", "LAMBDA a . LAMBDA e . roll . theme ( e , a )"),
    ("giggle", "LAMBDA a . LAMBDA e . giggle . agent ( e , a )"),
    ("ball", "LAMBDA a . ball ( a )"),
]


@pytest.mark.parametrize("sentence, lf, varfree", CASES)
def test_to_varfree_exact(sentence, lf, varfree):
  assert cogs.to_varfree(lf, sentence) == varfree
  assert cogs.to_varfree(lf, sentence, primitives="lambda") == varfree


@pytest.mark.parametrize("sentence, lf, varfree", CASES)
def test_round_trip_exact(sentence, lf, varfree):
  assert cogs.from_varfree(varfree, sentence) == lf


def test_reverse_writes_cogs_conjunct_order():
  # Moving noun conjuncts does not change the tree (only an event's roles
  # are ordered); the reverse writes them back in COGS's order.
  sentence, lf, varfree = CASES[5]
  definites, body = lf.rsplit(" ; ", 1)
  conjuncts = body.split(" AND ")
  nouns = [c for c in conjuncts if c.count(",") == 0]
  moved = (definites + " ; " + " AND ".join(
      [c for c in conjuncts if c not in nouns] + nouns[::-1]))
  assert moved != lf
  assert cogs.to_varfree(moved, sentence) == varfree
  assert cogs.from_varfree(varfree, sentence) == lf


def test_reverse_follows_role_order():
  # Role order is kept (it is the word order), so changing it changes the
  # tree; a tree whose roles contradict the sentence is an error.
  with pytest.raises(InputError, match="falls on word"):
    cogs.from_varfree("help ( agent = dog , theme = rose )",
                      "A rose was helped by a dog .")


@pytest.mark.parametrize("word, lf", PRIMITIVES)
def test_primitives(word, lf):
  assert cogs.is_primitive(lf)
  assert cogs.to_varfree(lf, word) == word
  assert cogs.to_varfree(lf, word, primitives="lambda") == lf
  assert cogs.from_varfree(lf, word) == lf
  with pytest.raises(InputError, match="primitives='lambda'"):
    cogs.from_varfree(word, word)


def test_proper_name_primitive_is_reversible():
  for mode in cogs.PRIMITIVE_MODES:
    assert cogs.to_varfree("Emma", "Emma", primitives=mode) == "Emma"
  assert cogs.from_varfree("Emma", "Emma") == "Emma"


def test_primitive_must_match_sentence():
  with pytest.raises(InputError, match="does not match its sentence"):
    cogs.to_varfree(PRIMITIVES[1][1], "rolled")
  with pytest.raises(InputError, match="proper name"):
    cogs.to_varfree("cake", "cake")
  with pytest.raises(ValueError, match="primitives"):
    cogs.to_varfree(PRIMITIVES[1][1], "roll", primitives="lexicon")


@pytest.mark.parametrize("lf, match", [
    ("", "empty"),
    ("cake ( x _ 1 AND roll . theme ( x _ 2 , x _ 1 )", r"expected '\)'"),
    ("cake ( x _ 1 ) AND roll . theme ( x _ 2 , x _ 1 ) AND", "predicate"),
    ("cake ( x _ 1 ) roll . theme ( x _ 2 , x _ 1 )", "'AND' or the end"),
    ("cake ( x _ one ) AND roll . theme ( x _ 2 , x _ 1 )", "not a number"),
    ("cake ( x _ 1 ) AND roll . theme ( x _ 2 , cake )", "proper name"),
    ("cake ( x _ 1 ) AND roll ( x _ 2 , x _ 1 )", "nouns take 1"),
    ("cake ( x _ 1 ) AND roll . theme ( x _ 9 , x _ 1 )", "past the end"),
    ("cake ( x _ 1 ) AND roll . theme ( x _ 2 , x _ 3 )", "no predicate"),
    ("cake ( x _ 1 ) AND roll . theme ( x _ 2 , x _ 1 ) AND cake ( x _ 1 )",
     "two noun predicates"),
    ("cake ( x _ 1 ) AND roll . theme ( x _ 2 , x _ 1 ) AND "
     "eat . agent ( x _ 2 , x _ 1 )", "mixes verbs"),
    ("cake ( x _ 1 ) AND cake . agent ( x _ 1 , x _ 2 ) AND "
     "roll . theme ( x _ 2 , x _ 1 )", "may only have"),
    ("cake ( x _ 1 ) AND roll . theme ( x _ 2 , Emma )", "one root"),
    ("dog ( x _ 1 ) AND roll . theme ( x _ 2 , x _ 1 )", "word 1"),
])
def test_bad_logical_forms(lf, match):
  with pytest.raises(InputError, match=match) as info:
    cogs.to_varfree(lf, "A cake rolled .")
  assert info.value.source is None  # Callers add file and line.


@pytest.mark.parametrize("varfree, sentence, match", [
    ("roll ( theme = cake", "A cake rolled .", r"expected '\)'"),
    ("roll ( theme = cake ) )", "A cake rolled .", "the end"),
    ("roll ( theme cake )", "A cake rolled .", "expected '='"),
    ("cake", "A cake rolled .", "must be a verb"),
    ("roll ( theme = cake , agent = dog )", "A cake rolled .",
     "3 nouns, names and verbs but the sentence"),
    ("roll ( theme = dog )", "A cake rolled .", "falls on word 1"),
    ("roll ( theme = Cake )", "A cake rolled .", "falls on word 1"),
    ("need ( agent = * girl , xcomp = cook ( agent = * boy ) )",
     "The girl needed to cook .", "controller"),
    ("roll ( theme = cake ( nmod . in = box , agent = dog ) )",
     "A cake in a box rolled .", "mixes nmod"),
])
def test_bad_varfree(varfree, sentence, match):
  with pytest.raises(InputError, match=match):
    cogs.from_varfree(varfree, sentence)


def _write(path, text):
  path.write_text(text, encoding="utf-8")
  return str(path)


@pytest.mark.parametrize("varfree,valid", [
    ("need ( agent = * girl , xcomp = cook ( agent = * girl ) )", True),
    ("give ( agent = Camila , theme = cake ( nmod . in = storage ) , "
     "recipient = Emma )", True),
    ("touch", True),  # a primitive row
    ("Layla", True),
    # The control subject must repeat the controller.
    ("need ( agent = * girl , xcomp = cook ( agent = Emma ) )", False),
    ("walk ( agent = * Emma )", False),  # a definite name
    ("* Emma", False),
    ("* cake ( nmod . in = box )", False),  # no event at the root
    ("walk ( agent = Emma", False),  # unbalanced
    ("walk ( agent = Emma ) )", False),
])
def test_is_valid_varfree(varfree, valid):
  assert cogs.is_valid_varfree(varfree) == valid


def test_every_example_output_is_valid():
  for sentence, _, varfree in CASES:
    assert cogs.is_valid_varfree(varfree), (sentence, varfree)


def test_load_cogs_two_and_three_columns(tmp_path):
  s, lf, _ = CASES[0]
  path = _write(tmp_path / "x.tsv", f"{s}\t{lf}\tin_distribution\nroll\t"
                f"{PRIMITIVES[1][1]}\tprimitive\n")
  examples = cogs.load_cogs(path)
  assert examples == [cogs.CogsExample(s, lf, "in_distribution"),
                      cogs.CogsExample("roll", PRIMITIVES[1][1], "primitive")]
  path = _write(tmp_path / "y.tsv", f"{s}\t{lf}\n")
  assert cogs.load_cogs(path) == [cogs.CogsExample(s, lf, None)]


def test_load_cogs_malformed(tmp_path):
  s, lf, _ = CASES[0]
  path = _write(tmp_path / "bad.tsv", f"{s}\t{lf}\n{s}\n{s}\t{lf}\ta\tb\n")
  with pytest.raises(InputError) as info:
    cogs.load_cogs(path)
  assert (info.value.source, info.value.line) == (path, 2)
  stats = ReadStats()
  assert len(cogs.load_cogs(path, skip_malformed=True, stats=stats)) == 1
  assert [n for n, _ in stats.skipped] == [2, 3]
  with pytest.raises(InputError, match="no such file"):
    cogs.load_cogs(str(tmp_path / "missing.tsv"))
  # Bytes that are not UTF-8: the file and the line.
  bad = tmp_path / "latin1.tsv"
  bad.write_bytes(f"{s}\t{lf}\n".encode() + b"caf\xe9\tx\n")
  with pytest.raises(InputError) as info:
    cogs.load_cogs(str(bad))
  assert (info.value.source, info.value.line) == (str(bad), 2)


def test_convert_file(tmp_path):
  lines = "".join(f"{s}\t{lf}\tcat\n" for s, lf, _ in CASES)
  lines += "".join(f"{w}\t{lf}\tprimitive\n" for w, lf in PRIMITIVES)
  src = _write(tmp_path / "train.tsv", lines)
  out = tmp_path / "out" / "train.tsv"
  assert cogs.convert_file(src, str(out)) == len(CASES) + len(PRIMITIVES)
  expected = [f"{s}\t{v}" for s, _, v in CASES] + [
      f"{w}\t{w}" for w, _ in PRIMITIVES]
  assert out.read_text(encoding="utf-8").splitlines() == expected
  cogs.convert_file(src, str(out), primitives="lambda")
  assert out.read_text(encoding="utf-8").splitlines()[-1] == (
      f"ball\t{PRIMITIVES[-1][1]}")


def test_convert_file_names_bad_line(tmp_path):
  s, lf, _ = CASES[0]
  src = _write(tmp_path / "bad.tsv", f"{s}\t{lf}\n{s}\t{lf} AND\n")
  with pytest.raises(InputError) as info:
    cogs.convert_file(src, str(tmp_path / "out.tsv"))
  assert (info.value.source, info.value.line) == (src, 2)
  assert "bad logical form" in str(info.value)
  assert "variable-free already" not in str(info.value)
  assert not (tmp_path / "out.tsv").exists()
  # Already variable-free (cogs_varfree/ given to `prepare cogs`): said.
  varfree = _write(tmp_path / "vf.tsv",
                   "A rose was helped by a dog .\t"
                   "help ( theme = rose , agent = dog )\n")
  with pytest.raises(InputError, match=r"looks variable-free already") as info:
    cogs.convert_file(varfree, str(tmp_path / "out.tsv"))
  assert (info.value.source, info.value.line) == (varfree, 1)


def test_reproduce_script(tmp_path, capsys, load_script):
  script = load_script("reproduce_cogs_varfree")
  cogs_dir, vf_dir = tmp_path / "cogs", tmp_path / "cogs_varfree"
  cogs_dir.mkdir()
  vf_dir.mkdir()
  for split in ("train", "dev", "test"):
    _write(cogs_dir / f"{split}.tsv",
           "".join(f"{s}\t{lf}\n" for s, lf, _ in CASES) +
           "".join(f"{w}\t{lf}\n" for w, lf in PRIMITIVES))
    _write(vf_dir / f"{split}.tsv",
           "".join(f"{s}\t{v}\n" for s, _, v in CASES) +
           "".join(f"{w}\t{w}\n" for w, _ in PRIMITIVES))
  assert script.main(["x", str(cogs_dir)]) == 0
  out = capsys.readouterr().out
  assert "ALL CHECKS PASS" in out and "gen: not present" in out
  _write(vf_dir / "dev.tsv", f"{CASES[0][0]}\tdust ( agent = * sailor )\n")
  assert script.main(["x", str(cogs_dir)]) == 1
  _write(vf_dir / "dev.tsv", "".join(f"{s}\tx\n" for s, _, _ in CASES) +
         "".join(f"{w}\t{w}\n" for w, _ in PRIMITIVES))
  assert script.main(["x", str(cogs_dir)]) == 1
  assert "word form = published: 4/" in capsys.readouterr().out


def test_prepare_keeps_the_gen_categories_beside_the_parts(tmp_path):
  """A prepared COGS directory used as `--dataset tsv` data keeps its
  per-category scores (a newcomer's finding)."""
  from csl_jax.data import registry  # pylint: disable=g-import-not-at-top
  src, out = tmp_path / "cogs", tmp_path / "out"
  src.mkdir()
  rows = "".join(f"{s}\t{lf}\n" for s, lf, _ in CASES)
  for part in ("train", "dev", "test", "gen"):
    _write(src / f"{part}.tsv", rows)
  categories = "".join(f"cat_{i % 2}\n" for i in range(len(CASES)))
  _write(src / "gen_categories.txt", categories)
  summary = registry.prepare(str(out), "cogs", data_dir=str(src))
  assert summary["side_files"] == ["gen_categories.txt"]
  assert (out / "gen_categories.txt").read_text() == categories
  (src / "gen_categories.txt").unlink()  # none there: none copied
  other = tmp_path / "other"
  assert "side_files" not in registry.prepare(str(other), "cogs",
                                              data_dir=str(src))
  assert not (other / "gen_categories.txt").exists()
