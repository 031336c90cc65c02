"""CSL grammar induction: a QCFG from training pairs (`csl-jax induce`)."""

import dataclasses
import os
import resource
from typing import Any, Dict, List, Optional, Sequence

from absl import logging
import gin

from csl_jax import assets
from csl_jax import configs
from csl_jax.cky import forest
from csl_jax.data import tsv
from csl_jax.errors import InputError
from csl_jax.files import file_sha256
from csl_jax.induction import seed_rules as seed_lib
from csl_jax.induction.search import InductionConfig, Inducer, StepRecord
from csl_jax.qcfg.output_cfg import OutputCFG, load_output_cfg
from csl_jax.qcfg.output_cfg import check_training_outputs
from csl_jax.qcfg.rules import Rule, load_rules, save_rules
from csl_jax.progress import progress

SEED_GENERATORS = ("exact_match", "ibm1")


def target_checker(cfg: OutputCFG):
  """A rule's target must be derivable from some output-CFG category with
  its NTs replaced by categories (repeated NTs by the same one)."""
  cache = {}
  recognizes = cfg.nt_slot_recognizer(cfg.categories)

  def ok(rule: Rule) -> bool:
    found = cache.get(rule.target)
    if found is None:
      found = cache[rule.target] = recognizes(rule.target)
    return found

  return ok


@gin.configurable(module="induce")
def induce(out_dir: str, train: str, seed_rules: Optional[str] = None,
           seed_generators: Sequence[str] = (),
           exact_match_exclude: Sequence[str] = (),
           output_cfg: Optional[str] = None,
           skip_malformed: bool = False,
           max_source_len: int = forest.DEFAULT_MAX_SOURCE_LEN,
           max_target_len: int = forest.DEFAULT_MAX_TARGET_LEN,
           skip_too_long: bool = False,
           config: Optional[InductionConfig] = None) -> dict:
  """Writes DIR/grammar.qcfg; returns the summary. Resumes from
  DIR/induction_state.json when the data, config, seed rules and output CFG
  are unchanged. An example over the length bounds is an error, or with
  `skip_too_long` left out of the induction and its seed rules (counted,
  with a warning naming the first)."""
  config = config or InductionConfig()
  configs.check_values("induce", locals(),
                       max_source_len=configs.AT_LEAST_ONE,
                       max_target_len=configs.AT_LEAST_ONE)
  unknown = [n for n in seed_generators if n not in SEED_GENERATORS]
  if unknown:
    raise InputError(f"unknown seed rule generator {unknown[0]!r}; valid: "
                     f"{', '.join(SEED_GENERATORS)}")
  output_cfg = assets.resolve(output_cfg)
  cfg = load_output_cfg(output_cfg) if output_cfg else None
  summary: Dict[str, Any] = {}
  stats = tsv.ReadStats()
  examples = tsv.read_tsv(train, skip_malformed=skip_malformed,
                          stats=stats)
  pairs, kept, kept_lines, too_long = [], [], [], []
  for ex, line in zip(examples, stats.lines,
                      strict=True):  # file lines, skipped or not
    x, y = ex.input.split(), ex.output.split()
    if len(x) > max_source_len or len(y) > max_target_len:
      if skip_too_long:
        too_long.append(line)
        continue
      raise InputError(f"example longer than the bound ({len(x)} > "
                       f"{max_source_len} or {len(y)} > {max_target_len} "
                       "tokens): raise it with --max_source_len N / "
                       "--max_target_len N, or pass --skip_too_long (in "
                       "augment, which has no such flags: "
                       "--gin.induce.max_source_len=N, "
                       "--gin.induce.skip_too_long=True)", train, line)
    if ("NT_" in ex.input or "NT_" in ex.output) and any(
        t.startswith("NT_") for t in x + y):  # NT_0 too: no rule takes it
      raise InputError("token of the form NT_k is reserved for "
                       "nonterminals", train, line)
    if "###" in x or "###" in y:
      raise InputError("token '###' is reserved (it separates a rule's "
                       "sides in grammar.qcfg)", train, line)
    pairs.append((x, y))
    kept.append(ex)
    kept_lines.append(line)
  if too_long:
    logging.warning("%s:%d: %d of %d examples are over the length bounds "
                    "(%d / %d tokens) and are left out of the induction "
                    "(num_skipped_too_long in the summary)", train,
                    too_long[0], len(too_long), len(examples),
                    max_source_len, max_target_len)
    if not pairs:
      raise InputError(f"every example is over the length bounds "
                       f"({max_source_len} / {max_target_len} tokens)",
                       train, too_long[0])
  summary["num_skipped_too_long"] = len(too_long)
  examples = kept
  if cfg:  # another dataset's CFG fails now, not after the induction
    check_training_outputs(cfg, output_cfg, "induce.output_cfg", train,
                           [y for _, y in pairs], kept_lines, warn=False)
  seeds: List[Rule] = list(load_rules(seed_rules)) if seed_rules else []
  for name in seed_generators:
    if name == "exact_match":
      seeds += seed_lib.exact_match_rules(examples,
                                          exclude=set(exact_match_exclude))
    else:
      seeds += seed_lib.ibm1_lexical_rules(examples)
  seeds = sorted(set(seeds), key=str)
  checker = target_checker(cfg) if cfg else None
  # The state file is keyed on the output CFG's text: another CFG allows
  # other rules (search.Inducer.fingerprint).
  checker_key = file_sha256(output_cfg) if cfg else None
  os.makedirs(out_dir, exist_ok=True)
  inducer = Inducer(pairs, config, seeds, checker, checker_key)
  bar = progress(desc="induction steps", unit="step", mininterval=1.0)

  def on_step(record: StepRecord):
    bar.update(1)
    bar.set_postfix(partition=record.partition, rules=record.num_rules,
                    objective=record.objective)
    logging.info("partition %d step %d: %d rules, objective %.2f, "
                 "-%d +%d, %.2fs", record.partition, record.step,
                 record.num_rules, record.objective, record.num_removed,
                 record.num_added, record.seconds)

  result = inducer.run(os.path.join(out_dir, "induction_state.json"),
                       on_step)
  bar.close()
  # The search's last step logged its own grammar; say what pruning (rules
  # no derivation of the training pairs needs) made of it, as the summary.
  objective = inducer.objective.total(result.rules)
  logging.info("induced grammar: %d rules, objective %.2f (after pruning "
               "the search's %s rules)", len(result.rules), objective,
               result.history[-1].num_rules if result.history else "seed")
  save_rules(os.path.join(out_dir, "grammar.qcfg"), result.rules)
  derived = result.derived
  summary.update(
      train=os.fspath(train), num_examples=len(pairs),
      num_skipped_malformed=stats.num_skipped, num_seed_rules=len(seeds),
      num_rules=len(result.rules),
      objective=objective,
      num_steps=len(result.history),
      train_coverage=(100.0 * float(derived.mean()) if len(pairs)
                      else 0.0),  # a percentage, like every coverage
      peak_memory_mb=round(resource.getrusage(
          resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
      config=dataclasses.asdict(config))
  return dict(summary)
