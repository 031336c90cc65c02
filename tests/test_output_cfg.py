"""Tests for the output CFG text format and its CKY recognizer."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from csl_jax.errors import InputError
from csl_jax.qcfg.output_cfg import (OutputCFG, Production, Symbol,
                                     format_output_cfg, load_output_cfg,
                                     parse_output_cfg)

numba = pytest.importorskip("numba")

from csl_jax.qcfg import cfg_kernel  # pylint: disable=g-import-not-at-top
from csl_jax.qcfg import cfg_reference  # pylint: disable=g-import-not-at-top

FUNQL = """\
# A tiny FunQL-like grammar.
Q -> answer ( E )
E -> city | state | river
E -> loc_2 ( E ) | count ( E )
E -> intersection ( E , E )
"""

PARENS = "S -> ( ) | ( S ) | S S\n"

ARITH = """\
E -> E + T | T
T -> T * F | F
F -> ( E ) | num
"""


def _ok(cfg, text, **kwargs):
  return cfg.recognizes(text.split(), **kwargs)


# --- Text format -----------------------------------------------------------


@pytest.mark.parametrize("text,line,fragment", [
    ("S -> a\nS a b\n", 2, "no `->`"),
    ("S -> a\n-> b\n", 2, "exactly one category"),
    ("S T -> a\n", 1, "exactly one category"),
    ("S -> a\n\nS ->\n", 3, "epsilon"),
    ("S -> a |\n", 1, "epsilon"),
    ("S -> | a\n", 1, "epsilon"),
    ("S -> a -> b\n", 1, "second `->`"),
    ("%begin S\nS -> a\n", 1, "unknown directive"),
    ("%start\nS -> a\n", 1, "%start CATEGORY"),
    ("%start S\n%start S\nS -> a\n", 2, "second %start"),
    ("S -> a\n# c\n%start T\n", 3, "T has no productions"),
    ("S -> a\nS -> b | a\n", 2, "duplicate production (first on line 1)"),
    ('S -> "a\n', 1, "bad quoted symbol"),
    ('S -> ""\n', 1, "bad quoted symbol"),
    ('"S" -> a\n', 1, "category name"),
    ("| -> a\n", 1, "category name"),
])
def test_parse_errors_name_source_and_line(text, line, fragment):
  with pytest.raises(InputError) as info:
    parse_output_cfg(text, source="g.cfg")
  assert info.value.line == line
  assert str(info.value).startswith(f"g.cfg:{line}: ")
  assert fragment in str(info.value)


def test_no_productions_is_an_error():
  with pytest.raises(InputError, match="no productions"):
    parse_output_cfg("# only a comment\n\n")


def test_parse_categories_terminals_quotes_and_start():
  cfg = parse_output_cfg(
      '  # comment\n%start T\nS -> "S" S | x # y\n\nT -> S "->" "|" """\n')
  assert cfg.start == "T"
  assert cfg.categories == ("S", "T")
  assert cfg.terminals == ("S", "x", "#", "y", "->", "|", '"')
  assert cfg.productions[0] == Production(
      "S", (Symbol("S", True), Symbol("S", False)))
  assert _ok(cfg, 'S x # y -> | "')
  assert _ok(cfg, 'S S x # y -> | "')
  assert not _ok(cfg, 'S -> | "')


def test_load_output_cfg_names_the_file(tmp_path):
  path = tmp_path / "out.cfg"
  path.write_text(FUNQL, encoding="utf-8")
  assert load_output_cfg(path) == parse_output_cfg(FUNQL)
  path.write_text("Q -> a\nQ b\n", encoding="utf-8")
  with pytest.raises(InputError, match=f"^{path}:2: "):
    load_output_cfg(path)


def test_format_round_trips_canonical_text():
  text = ('%start T\nS -> "S" S\nS -> x\nT -> S "->" "|" """ ""a"\n'
          'T -> a"b # %\n')
  assert format_output_cfg(parse_output_cfg(text)) == text
  cfg = parse_output_cfg(FUNQL)
  assert parse_output_cfg(format_output_cfg(cfg)) == cfg
  assert format_output_cfg(cfg).startswith("Q -> answer ( E )\nE -> city\n")


def test_constructor_validates():
  with pytest.raises(ValueError, match="epsilon"):
    OutputCFG((Production("S", ()),))
  with pytest.raises(ValueError, match="no productions"):
    OutputCFG.from_pairs([("S", "a")], start="T")
  with pytest.raises(ValueError, match="no productions"):
    OutputCFG((Production("S", (Symbol("T", False),)),))
  with pytest.raises(ValueError, match="duplicate"):
    OutputCFG.from_pairs([("S", "a"), ("S", ["a"])])
  assert OutputCFG.from_pairs([("S", "a T"), ("T", "b")]) == parse_output_cfg(
      "S -> a T\nT -> b\n")


_NAMES = st.sampled_from(["S", "T", "x", "->", "|", '"', '""', '"q"', "#",
                          "%", "a\"b"])


@st.composite
def _any_grammar(draw):
  cats = draw(st.lists(st.sampled_from(["S", "T", "U", "a\"b"]), min_size=1,
                       max_size=3, unique=True))
  symbol = st.one_of(st.sampled_from(cats).map(lambda c: Symbol(c, False)),
                     _NAMES.map(lambda t: Symbol(t, True)))
  rules = draw(st.lists(
      st.tuples(st.sampled_from(cats), st.lists(symbol, min_size=1,
                                                max_size=3).map(tuple)),
      min_size=1, max_size=8, unique=True))
  rules += [(c, (Symbol("x", True),)) for c in cats
            if c not in {lhs for lhs, _ in rules}]
  return OutputCFG(tuple(Production(*r) for r in rules),
                   draw(st.sampled_from(cats)))


@settings(max_examples=100, deadline=None)
@given(_any_grammar())
def test_format_round_trip_property(cfg):
  text = format_output_cfg(cfg)
  assert parse_output_cfg(text) == cfg
  assert format_output_cfg(parse_output_cfg(text)) == text


# --- Recognition with known answers ------------------------------------------


def test_funql():
  cfg = parse_output_cfg(FUNQL)
  assert _ok(cfg, "answer ( city )")
  assert _ok(cfg,
             "answer ( intersection ( city , loc_2 ( count ( state ) ) ) )")
  assert not _ok(cfg, "answer ( city")
  assert not _ok(cfg, "answer ( city , state )")
  assert not _ok(cfg, "answer ( unknown_word )")
  assert not _ok(cfg, "")
  assert not _ok(cfg, "city")
  assert _ok(cfg, "city", category="E")
  assert _ok(cfg, "city", category=["Q", "E"])
  assert cfg.derivable_categories("loc_2 ( river )".split()) == {"E"}


def test_balanced_parentheses():
  cfg = parse_output_cfg(PARENS)
  for text in ["( )", "( ) ( )", "( ( ) ( ( ) ) )", "( ) ( ( ) ) ( )"]:
    assert _ok(cfg, text), text
  for text in ["(", ") (", "( ) )", "( ( )", "( ) ( ( ) ) ) ("]:
    assert not _ok(cfg, text), text
  deep = ["("] * 150 + [")"] * 150
  assert cfg.recognizes(deep)
  assert not cfg.recognizes(deep[1:])
  assert cfg.recognizes(["(", ")"] * 100)


def test_arithmetic():
  cfg = parse_output_cfg(ARITH)
  assert _ok(cfg, "num")
  assert _ok(cfg, "num + num * ( num + num ) * num")
  assert not _ok(cfg, "num + * num")
  assert not _ok(cfg, "( num + num")
  assert cfg.derivable_categories(["num"]) == {"E", "T", "F"}
  assert cfg.derivable_categories("num * num".split()) == {"E", "T"}


def test_cyclic_unary_rules():
  cfg = parse_output_cfg("S -> A B\nA -> B | A | a\nB -> A | C\nC -> c | S\n")
  assert _ok(cfg, "a c")
  assert _ok(cfg, "c a")
  assert cfg.derivable_categories(["a"]) == {"A", "B"}
  # S -> A B and C -> S: a span deriving S also derives C, B and A.
  assert cfg.derivable_categories("a c".split()) == {"S", "A", "B", "C"}
  assert _ok(cfg, "a c a", category="S")
  assert not _ok(cfg, "b")


def test_tokens_must_not_be_a_string():
  with pytest.raises(TypeError):
    parse_output_cfg(PARENS).recognizes("( )")


def test_unknown_category_is_an_error():
  with pytest.raises(ValueError, match="unknown category"):
    parse_output_cfg(PARENS).recognizes(["(", ")"], category="X")


# --- Slots ------------------------------------------------------------------


def test_slots_funql():
  cfg = parse_output_cfg(FUNQL)
  tokens = "answer ( intersection ( NT_1 , loc_2 ( NT_2 ) ) )".split()
  is_slot = [t.startswith("NT_") for t in tokens]
  ids = [int(t[3:]) if t.startswith("NT_") else -1 for t in tokens]
  assert cfg.recognizes_with_slots(tokens, is_slot)
  assert cfg.recognizes_with_slots(tokens, is_slot, slot_ids=ids)
  assert cfg.recognizes_with_slots(tokens, is_slot, slot_categories=["E"])
  assert not cfg.recognizes_with_slots(tokens, is_slot, slot_categories=["Q"])
  # A slot is a category, never a terminal.
  assert not cfg.recognizes_with_slots(["answer", "(", "x", "NT"],
                                       [False, False, False, True])
  # A whole output can be one slot of the start category.
  assert cfg.recognizes_with_slots(["NT"], [True])
  assert cfg.derivable_categories(["NT"], [True]) == {"Q", "E"}
  assert cfg.derivable_categories(["loc_2", "(", "NT", ")"],
                                  [False, False, True, False]) == {"E"}


SAME_OR_DIFFERENT = """\
S -> f ( X , Y ) | g ( X , X )
X -> x
Y -> y
"""


def test_repeated_slot_ids_take_the_same_category():
  cfg = parse_output_cfg(SAME_OR_DIFFERENT)
  f = "f ( NT , NT )".split()
  g = "g ( NT , NT )".split()
  is_slot = [False, False, True, False, True, False]
  same, different = [-1, -1, 0, -1, 0, -1], [-1, -1, 0, -1, 1, -1]
  assert cfg.recognizes_with_slots(f, is_slot)
  assert cfg.recognizes_with_slots(f, is_slot, slot_ids=different)
  assert not cfg.recognizes_with_slots(f, is_slot, slot_ids=same)
  assert cfg.recognizes_with_slots(g, is_slot, slot_ids=same)
  assert not cfg.recognizes_with_slots(g, is_slot, slot_categories=["Y"])
  assert cfg.derivable_categories(f, is_slot, slot_ids=same) == set()
  for slot_ids in [same, different]:
    assert cfg_reference.recognizes_with_slots(
        cfg, f, is_slot, slot_ids=slot_ids) == (
        cfg.recognizes_with_slots(f, is_slot, slot_ids=slot_ids))


def test_repeated_ids_need_a_consistent_choice_across_groups():
  # Each id alone has options, but only (x, x) and (y, y) pairs parse.
  cfg = parse_output_cfg("S -> A B\nA -> X X | Y Y\nB -> X Y\n"
                         "X -> x\nY -> y\n")
  tokens = ["N"] * 4
  assert cfg.recognizes_with_slots(tokens, [True] * 4, slot_ids=[0, 0, 1, 2])
  assert not cfg.recognizes_with_slots(tokens, [True] * 4,
                                       slot_ids=[0, 0, 1, 1])
  assert not cfg.recognizes_with_slots(tokens, [True] * 4,
                                       slot_ids=[0, 1, 0, 1])
  assert cfg.recognizes_with_slots(tokens, [True] * 4, slot_ids=[0, 1, 0, 2])


def test_slot_argument_checks():
  cfg = parse_output_cfg(PARENS)
  with pytest.raises(ValueError, match="differ in length"):
    cfg.recognizes_with_slots(["(", ")"], [False])
  with pytest.raises(ValueError, match="is no slot"):
    cfg.recognizes_with_slots(["(", ")"], [False, False], slot_ids=[0, -1])


# --- Kernel -----------------------------------------------------------------


def test_binarization_shares_suffixes():
  # S -> a B c ; S -> d B c share the intermediate for `B c`.
  g = cfg_kernel.encode_cfg(2, 3, [(0, [~0, 1, ~2]), (0, [~1, 1, ~2]),
                                       (1, [~0])])
  # 2 categories, 3 preterminals, 1 shared intermediate.
  assert g.num_symbols == 6
  codes = np.array([0, cfg_kernel.slot_code(0), 2])
  masks = np.array([[False, True]])
  assert cfg_kernel.top_categories(g, codes, masks).tolist() == [True, False]
  with pytest.raises(ValueError, match="missing slot_masks row"):
    cfg_kernel.top_categories(g, np.array([cfg_kernel.slot_code(1)]), masks)


def test_kernel_retries_when_the_chart_is_full():
  # E -> E + E | num, on num + num + num + num.
  g = cfg_kernel.encode_cfg(1, 2, [(0, [0, ~0, 0]), (0, [~1])])
  codes = np.array([1, 0, 1, 0, 1, 0, 1])
  no_slots = np.zeros((1, 1), bool)
  for capacity in [0, 1, 2, 5]:
    top = cfg_kernel.top_categories(g, codes, no_slots, capacity)
    assert top.tolist() == [True]
  assert cfg_kernel.top_categories(g, codes[:-1], no_slots, 1).tolist() == [
      False]


_CATEGORIES = ["A", "B", "C"]
_TERMINALS = ["a", "b", "A"]  # The terminal "A" is not the category A.


@st.composite
def _small_grammar(draw):
  cats = _CATEGORIES[:draw(st.integers(1, 3))]
  symbol = st.one_of(st.sampled_from(cats).map(lambda c: Symbol(c, False)),
                     st.sampled_from(_TERMINALS).map(lambda t: Symbol(t, True)))
  rules = draw(st.lists(
      st.tuples(st.sampled_from(cats), st.lists(symbol, min_size=1,
                                                max_size=3).map(tuple)),
      min_size=1, max_size=9, unique=True))
  rules += [(c, (Symbol("a", True),)) for c in cats
            if c not in {lhs for lhs, _ in rules}]
  return OutputCFG(tuple(Production(*r) for r in rules),
                   draw(st.sampled_from(cats)))


@st.composite
def _slotted_tokens(draw, max_slots=3):
  tokens = draw(st.lists(st.sampled_from(_TERMINALS + ["z"]), max_size=6))
  is_slot = draw(st.lists(st.booleans(), min_size=len(tokens),
                          max_size=len(tokens)))
  positions = [i for i, s in enumerate(is_slot) if s][max_slots:]
  for i in positions:
    is_slot[i] = False
  slot_ids = [draw(st.integers(-1, 1)) if s else -1 for s in is_slot]
  return tokens, is_slot, slot_ids


def _derived_example(cfg, data, max_len=7):
  """A sentential form of cfg (categories left become slots), maybe mutated.

  Random strings rarely parse; these mostly do, or nearly do.
  """
  form = [Symbol(cfg.start, False)]
  for _ in range(data.draw(st.integers(0, 4))):
    open_positions = [i for i, s in enumerate(form) if not s.terminal]
    if not open_positions:
      break
    i = data.draw(st.sampled_from(open_positions))
    rhs = data.draw(st.sampled_from(
        [p.rhs for p in cfg.productions if p.lhs == form[i].name]))
    if len(form) - 1 + len(rhs) <= max_len:
      form[i:i + 1] = rhs
  if data.draw(st.booleans()):  # A near miss.
    form[data.draw(st.integers(0, len(form) - 1))] = Symbol(
        data.draw(st.sampled_from(_TERMINALS)), True)
  is_slot = [not s.terminal for s in form]
  # Slot ids: none, one per category (consistent), or random; <= 3 groups.
  mode = data.draw(st.sampled_from(["none", "category", "random"]))
  slot_ids = [-1 if not slot or mode == "none" else
              cfg.categories.index(s.name) if mode == "category" else
              data.draw(st.integers(0, 1)) for s, slot in zip(form, is_slot)]
  groups = {(i if sid < 0 else -1 - sid)
            for i, (sid, slot) in enumerate(zip(slot_ids, is_slot)) if slot}
  assume(len(groups) <= 3)
  return [s.name for s in form], is_slot, slot_ids


@settings(max_examples=150, deadline=None)
@given(_small_grammar(), _slotted_tokens(max_slots=0))
def test_kernel_matches_reference_without_slots(cfg, example):
  tokens, _, _ = example
  assert cfg.derivable_categories(tokens) == (
      cfg_reference.derivable_categories(cfg, tokens))
  assert cfg.recognizes(tokens) == cfg_reference.recognizes_with_slots(
      cfg, tokens)


@settings(max_examples=150, deadline=None)
@given(_small_grammar(), _slotted_tokens(), st.data())
def test_kernel_matches_reference_with_slots(cfg, example, data):
  tokens, is_slot, slot_ids = example
  if data.draw(st.booleans()):
    tokens, is_slot, slot_ids = _derived_example(cfg, data)
  slot_categories = data.draw(st.one_of(st.none(), st.lists(
      st.sampled_from(cfg.categories), unique=True)))
  expected = cfg_reference.derivable_categories(cfg, tokens, is_slot,
                                                slot_categories, slot_ids)
  assert cfg.derivable_categories(tokens, is_slot, slot_categories,
                                  slot_ids) == expected
  for category in cfg.categories:
    assert cfg.recognizes_with_slots(
        tokens, is_slot, slot_categories, slot_ids,
        category=category) == (category in expected)
  # Any of several goals (the induction asks for any category).
  assert cfg.recognizes_with_slots(
      tokens, is_slot, slot_categories, slot_ids,
      category=cfg.categories) == bool(expected)


@settings(max_examples=150, deadline=None)
@given(_small_grammar(), _slotted_tokens(), st.data())
def test_nt_slot_recognizer_matches_reference(cfg, example, data):
  # Slots written NT_k as in rule targets; a repeated NT_k takes one
  # category, NT_k used once is a free slot.
  tokens, is_slot, slot_ids = example
  if data.draw(st.booleans()):
    tokens, is_slot, slot_ids = _derived_example(cfg, data)
  fresh = iter(range(10, 20))
  ids = [(sid + 1 if sid >= 0 else next(fresh)) if slot else -1
         for slot, sid in zip(is_slot, slot_ids)]
  written = [f"NT_{k}" if k > 0 else t for t, k in zip(tokens, ids)]
  goals = data.draw(st.lists(st.sampled_from(cfg.categories), min_size=1,
                             unique=True))
  expected = cfg_reference.recognizes_with_slots(
      cfg, tokens, is_slot, slot_ids=ids, category=goals)
  assert cfg.nt_slot_recognizer(goals)(written) == expected


def test_nt_slot_recognizer_repeated_nts():
  cfg = parse_output_cfg(SAME_OR_DIFFERENT)
  recognizes = cfg.nt_slot_recognizer(cfg.categories)
  assert recognizes("f ( NT_1 , NT_2 )".split())
  assert not recognizes("f ( NT_1 , NT_1 )".split())
  assert recognizes("g ( NT_2 , NT_2 )".split())
  assert not recognizes("h ( NT_1 , NT_2 )".split())  # unknown terminal
  with pytest.raises(TypeError, match="not a str"):
    recognizes("f ( NT_1 , NT_2 )")
