"""Grammar induction end to end on data generated from known QCFGs."""

import json
import math
import os

import gin
import pytest

from csl_jax.cky import forest
from csl_jax.cky.grammar_arrays import encode_qcfg
from csl_jax.cli import main as cli
from csl_jax.induction.derivability import RuleChecker
from csl_jax.induction.search import InductionConfig, Inducer
from csl_jax.qcfg.rules import Rule, load_rules, parse_rules
from csl_jax.testing import toy_language

TRUE_GRAMMAR = toy_language.GRAMMAR


def sentences():
  return [(x.split(), y.split()) for x, y in toy_language.sentences()]


CONFIG = InductionConfig(max_nts=2, terminal_cost=4, nonterminal_cost=1,
                         source_given_target=0, target_given_source=100,
                         num_partitions=4, max_steps=5)


def test_recovers_the_generating_grammar():
  pairs = sentences()
  result = Inducer(pairs, CONFIG).run()
  assert set(result.rules) == set(parse_rules(TRUE_GRAMMAR))
  # Every training pair stays derivable (the search's invariant).
  assert forest.derivable(encode_qcfg(result.rules), pairs).all()
  # It generalizes: a deeper, unseen composition is derivable.
  deeper = ("jump twice twice after walk and look".split(),
            "WALK LOOK JUMP JUMP JUMP JUMP".split())
  assert forest.derivable(encode_qcfg(result.rules), [deeper]).all()


def test_search_pauses_the_cyclic_gc_and_restores_it():
  import gc  # pylint: disable=g-import-not-at-top
  seen = []
  assert gc.isenabled()
  Inducer(sentences(), CONFIG).run(progress=lambda r: seen.append(
      gc.isenabled()))
  assert seen and not any(seen)  # paused during every step
  assert gc.isenabled()
  gc.disable()  # a caller's choice is kept
  try:
    Inducer(sentences(), CONFIG).run()
    assert not gc.isenabled()
  finally:
    gc.enable()


def test_examples_added_to_a_grammar_without_nts_skip_the_chart():
  # The shortcut for NT-free grammars answers as the derivability check.
  pairs = sentences()
  seeds = parse_rules("walk ### WALK\njump ### JUMP\nwalk twice ### WALK WALK")
  inducer = Inducer(pairs, CONFIG, seed_rules=seeds)
  added = inducer._add_examples(list(seeds), inducer.pairs)  # pylint: disable=protected-access
  new = sorted({Rule(x, y) for x, y in inducer.pairs} - set(seeds), key=str)
  checker = RuleChecker(seeds, CONFIG.max_nts)
  checker.enable(seeds)
  derived = checker.rules_derivable(new)
  assert set(added) == set(seeds) | {r for r, d in zip(new, derived)
                                     if not d}
  assert ("walk twice".split(), "WALK WALK".split()) in pairs  # a seed's own


def test_same_input_same_grammar_and_steps_are_recorded():
  pairs = sentences()
  first = Inducer(pairs, CONFIG).run()
  second = Inducer(list(reversed(pairs)), CONFIG).run()
  assert first.rules == second.rules
  assert first.history and all(h.num_rules > 0 for h in first.history)
  # The objective never increases from one step to the next in a partition.
  for a, b in zip(first.history, first.history[1:]):
    if a.partition == b.partition:
      assert b.objective <= a.objective + 1e-9


def test_seed_rules_are_kept_and_not_split():
  pairs = sentences()
  seed = parse_rules("walk twice ### WALK WALK\n")
  result = Inducer(pairs, CONFIG, seed_rules=seed).run()
  assert seed[0] in result.rules


def test_output_cfg_constraint_filters_candidates():
  pairs = sentences()
  # Forbid targets in which an NT is followed by another NT directly: the
  # coordination rules cannot be induced, so examples stay as they are.
  ok = lambda rule: not any(a.startswith("NT_") and b.startswith("NT_")
                            for a, b in zip(rule.target, rule.target[1:]))
  result = Inducer(pairs, CONFIG, target_ok=ok).run()
  assert all(ok(r) or not r.num_nts for r in result.rules)
  assert forest.derivable(encode_qcfg(result.rules), pairs).all()


def test_cli_writes_grammar_and_resumes(tmp_path):
  gin.clear_config()
  data = tmp_path / "train.tsv"
  data.write_text("".join(f"{' '.join(x)}\t{' '.join(y)}\n"
                          for x, y in sentences()))
  gin_file = tmp_path / "c.gin"
  gin_file.write_text(
      "induce.config = @InductionConfig()\n"
      "InductionConfig.max_nts = 2\nInductionConfig.terminal_cost = 4\n"
      "InductionConfig.source_given_target = 0\n"
      "InductionConfig.target_given_source = 100\n"
      "InductionConfig.num_partitions = 4\n")
  out = str(tmp_path / "out")
  args = ["induce", "--train", str(data), "--out", out,
          f"--gin_file={gin_file}"]
  assert cli.main(args) == 0
  with open(os.path.join(out, "summary.json")) as f:
    summary = json.load(f)
  assert summary["num_rules"] == 6 and summary["train_coverage"] == 100.0
  assert summary["num_examples"] == len(sentences())
  rules = load_rules(os.path.join(out, "grammar.qcfg"))
  assert set(rules) == set(parse_rules(TRUE_GRAMMAR))
  # A finished run resumes from its state file and gives the same grammar.
  state = os.path.join(out, "induction_state.json")
  assert os.path.exists(state)
  gin.clear_config()
  assert cli.main(args) == 0
  assert load_rules(os.path.join(out, "grammar.qcfg")) == rules
  gin.clear_config()


def test_bad_training_data_names_file_and_line(tmp_path, capsys):
  gin.clear_config()
  data = tmp_path / "train.tsv"
  data.write_text("walk\tWALK\njump NT_1\tJUMP\n")
  assert cli.main(["induce", "--train", str(data), "--out",
                   str(tmp_path / "o")]) == 2
  assert f"{data}:2: token of the form NT_k" in capsys.readouterr().err
  data.write_text("walk\tWALK\njump ###\tJUMP\n")
  assert cli.main(["induce", "--train", str(data), "--out",
                   str(tmp_path / "o")]) == 2
  assert f"{data}:2: token '###' is reserved" in capsys.readouterr().err
  # NT_0 is no nonterminal a rule may hold either; and with malformed lines
  # skipped, the file's line is named, not the example's place.
  data.write_text("walk\tWALK\nbroken line\njump\tJUMP\nlook NT_0\tLOOK\n")
  assert cli.main(["induce", "--train", str(data), "--out",
                   str(tmp_path / "o"), "--skip_malformed"]) == 2
  assert f"{data}:4: token of the form NT_k" in capsys.readouterr().err


def test_a_seed_rule_no_pair_can_use_is_left_out():
  # `foo` and `FOO` never occur in one pair: the rule derives nothing, and
  # its cost (infinite) made every reported objective infinite.
  from csl_jax.qcfg.rules import parse_rule  # pylint: disable=g-import-not-at-top
  pairs = sentences()
  seed = parse_rule("foo ### FOO")
  inducer = Inducer(pairs, CONFIG, [seed])
  assert inducer.seed_rules == []
  result = inducer.run()
  assert seed not in result.rules
  assert all(math.isfinite(h.objective) for h in result.history)


def test_interrupted_run_resumes_to_the_same_grammar(tmp_path):
  pairs = sentences()
  fresh = Inducer(pairs, CONFIG).run()
  state = str(tmp_path / "state.json")
  calls = []

  def stop_after_two(record):
    calls.append(record)
    if len(calls) == 2:
      raise KeyboardInterrupt

  with pytest.raises(KeyboardInterrupt):
    Inducer(pairs, CONFIG).run(state, stop_after_two)
  resumed = Inducer(pairs, CONFIG).run(state)
  assert resumed.rules == fresh.rules
  # A torn state file, or JSON of another shape: a run from the start.
  for torn in ('{"fingerprint": ', "[]"):
    with open(state, "w") as f:
      f.write(torn)
    assert Inducer(pairs, CONFIG).run(state).rules == fresh.rules
  assert [h.step for h in resumed.history[:2]] == [
      h.step for h in fresh.history[:2]]
  # A state written for other data or settings is not used.
  other = InductionConfig(**{**CONFIG.__dict__, "max_steps": 4})
  assert Inducer(pairs, other).run(state).rules == fresh.rules


def test_worker_processes_give_the_same_grammar():
  pairs = sentences()
  parallel = InductionConfig(**{**CONFIG.__dict__, "num_workers": 2,
                                "min_rules_per_worker": 1})
  serial = InductionConfig(**{**CONFIG.__dict__, "num_workers": 1})
  a = Inducer(pairs, parallel).run()
  b = Inducer(pairs, serial).run()
  assert a.rules == b.rules
  assert [h.objective for h in a.history] == [h.objective for h in b.history]


def test_beam_candidate_search_gives_the_same_grammar():
  pytest.importorskip("apache_beam")
  pairs = sentences()
  on_beam = InductionConfig(**{
      **CONFIG.__dict__, "num_workers": 2, "min_rules_per_worker": 1,
      "runner": "DirectRunner",
      "pipeline_args": ("--direct_num_workers=2",
                        "--direct_running_mode=multi_processing")})
  serial = InductionConfig(**{**CONFIG.__dict__, "num_workers": 1})
  a = Inducer(pairs, on_beam).run()
  b = Inducer(pairs, serial).run()
  assert a.rules == b.rules
  assert [h.objective for h in a.history] == [h.objective for h in b.history]


def test_beam_search_proposals_round_trip_as_text():
  """What the Beam workers send back (rule text, cost) is what the local
  search computed: without Beam, through the same encoding."""
  import json  # pylint: disable=g-import-not-at-top
  from csl_jax.qcfg.rules import format_rule, parse_rules  # pylint: disable=g-import-not-at-top
  inducer = Inducer(sentences(), CONFIG)
  result = inducer.run()
  for rule in result.rules:
    line = json.dumps([format_rule(rule), 0.1 + 0.2])
    text, cost = json.loads(line)
    assert parse_rules(text) == [rule] and cost == 0.1 + 0.2


# Right-linear outputs: a target with two adjacent NTs ("S S") is not in the
# language, so the and/after/twice rules cannot be induced.
_RIGHT_LINEAR_CFG = "S -> WALK | JUMP | LOOK | WALK S | JUMP S | LOOK S\n"


def _no_adjacent_nts(rule):
  return not any(a.startswith("NT_") and b.startswith("NT_")
                 for a, b in zip(rule.target, rule.target[1:]))


def test_state_is_keyed_on_the_target_checker(tmp_path):
  pairs = sentences()
  state = str(tmp_path / "state.json")
  steps = []
  record = steps.append
  plain = Inducer(pairs, CONFIG).run()
  checked = Inducer(pairs, CONFIG, target_ok=_no_adjacent_nts).run()
  assert plain.rules != checked.rules
  assert Inducer(pairs, CONFIG).run(state).rules == plain.rules
  # With a checker, a checker-less state is not resumed; and vice versa.
  for target_ok, key, expected in [(_no_adjacent_nts, "a", checked),
                                   (None, None, plain)]:
    steps.clear()
    result = Inducer(pairs, CONFIG, target_ok=target_ok,
                     checker_key=key).run(state, record)
    assert result.rules == expected.rules and steps
  # Another key is another checker: not resumed.
  Inducer(pairs, CONFIG, target_ok=_no_adjacent_nts,
          checker_key="a").run(state)
  steps.clear()
  Inducer(pairs, CONFIG, target_ok=_no_adjacent_nts,
          checker_key="b").run(state, record)
  assert steps
  # Same settings: resumed (a finished state runs no step), even with
  # other worker settings, which do not change the result.
  steps.clear()
  workers = InductionConfig(**{**CONFIG.__dict__, "num_workers": 1,
                               "min_rules_per_worker": 7})
  result = Inducer(pairs, workers, target_ok=_no_adjacent_nts,
                   checker_key="b").run(state, record)
  assert result.rules == checked.rules and not steps
  # A checker without a key is never resumed.
  Inducer(pairs, CONFIG, target_ok=_no_adjacent_nts).run(state, record)
  assert steps


def test_induce_keys_its_state_on_the_output_cfg_file(tmp_path):
  from csl_jax.methods.csl import induce as induce_lib  # pylint: disable=g-import-not-at-top
  train = tmp_path / "train.tsv"
  train.write_text("".join(f"{' '.join(x)}\t{' '.join(y)}\n"
                           for x, y in sentences()))
  cfg = tmp_path / "out.cfg"
  cfg.write_text(_RIGHT_LINEAR_CFG)
  out = str(tmp_path / "out")

  def run(directory, output_cfg=None):
    induce_lib.induce(directory, str(train), output_cfg=output_cfg,
                      config=CONFIG)
    with open(os.path.join(directory, "induction_state.json")) as f:
      return load_rules(os.path.join(directory, "grammar.qcfg")), \
          json.load(f)["fingerprint"]

  plain, plain_key = run(out)
  fresh, fresh_key = run(str(tmp_path / "fresh"), str(cfg))
  assert plain != fresh and plain_key != fresh_key
  # The old state (no output CFG) is not resumed, but replaced.
  assert run(out, str(cfg)) == (fresh, fresh_key)
  # Another output CFG text is another key.
  cfg.write_text(_RIGHT_LINEAR_CFG + "S -> S S\n")
  assert run(out, str(cfg))[1] not in (plain_key, fresh_key)
  assert run(out) == (plain, plain_key)
