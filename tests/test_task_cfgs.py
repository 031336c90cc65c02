"""Tests for the shipped task output CFGs: tasks/{geoquery,cogs}/*.cfg.

Real outputs are copied by hand from the benchmark data; the data itself is
checked in full by scripts/check_output_cfgs.py. Slot tests use the CSL
notation: `NT` is a slot, `NT_k` a slot with id k (equal ids, same
category). A rule target found in induction is a fragment, so it is valid
iff some category derives it (`derivable_categories` is non-empty).
"""

import os

import pytest

from csl_jax.qcfg.output_cfg import load_output_cfg

numba = pytest.importorskip("numba")

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Categories of values, as opposed to those of function symbols (see the
# comment at the top of tasks/geoquery/funql.cfg).
GEOQUERY_VALUES = ("Query", "City", "State", "River", "Place", "Country",
                   "Num", "Const")


@pytest.fixture(scope="module")
def geoquery():
  return load_output_cfg(os.path.join(_REPO_ROOT, "tasks", "geoquery",
                                      "funql.cfg"))


@pytest.fixture(scope="module")
def cogs():
  return load_output_cfg(os.path.join(_REPO_ROOT, "tasks", "cogs",
                                      "varfree.cfg"))


@pytest.fixture(scope="module")
def cogs_typed():
  return load_output_cfg(os.path.join(_REPO_ROOT, "tasks", "cogs",
                                      "typed.cfg"))


def _slots(text):
  """Tokens, is_slot and slot ids of a target such as `NT_1 ( NT_2 )`."""
  tokens = text.split()
  is_slot = [t == "NT" or t.startswith("NT_") for t in tokens]
  ids = [int(t[3:]) if t.startswith("NT_") else -1 for t in tokens]
  return tokens, is_slot, ids


def _derivable(cfg, text, slot_categories=None):
  tokens, is_slot, ids = _slots(text)
  return cfg.derivable_categories(tokens, is_slot, slot_categories, ids)


def _whole(cfg, text):
  """Whether the start category derives text (slots: any category)."""
  tokens, is_slot, ids = _slots(text)
  return cfg.recognizes_with_slots(tokens, is_slot, slot_ids=ids)


# --- GeoQuery ----------------------------------------------------------------

GEOQUERY_REAL = [
    "answer ( intersection ( city , loc_2 ( m0 ) ) )",
    "answer ( state )",
    "answer ( count ( intersection ( intersection ( city , m0 ) , "
    "loc_2 ( m1 ) ) ) )",
    "answer ( count ( intersection ( river , loc_2 ( most ( state , loc_1 , "
    "river ) ) ) ) )",
    "answer ( fewest ( state , next_to_2 , exclude ( exclude ( state , m0 ) "
    ", m1 ) ) )",
    "answer ( intersection ( river , traverse_2 ( fewest ( state , loc_1 , "
    "city ) ) ) )",
    "answer ( population_1 ( largest_one ( area_1 , state ) ) )",
    "answer ( largest_one ( population_1 , capital_1 ( state ) ) )",
    "answer ( smallest_one ( population_1 , city ) )",
    "answer ( sum ( area_1 ( state ) ) )",
    "answer ( len ( longest ( intersection ( river , loc_2 ( m0 ) ) ) ) )",
    "answer ( highest ( intersection ( place , loc_2 ( intersection ( state ,"
    " loc_1 ( intersection ( place , elevation_2 ( 0 ) ) ) ) ) ) ) )",
    "answer ( count ( intersection ( state , low_point_2 ( lower_2 ( "
    "low_point_1 ( m0 ) ) ) ) ) )",
    "answer ( intersection ( state , high_point_2 ( higher_2 ( high_point_1 "
    "( m0 ) ) ) ) )",
    "answer ( intersection ( state , capital_2 ( m0 ) ) )",
    "answer ( count ( exclude ( state , loc_1 ( river ) ) ) )",
    "answer ( intersection ( state , next_to_2 ( intersection ( state , "
    "traverse_1 ( m0 ) ) ) ) )",  # CSL paper, Table 4
]

GEOQUERY_JUNK = [
    "answer ( ( m0 )",
    "answer ( m0",
    "answer ( m0 ) )",
    "answer ( )",
    "state",
    "answer ( loc_1 ( m0 , m1 ) )",
    "answer ( intersection ( state ) )",
    "answer ( intersection ( state , m0 , m1 ) )",
    "answer ( largest_one ( population_1 ) )",
    "answer ( most ( state , loc_1 ) )",
    "answer ( population_1 )",
    "answer ( len ( state ) )",
    "answer ( count ( 0 ) )",
    "answer ( most ( loc_1 , state , river ) )",
    "answer ( m10 )",
]


@pytest.mark.parametrize("text", GEOQUERY_REAL)
def test_geoquery_recognizes_real_outputs(geoquery, text):
  assert geoquery.recognizes(text.split())


@pytest.mark.parametrize("text", GEOQUERY_JUNK)
def test_geoquery_rejects_junk(geoquery, text):
  assert not geoquery.recognizes(text.split())


def test_geoquery_start_and_types(geoquery):
  assert geoquery.start == "Query"
  assert geoquery.derivable_categories("m0".split()) >= {
      "City", "State", "River", "Place", "Country"}
  assert "Num" not in geoquery.derivable_categories(["m0"])
  assert geoquery.derivable_categories(["0"]) == {"Num"}
  assert "State" in geoquery.derivable_categories(["state"])
  assert geoquery.derivable_categories(["("]) == frozenset()
  # A relation alone is no value, but is one as a largest_one argument.
  assert not geoquery.derivable_categories(["population_1"]) & set(
      GEOQUERY_VALUES)


@pytest.mark.parametrize("text", [
    "answer ( NT )",
    "answer ( intersection ( NT_1 , next_to_2 ( NT_2 ) ) )",  # Table 5
    "answer ( largest_one ( NT , NT ) )",
    "answer ( most ( state , NT , NT ) )",
])
def test_geoquery_slot_targets_from_start(geoquery, text):
  assert _whole(geoquery, text)


def test_geoquery_slot_fragments(geoquery):
  assert _derivable(geoquery, "intersection ( NT_1 , NT_2 )") >= {
      "City", "State", "River", "Place", "Country"}
  assert _derivable(geoquery, "traverse_1 ( NT )") == {
      "City", "State", "Country"}
  assert _derivable(geoquery, "population_1 ( NT )") == {"Num"}
  for junk in ("answer ( NT , NT )", "NT ) (", "loc_1 ( NT , NT )",
               "answer ( NT ) NT", "( NT )"):
    assert not _derivable(geoquery, junk), junk


def test_geoquery_function_symbol_slots(geoquery):
  # Relations have categories (they occur bare in largest_one/most), so a
  # slot may stand for one: `NT ( m0 )` with NT = StateToNum etc.
  assert {"Num", "State"} <= _derivable(geoquery, "NT ( m0 )")
  assert _whole(geoquery, "answer ( NT ( m0 ) )")
  # With slots restricted to value categories it is rejected.
  assert not _derivable(geoquery, "NT ( m0 )", GEOQUERY_VALUES)
  assert _derivable(geoquery, "answer ( NT )", GEOQUERY_VALUES) == {"Query"}


def test_geoquery_repeated_slot_ids(geoquery):
  # One category cannot derive both a measure and a set of states.
  assert _whole(geoquery, "answer ( largest_one ( NT_1 , NT_2 ) )")
  assert not _whole(geoquery, "answer ( largest_one ( NT_1 , NT_1 ) )")
  assert _whole(geoquery, "answer ( exclude ( NT_1 , NT_1 ) )")


# --- COGS ---------------------------------------------------------------------

COGS_REAL = [
    "help ( theme = rose , agent = dog )",
    "dust ( agent = * sailor , theme = boy )",
    "need ( agent = * girl , xcomp = cook ( agent = * girl ) )",
    "hope ( agent = Liam , ccomp = prefer ( agent = * dog , xcomp = run ( "
    "agent = * dog ) ) )",
    "prove ( agent = Emma , ccomp = offer ( agent = citizen , recipient = "
    "frog , theme = cake ( nmod . on = * stage ) ) )",
    "ship ( agent = * girl , recipient = * cat , theme = * brush ( nmod . "
    "beside = machine ) )",
    "scream ( agent = * baby ( nmod . on = tray ( nmod . in = * house ) ) )",
    "serve ( agent = * spokesman ( nmod . in = * house ) , recipient = Emma "
    ", theme = * rose )",
    "eat ( agent = hedgehog , theme = * cake ( nmod . on = * bed ) )",
    "give ( agent = Camila , theme = cake ( nmod . in = storage ) , "
    "recipient = Emma )",  # CSL paper, Table 4
    "touch",
    "Layla",
]

COGS_JUNK = [
    "give ( agent = Emma",
    "give ( agent = Emma ) )",
    "sleep ( )",
    "* sleep ( agent = Emma )",
    "* Emma",
    "sleep ( agent = Emma , agent = Liam )",
    "eat ( agent = Emma , theme = cake ( nmod . under = box ) )",
    "eat ( agent = Emma , theme = cake ( nmod . in = box , nmod . on = "
    "table ) )",
    "eat ( agent = Emma ( agent = Liam ) )",
    "say ( agent = Emma , ccomp = cake )",
    "eat ( agent = * * Emma )",
    "cake ( nmod . in = box )",
    "eat ( agent = hedgehogz )",
]


@pytest.mark.parametrize("text", COGS_REAL)
def test_cogs_recognizes_real_outputs(cogs, text):
  assert cogs.recognizes(text.split())


@pytest.mark.parametrize("text", COGS_JUNK)
def test_cogs_rejects_junk(cogs, text):
  assert not cogs.recognizes(text.split())


# Well-formed but ill-typed: varfree.cfg accepts them, typed.cfg must not.
COGS_ILL_TYPED = [
    "cake ( agent = Emma )",  # a noun as a verb
    "Emma ( agent = Liam )",  # a name as a verb
    "eat ( agent = Emma , theme = sleep )",  # a verb as a noun
    "cook ( agent = Emma , theme = cake , recipient = dog )",  # no dative
    "sleep ( agent = Emma , ccomp = run ( agent = Liam ) )",  # no ccomp
    # A control complement has an agent only.
    "need ( agent = * girl , xcomp = eat ( agent = * girl , theme = cake ) )",
]


@pytest.mark.parametrize("text", COGS_REAL)
def test_cogs_typed_recognizes_real_outputs(cogs_typed, text):
  assert cogs_typed.recognizes(text.split())


@pytest.mark.parametrize("text", COGS_JUNK + COGS_ILL_TYPED)
def test_cogs_typed_rejects_junk_and_ill_typed(cogs, cogs_typed, text):
  assert not cogs_typed.recognizes(text.split())
  if text in COGS_ILL_TYPED:
    assert cogs.recognizes(text.split())  # only the typing rules it out


def test_cogs_one_primitive_category(cogs):
  for word in ("sleep", "cake", "Emma", "hedgehog"):
    assert cogs.derivable_categories([word]) == {
        "Root", "Word", "Noun", "Entity"}, word
  assert cogs.derivable_categories(["in"]) == {"Prep"}
  assert cogs.derivable_categories(["agent"]) == frozenset()


@pytest.mark.parametrize("text", [
    # CSL paper, Table 5: the verb is a slot.
    "NT_2 ( agent = NT_1 , theme = NT_3 , recipient = NT_4 )",
    "NT ( agent = NT , theme = NT )",
    "sleep ( agent = NT )",
    "NT ( theme = NT )",
    "NT ( agent = NT , NT )",  # the second slot: a tail of the role list
    "NT ( NT )",
    "like ( agent = NT , ccomp = NT )",
    "NT ( agent = NT , xcomp = NT ( agent = NT ) )",
])
def test_cogs_slot_targets_from_start(cogs, text):
  assert _whole(cogs, text)


def test_cogs_slot_fragments(cogs):
  # CSL paper, Table 5: a PP with the preposition as a slot is an entity.
  assert _derivable(cogs, "NT_1 ( nmod . NT_2 = NT_3 )") == {"Entity"}
  assert not _whole(cogs, "NT_1 ( nmod . NT_2 = NT_3 )")
  assert "Entity" in _derivable(cogs, "* NT")
  assert "Roles_AT" in _derivable(cogs, "theme = NT , agent = NT")
  for junk in ("sleep ( agent = NT , agent = NT )", "* NT ( agent = NT )",
               "NT ( NT = NT )", "NT = NT", "NT ( agent = NT",
               "NT ( nmod . NT = NT , nmod . NT = NT )"):
    assert not _derivable(cogs, junk), junk


def test_cogs_repeated_slot_ids(cogs):
  # No category derives both a head word and a preposition.
  assert _derivable(cogs, "NT_1 ( nmod . NT_2 = NT_3 )")
  assert not _derivable(cogs, "NT_1 ( nmod . NT_1 = NT_3 )")
