"""CSL grammar induction: parallel greedy search (Qiu et al., 2022, §3.1.4
and Appendix B.3).

The grammar starts as one rule per training example (plus seed rules) and
always derives every example. Each step looks at every rule: if the others
derive it, removing it is an action; otherwise each rule r3 in UNIFY(r, r')
for the other rules r' is a candidate action "add r3, remove r and every rule
r3 makes redundant". Each rule proposes its best improving action; the
actions are executed in a deterministic order, each removal re-checked
against the grammar as it is at that moment, so the invariant holds.
"""

import contextlib
import dataclasses
import gc
import hashlib
import json
import math
import os
import sys
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from absl import logging
import gin
import numpy as np

from csl_jax import configs
from csl_jax.files import atomic_write_json, read_json
from csl_jax.induction.derivability import Encoder, RuleChecker
from csl_jax.induction import forked
from csl_jax.induction.objective import Objective, ObjectiveConfig
from csl_jax.induction.prune import prune_and_cover
from csl_jax.induction.statistics import PairStatistics
from csl_jax.induction.terminal_index import TerminalIndex, TermIds
from csl_jax.induction.unifier import GrammarUnifier, RuleCodes
from csl_jax.qcfg.rules import Rule, format_rule, nt_index, parse_rule

Pair = Tuple[Tuple[str, ...], Tuple[str, ...]]


@gin.configurable
@dataclasses.dataclass(frozen=True)
class InductionConfig:
  """Options of the paper (Table 6 and Appendix B.3)."""
  max_nts: int = 4
  allow_repeated_target_nts: bool = True
  allow_single_nt_target: bool = True
  terminal_cost: float = 1.0  # k_t; an NT costs nonterminal_cost
  nonterminal_cost: float = 1.0
  source_given_target: float = 1.0  # k_alpha
  target_given_source: float = 1.0  # k_beta
  num_partitions: int = 1
  max_steps: int = 20  # per partition
  sample_size: int = 0  # estimate p-hat on this many examples (0: all)
  candidates_per_rule: int = 8  # best candidates whose removals are checked
  seed: int = 0
  allow_unary_source: bool = True  # rules whose source is a lone NT
  num_workers: int = 0  # processes for the candidate search; 0: all cores
  min_rules_per_worker: int = 500  # smaller steps stay in one process
  log_base: float = math.e  # of the penalty: ln (paper); 2.0 (authors' code)
  # The candidate search of each step on Apache Beam (`beam_search.py`):
  # a runner name and its flags; the same grammar as locally.
  runner: Optional[str] = None
  pipeline_args: Tuple[str, ...] = ()

  def objective_config(self) -> ObjectiveConfig:
    return ObjectiveConfig(self.terminal_cost, self.nonterminal_cost,
                           self.source_given_target, self.target_given_source,
                           self.log_base)

  def __post_init__(self):
    configs.check_types(self)
    configs.check_ranges(
        self, max_nts=configs.AT_LEAST_ONE,
        terminal_cost=configs.NON_NEGATIVE_FINITE,
        nonterminal_cost=configs.NON_NEGATIVE_FINITE,
        source_given_target=configs.NON_NEGATIVE_FINITE,
        target_given_source=configs.NON_NEGATIVE_FINITE,
        num_partitions=configs.AT_LEAST_ONE, max_steps=configs.NON_NEGATIVE,
        sample_size=configs.NON_NEGATIVE,
        candidates_per_rule=configs.AT_LEAST_ONE,
        num_workers=configs.NON_NEGATIVE,
        min_rules_per_worker=configs.AT_LEAST_ONE,
        log_base=configs.ABOVE_ONE)


@dataclasses.dataclass
class StepRecord:
  partition: int
  step: int
  num_rules: int
  objective: float
  num_removed: int
  num_added: int
  seconds: float


@dataclasses.dataclass
class InductionResult:
  rules: List[Rule]
  history: List[StepRecord]
  derived: np.ndarray  # [len(pairs)] bool: the rules derive pair b


def _key(rule: Rule) -> str:
  return format_rule(rule)


_FORK_STATE = None  # (inducer, unifier, partners, present) for forked workers

# InductionConfig fields that only spread the work over processes: workers
# return each rule's proposals with their (pure) costs, merged in rule order,
# so the grammar does not depend on them (test_worker_processes_...).
_PARALLELISM_FIELDS = ("num_workers", "min_rules_per_worker", "runner",
                       "pipeline_args")


@contextlib.contextmanager
def _cyclic_gc_paused():
  """The search keeps ~10^6 objects alive (rules, their encodings and
  costs) and makes no reference cycles, so the cyclic collector's full
  passes over them only cost time (BENCHMARKS.md, issue 17, session 23).
  Forked workers inherit the pause, which also spares them the copy-on-write
  of every page a collection would touch. Reference counting still frees
  everything as usual."""
  was_enabled = gc.isenabled()
  gc.disable()
  try:
    yield
  finally:
    if was_enabled:
      gc.enable()


def _fork_is_safe() -> bool:
  """Forking a process whose JAX runtime has started its threads can
  deadlock the child; then the candidate search stays in one process."""
  bridge = sys.modules.get("jax._src.xla_bridge")
  if bridge is not None and bridge.backends_are_initialized():
    logging.log_first_n(logging.WARNING, "JAX is running in this process: "
                        "the induction's candidate search uses one core", 1)
    return False
  return True


def _proposals_in_worker(task):
  """Proposals of a chunk of rules, and the costs of a share of the
  grammar's rules the parent has not priced (it needs them all next)."""
  chunk, unpriced = task
  inducer, unifier, partners, present = _FORK_STATE
  cost = inducer.objective.rule_cost
  return ([(i, inducer._proposals_of(unifier, i, partners[i], present))  # pylint: disable=protected-access
           for i in chunk], [cost(r) for r in unpriced])


class Inducer:
  """Runs the search over one training set.

  `target_ok` restricts the rules' targets (e.g. to the output CFG's
  language); `checker_key` names what it checks (e.g. the sha256 of the
  output CFG file's text) for `fingerprint`. A `target_ok` without a key
  makes the run unresumable: a state file could come from another checker.
  """

  def __init__(self, pairs: Sequence[Pair], config: InductionConfig,
               seed_rules: Sequence[Rule] = (),
               target_ok: Optional[Callable[[Rule], bool]] = None,
               checker_key: Optional[str] = None):
    self.config = config
    self.checker_key = checker_key
    self.pairs = [(tuple(x), tuple(y)) for x, y in pairs]
    self.stats = PairStatistics(self.pairs, config.sample_size, config.seed)
    self.objective = Objective(config.objective_config(), self.stats)
    # A seed whose sides never occur in one pair derives none of them and
    # would make the objective infinite for the whole run: left out.
    self.seed_rules = [r for r in seed_rules
                       if not math.isinf(self.objective.rule_cost(r))]
    if len(self.seed_rules) < len(seed_rules):
      logging.warning("%d seed rule(s) whose sides never occur in one "
                      "training pair left out", len(seed_rules) -
                      len(self.seed_rules))
    self._seed_set = frozenset(self.seed_rules)
    self._target_ok = target_ok
    self._allowed_cache: Dict[Rule, bool] = {}
    self._encoder = Encoder()
    self._term_ids = TermIds()
    self._rule_codes = RuleCodes()

  # --- candidate constraints --------------------------------------------

  def allowed(self, rule: Rule) -> bool:
    ok = self._allowed_cache.get(rule)
    if ok is None:
      ok = self._allowed(rule)
      self._allowed_cache[rule] = ok
    return ok

  def _allowed(self, rule: Rule) -> bool:
    c = self.config
    if rule.num_nts > c.max_nts:
      return False
    nts = [t for t in rule.target if nt_index(t)]
    if not c.allow_repeated_target_nts and len(nts) != len(set(nts)):
      return False
    if (not c.allow_single_nt_target and len(rule.target) == 1
        and nts):
      return False
    if not c.allow_unary_source and rule.is_unary_source:
      return False
    if not math.isfinite(self.objective.rule_cost(rule)):
      return False
    return self._target_ok is None or self._target_ok(rule)

  def _proposals_of(self, unifier, i, partners, present
                    ) -> List[Tuple[Rule, float]]:
    """Rule i's best candidates r3 (UNIFY with its partners: the rules
    whose terminals are a subset of its), with costs."""
    candidates = unifier.unify(i, partners)
    return [(r3, self.objective.rule_cost(r3))
            for r3 in self._best_candidates(candidates, present)]

  def _propose(self, grammar, todo, index, present
               ) -> Dict[int, List[Rule]]:
    """Proposals of the rules in `todo`, on all cores for large steps
    (forked workers and the parent; the workers' costs are copied back into
    the parent's cache)."""
    workers = self.config.num_workers or os.cpu_count() or 1
    partners = dict(zip(todo, index.subsets(todo), strict=True))
    unifier = GrammarUnifier(grammar, self._rule_codes)
    big = len(todo) >= self.config.min_rules_per_worker * 2
    if self.config.runner and big:  # small steps: a pipeline's start-up
      from csl_jax.induction import beam_search  # pylint: disable=g-import-not-at-top
      chunks = [todo[k::workers * 4] for k in range(workers * 4)]
      found = beam_search.propose((self, unifier, partners, present), chunks,
                                  self.config.runner,
                                  self.config.pipeline_args)
    elif workers > 1 and big and _fork_is_safe():
      global _FORK_STATE
      _FORK_STATE = (self, unifier, partners, present)
      unpriced = [r for r in grammar if not self.objective.is_priced(r)]
      tasks = [(todo[k::workers], unpriced[k::workers])
               for k in range(workers)]
      try:
        results = forked.fork_map(_proposals_in_worker, tasks)
      finally:
        _FORK_STATE = None
      found = [x for part, _ in results for x in part]
      for (_, rules), (_, costs) in zip(tasks, results, strict=True):
        for r, c in zip(rules, costs, strict=True):
          self.objective.prime(r, c)
    else:
      found = [(i, self._proposals_of(unifier, i, partners[i], present))
               for i in todo]
    proposals = {}
    for i, scored in sorted(found):
      for r3, cost in scored:
        self.objective.prime(r3, cost)
      if scored:
        proposals[i] = [r3 for r3, _ in scored]
    return proposals

  def _best_candidates(self, candidates, present) -> List[Rule]:
    """The candidates_per_rule allowed candidates of lowest cost. Costs are
    computed lazily in order of size, a lower bound of the cost (the
    correlation penalty is >= 0), so p-hat is estimated for few of them."""
    k = self.config.candidates_per_rule
    cost = self.objective.rule_cost
    by_size = sorted((self.objective.size(r.source) +
                      self.objective.size(r.target), _key(r), r)
                     for r in candidates if r not in present)
    best: List[Tuple[float, str, Rule]] = []
    for size, key, rule in by_size:
      if len(best) == k and size >= best[-1][0]:
        break
      if not self.allowed(rule):
        continue
      best.append((cost(rule), key, rule))
      best.sort()
      del best[k:]
    return [r for _, _, r in best]

  # --- one step ---------------------------------------------------------

  def step(self, grammar: List[Rule]) -> Tuple[List[Rule], int, int]:
    """One parallel greedy step; returns (grammar, #removed, #added)."""
    cost = self.objective.rule_cost
    checker = RuleChecker(grammar, self.config.max_nts, self._encoder)
    checker.enable(grammar)
    ids = list(range(len(grammar)))
    removable = checker.rules_derivable(grammar, exclude=ids)
    seeds = self._seed_set
    removable &= np.array([r not in seeds for r in grammar], np.bool_)
    index = TerminalIndex(grammar, self._term_ids)
    present = set(grammar)

    # Candidates r3 of every rule that cannot simply be removed.
    todo = [i for i, rule in enumerate(grammar)
            if not removable[i] and rule not in seeds]  # seeds: never split
    proposals = self._propose(grammar, todo, index, present)

    # What each distinct added rule makes redundant.
    additions = sorted({r3 for ps in proposals.values() for r3 in ps},
                       key=_key)
    # Additions as ids len(grammar) + a: the rules each one makes
    # redundant, and the additions that can replace each rule.
    removals: Dict[int, List[int]] = {}
    replaced_by: Dict[int, set] = {}
    addition_id = {r3: len(grammar) + a for a, r3 in enumerate(additions)}
    wide = checker
    if additions:
      wide = RuleChecker(grammar + additions, self.config.max_nts,
                         self._encoder)
      wide.enable(grammar)
      # Does grammar + r3 - rule j derive rule j? One chart per rule j
      # answers it for every r3 that might replace it.
      # The additions that might replace rule j: those whose terminals are
      # all j's (an index over the additions, queried by each rule).
      candidates = [j for j, r in enumerate(grammar) if r not in seeds]
      within = TerminalIndex(additions, self._term_ids).within(
          [grammar[j] for j in candidates])
      by_rule: Dict[int, List[int]] = {
          j: [len(grammar) + a for a in found]
          for j, found in zip(candidates, within, strict=True) if found}
      targets = sorted(by_rule)
      answers = wide.rules_derivable_each(
          [grammar[j] for j in targets], [by_rule[j] for j in targets],
          exclude=targets)
      # Rules j in ascending order, so each removal list is ascending.
      for j, ok in zip(targets, answers, strict=True):
        yes = np.asarray(by_rule[j])[ok].tolist()
        for extra in yes:
          removals.setdefault(extra, []).append(j)
        if j in proposals:
          replaced_by[j] = set(yes)

    # Each rule's best improving action. (An added rule's delta is the
    # same for every rule it replaces: computed once; sum adds in order.)
    grammar_cost = [cost(r) for r in grammar]
    deltas = {a: cost(additions[a - len(grammar)])
                 - sum(map(grammar_cost.__getitem__, gone))
              for a, gone in removals.items()}
    actions: Dict[str, Tuple[float, Optional[Rule], Tuple[int, ...]]] = {}
    for i, rule in enumerate(grammar):
      if removable[i]:
        actions[_key(rule)] = (-grammar_cost[i], None, (i,))
        continue
      best = None
      for r3 in proposals.get(i, ()):
        a = addition_id[r3]
        if a not in replaced_by.get(i, ()):
          continue
        gone = removals[a]
        delta = deltas[a]
        if delta < 0 and (best is None or (delta, _key(r3)) < best[:2]):
          best = (delta, _key(r3), r3, tuple(gone))
      if best is not None:
        actions["+" + best[1]] = (best[0], best[2], best[3])

    return self._execute(grammar, actions, wide)

  def _execute(self, grammar, actions, checker):
    """Applies actions best first, re-checking every removal. `checker`
    knows every rule involved, with exactly `grammar` enabled."""
    current = set(grammar)
    num_removed = num_added = 0
    cost = self.objective.rule_cost
    ordered = sorted(actions.items(), key=lambda kv: (kv[1][0], kv[0]))
    # Plain removals first, together: drop them all, then put back those
    # the remaining rules do not derive, until the rest all check out.
    plain = [grammar[rm[0]] for _, (_, add, rm) in ordered if add is None]
    while plain:
      checker.enable(plain, False)
      ok = checker.rules_derivable(plain)
      checker.enable([r for r, good in zip(plain, ok, strict=True) if not good])
      if ok.all():
        break
      plain = [r for r, good in zip(plain, ok, strict=True) if good]
    current.difference_update(plain)
    num_removed += len(plain)
    for _, (delta, add, remove) in ordered:
      if add is None:
        continue
      newly_added = add not in current
      if newly_added:
        checker.enable([add])
        current.add(add)
      removed = []
      for j in sorted(remove):
        rule = grammar[j]
        if rule not in current:
          continue
        if checker.rule_derivable(rule, exclude=checker.index[rule]):
          checker.enable([rule], False)
          current.discard(rule)
          removed.append(rule)
      if newly_added and cost(add) >= sum(cost(r) for r in removed):
        # Earlier actions took away what made this one pay: undo it.
        checker.enable(removed)
        current.update(removed)
        checker.enable([add], False)
        current.discard(add)
        continue
      num_removed += len(removed)
      num_added += int(newly_added)
    return sorted(current, key=_key), num_removed, num_added

  # --- the whole search -------------------------------------------------

  def partitions(self) -> List[List[Pair]]:
    unique = sorted(set(self.pairs),
                    key=lambda p: (len(p[0]), len(p[1]), p))
    count = max(1, min(self.config.num_partitions, len(unique)))
    bounds = np.linspace(0, len(unique), count + 1).round().astype(int)
    return [unique[bounds[k]:bounds[k + 1]] for k in range(count)]

  def _add_examples(self, grammar: List[Rule], pairs: Sequence[Pair]
                    ) -> List[Rule]:
    """Adds a rule for each example the grammar does not derive yet. (An
    example rule has no NTs, so it cannot help derive another rule: those
    the grammar derives would be removed by the next step anyway.)"""
    new = sorted({Rule(x, y) for x, y in pairs} - set(grammar), key=_key)
    if not new:
      return grammar
    if not any(r.num_nts for r in grammar):
      # Rules without NTs (the first partition's seeds) derive exactly
      # their own pairs, and `new` is not in the grammar: no chart needed.
      return sorted(set(grammar) | set(new), key=_key)
    checker = RuleChecker(grammar, self.config.max_nts, self._encoder)
    checker.enable(grammar)
    derived = checker.rules_derivable(new)
    return sorted(set(grammar) |
                  {r for r, d in zip(new, derived, strict=True) if not d},
                  key=_key)

  def fingerprint(self) -> Optional[str]:
    """sha256 of what determines the result: the config less the
    `_PARALLELISM_FIELDS`, the pairs, the seed rules and the checker's key;
    None (never resume) for a target checker without a key."""
    if self._target_ok is not None and self.checker_key is None:
      return None
    h = hashlib.sha256()
    settings = {k: v for k, v in dataclasses.asdict(self.config).items()
                if k not in _PARALLELISM_FIELDS}
    checker = None if self._target_ok is None else self.checker_key
    h.update(json.dumps({"config": settings, "checker": checker},
                        sort_keys=True).encode())
    for x, y in self.pairs:
      h.update((" ".join(x) + "\t" + " ".join(y) + "\n").encode())
    for r in self.seed_rules:
      h.update((_key(r) + "\n").encode())
    return h.hexdigest()

  def run(self, checkpoint: Optional[str] = None,
          progress: Optional[Callable[[StepRecord], None]] = None
          ) -> InductionResult:
    with _cyclic_gc_paused():
      return self._run(checkpoint, progress)

  def _run(self, checkpoint, progress) -> InductionResult:
    parts = self.partitions()
    grammar = sorted(set(self.seed_rules), key=_key)
    history: List[StepRecord] = []
    start_partition, start_step = 0, 0
    fingerprint = self.fingerprint()
    if checkpoint and os.path.exists(checkpoint):
      try:
        state = read_json(checkpoint)
      except ValueError:  # torn or not JSON: as a state of another run
        state = None
      if not isinstance(state, dict):
        state = {}
      if fingerprint and state.get("fingerprint") == fingerprint:
        grammar = [parse_rule(r, checkpoint) for r in state["rules"]]
        history = [StepRecord(**h) for h in state["history"]]
        start_partition, start_step = state["partition"], state["step"]
        logging.info("resuming from %s: partition %d, step %d", checkpoint,
                     start_partition, start_step)
      else:
        logging.warning("ignoring %s: other data, config, seed rules or "
                        "target checker (or one without a key)", checkpoint)
    for p in range(start_partition, len(parts)):
      if p > start_partition or start_step == 0:
        grammar = self._add_examples(grammar, parts[p])
      first = start_step if p == start_partition else 0
      for s in range(first, self.config.max_steps):
        t0 = time.time()
        grammar, removed, added = self.step(grammar)
        done = removed == 0 and added == 0
        record = StepRecord(p, s, len(grammar),
                            round(self.objective.total(grammar), 4), removed,
                            added, round(time.time() - t0, 4))
        history.append(record)
        if checkpoint:
          last = done or s + 1 == self.config.max_steps
          atomic_write_json(checkpoint, {
              "fingerprint": fingerprint,
              "partition": p + 1 if last else p,
              "step": 0 if last else s + 1,
              "rules": [_key(r) for r in grammar],
              "history": [dataclasses.asdict(h) for h in history]})
        if progress:
          progress(record)
        if done:
          break
    grammar, derived = prune_and_cover(
        grammar, self.pairs, self.config.max_nts, self.objective.rule_cost,
        self.seed_rules)
    return InductionResult(sorted(grammar, key=_key), history, derived)
