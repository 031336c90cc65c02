"""QCFG rule text format: parsing, validation, exact round trip."""

import pytest

from csl_jax.errors import InputError
from csl_jax.qcfg import rules as rules_lib

GRAMMAR = """\
# SCAN-like rules
jump ### I_JUMP
NT_1 twice ### NT_1 NT_1
NT_1 after NT_2 ### NT_2 NT_1
NT_1 around NT_2 ### NT_2 NT_1 NT_2 NT_1 NT_2 NT_1 NT_2 NT_1
NT_1 ### answer ( NT_1 )
"""


def test_parse_and_properties():
  rules = rules_lib.parse_rules(GRAMMAR)
  assert len(rules) == 5
  assert rules[0] == rules_lib.Rule(("jump",), ("I_JUMP",))
  assert [r.num_nts for r in rules] == [0, 1, 2, 2, 1]
  assert [r.is_unary_source for r in rules] == [False] * 4 + [True]


def test_round_trip_is_exact():
  rules = rules_lib.parse_rules(GRAMMAR)
  text = rules_lib.format_rules(rules)
  assert text == "".join(l + "\n" for l in GRAMMAR.splitlines()[1:])
  assert rules_lib.parse_rules(text) == rules


def test_save_and_load(tmp_path):
  rules = rules_lib.parse_rules(GRAMMAR)
  path = tmp_path / "g.qcfg"
  rules_lib.save_rules(path, rules, header="induced\nby test")
  assert path.read_text().startswith("# induced\n# by test\n")
  assert rules_lib.load_rules(path) == rules


@pytest.mark.parametrize("line,message", [
    ("jump I_JUMP", "expected one '###'"),
    ("a ### b ### c", "expected one '###'"),
    (" ### X", "empty source"),
    ("x ### ", "empty target"),
    ("NT_2 x ### NT_2", "numbered NT_1, NT_2"),
    ("NT_1 x NT_1 ### NT_1", "numbered NT_1, NT_2"),
    ("NT_1 x ### NT_1 NT_2", "target NT NT_2 does not occur"),
    ("NT_1 and NT_2 ### NT_1", "source NT NT_2 does not occur"),
    ("NT_1 ### NT_1", "identity rule"),
    ("NT_0 x ### NT_0", "bad nonterminal"),
    ("x  y ### z", "bad token"),
])
def test_syntax_errors_name_the_line(line, message):
  text = "walk ### I_WALK\n\n" + line + "\n"
  with pytest.raises(InputError) as e:
    rules_lib.parse_rules(text, source="g.qcfg")
  assert str(e.value).startswith("g.qcfg:3: ")
  assert message in str(e.value)


def test_duplicate_rule_names_both_lines():
  with pytest.raises(InputError, match=r"g:3: duplicate rule \(first on line 1"):
    rules_lib.parse_rules("a ### A\nb ### B\na ### A\n", source="g")


def test_missing_file_is_input_error(tmp_path):
  with pytest.raises(InputError, match="no such file"):
    rules_lib.load_rules(tmp_path / "nope.qcfg")


def test_make_rule_validates():
  assert str(rules_lib.make_rule(["NT_1", "twice"], ["NT_1", "NT_1"])) == (
      "NT_1 twice ### NT_1 NT_1")
  with pytest.raises(ValueError, match="does not occur"):
    rules_lib.make_rule(["NT_1"], ["x"])
  # `a ### ### A` would read back as source `a`, target `### A`.
  with pytest.raises(ValueError, match="'###' is reserved"):
    rules_lib.make_rule(["a", "###"], ["A"])


def test_rule_hash_is_the_fields_hash_and_not_pickled():
  import copy  # pylint: disable=g-import-not-at-top
  import pickle  # pylint: disable=g-import-not-at-top
  rule = rules_lib.Rule(("a", "NT_1"), ("A", "NT_1"))
  assert hash(rule) == hash((rule.source, rule.target)) == hash(rule)
  for other in (pickle.loads(pickle.dumps(rule)), copy.deepcopy(rule),
                copy.copy(rule)):
    assert "_hash" not in other.__dict__  # a hash from another process
    assert other == rule and hash(other) == hash(rule)
  assert {rule: 1}[rules_lib.Rule(("a", "NT_1"), ("A", "NT_1"))] == 1
