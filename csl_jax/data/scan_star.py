"""SCAN* (Zhou et al. 2023 §2.1, App. A.2): SCAN with more primitives and
any number of conjunctions, for studying how dataset complexity drives
compositional generalization.

Grammar (the paper gives it in words; where it is silent, SCAN's):

  C -> P | C and P          P -> S | P after S
  S -> V | V twice | V thrice
  V -> U | U D | U opposite D | U around D
  D -> left | right         U -> one of `num_primitives` verbs

`after` binds tighter than `and` (the paper's "higher priority": executed
first), so `a and b after c` is `a and (b after c)`: a's actions, then c's,
then b's. Both conjunctions are associative in meaning, so no other bracket
matters. The verb `turn` is removed, as in the paper. The paper also
"unifies the grammar of around and opposite" without saying how; SCAN's
meanings are kept for both (its App. E: trends unchanged without the
unification). The verbs are SCAN's four, then `p4` ... `p199` (actions
`I_P4` ...), so the `jump` split's test set reads like SCAN's.

Length is the number of input tokens. `length_split` follows App. A.2: the
dataset for the largest L is generated, each smaller one is made from the
next larger by halving every example (keep the most leading clauses, with
their conjunctions, whose length is at most half the example's), then
train keeps 0 < l <= L and test L < l <= 2L. `jump_split` is SCAN's
add-primitive split on SCAN* with the difficulty knobs of §5.2 (maximum
length, maximum distinct verbs per training example); its test set depends
only on its own settings, so every difficulty level shares it.
"""

import random
from typing import List, Optional, Sequence, Tuple

from csl_jax.data.tsv import Example
from csl_jax.errors import InputError

SCAN_VERBS = ("walk", "look", "run", "jump")
NUM_PRIMITIVES = 200
DIRECTIONS = ("left", "right")
_TURN = {d: f"I_TURN_{d.upper()}" for d in DIRECTIONS}
_REPEAT = {"twice": 2, "thrice": 3}
CONJUNCTIONS = ("and", "after")
# The paper's length splits (§3.1).
LENGTHS = (31, 62, 125, 250)
SPLITS = ("length", "jump")


def primitives(num: int = NUM_PRIMITIVES) -> Tuple[str, ...]:
  """The verbs: SCAN's four, then p4, p5, ..."""
  if num < len(SCAN_VERBS):
    raise InputError(f"SCAN* needs at least {len(SCAN_VERBS)} primitives, "
                     f"got {num}")
  return SCAN_VERBS + tuple(f"p{i}" for i in range(len(SCAN_VERBS), num))


def action(verb: str) -> str:
  return f"I_{verb.upper()}"


def _clause_actions(tokens: Sequence[str], verbs, command: str) -> List[str]:
  """Actions of one S clause (1 to 4 tokens)."""
  def bad(why):
    return InputError(f"invalid SCAN* command {command!r}: {why}")
  times = 1
  if tokens and tokens[-1] in _REPEAT:
    times = _REPEAT[tokens[-1]]
    tokens = tokens[:-1]
  if not tokens:
    raise bad("empty clause")
  verb = tokens[0]
  if verb not in verbs:
    raise bad(f"{verb!r} is not a verb")
  act = [action(verb)]
  if len(tokens) == 1:
    return act * times
  if len(tokens) > 3 or tokens[-1] not in _TURN:
    raise bad(f"bad clause {' '.join(tokens)!r}")
  turn = [_TURN[tokens[-1]]]
  modifier = tokens[1] if len(tokens) == 3 else None
  if modifier is None:
    one = turn + act
  elif modifier == "opposite":
    one = turn + turn + act
  elif modifier == "around":
    one = (turn + act) * 4
  else:
    raise bad(f"unexpected {modifier!r}")
  return one * times


def interpret(command: str, verbs: Optional[Sequence[str]] = None) -> str:
  """The action sequence of a SCAN* command: `and` parts in order, each
  part's `after` clauses last to first.

  Raises:
    InputError: if `command` is not a SCAN* command over `verbs`.
  """
  verbs = set(verbs or primitives())
  actions = []
  for part in _split(command.split(), "and", command):
    clauses = _split(part, "after", command)
    for clause in reversed(clauses):
      actions.extend(_clause_actions(clause, verbs, command))
  return " ".join(actions)


def _split(tokens, word, command) -> List[List[str]]:
  parts, current = [], []
  for t in tokens:
    if t == word:
      if not current:
        raise InputError(f"invalid SCAN* command {command!r}: nothing "
                         f"before {word!r}")
      parts.append(current)
      current = []
    else:
      current.append(t)
  if not current:
    raise InputError(f"invalid SCAN* command {command!r}: nothing after "
                     f"the last {word!r}" if parts else
                     f"invalid SCAN* command {command!r}: empty")
  parts.append(current)
  return parts


def _clause(rng: random.Random, verb: str) -> List[str]:
  form = rng.randrange(4)
  tokens = [verb] if form == 0 else \
      [verb, rng.choice(DIRECTIONS)] if form == 1 else \
      [verb, ("opposite", "around")[form - 2], rng.choice(DIRECTIONS)]
  repeat = rng.randrange(3)
  return tokens + ([("twice", "thrice")[repeat - 1]] if repeat else [])


def random_command(rng: random.Random, length: int,
                   verbs: Sequence[str]) -> Optional[List[str]]:
  """A command of at most `length` tokens, clauses added while they fit;
  None if not even one clause fits (a 1-token clause always does)."""
  tokens: List[str] = []
  while True:
    clause = _clause(rng, rng.choice(verbs))
    extra = len(clause) + (1 if tokens else 0)
    if len(tokens) + extra > length:
      return tokens or None
    if tokens:
      tokens.append(rng.choice(CONJUNCTIONS))
    tokens.extend(clause)


def generate(rng: random.Random, num: int, min_len: int, max_len: int,
             verbs: Sequence[str], exclude=frozenset(),
             max_distinct: Optional[int] = None,
             must_have: Optional[str] = None) -> List[Example]:
  """`num` distinct examples with min_len <= length <= max_len: each draws
  a target length uniformly in that range (and, with `max_distinct`, its
  own set of at most that many verbs; with `must_have`, that verb is put
  in one clause when the draw lacks it)."""
  if not 1 <= min_len <= max_len:
    raise InputError(f"SCAN* lengths must satisfy 1 <= min <= max, got "
                     f"{min_len}, {max_len}")
  seen, out = set(exclude), []
  attempts = 0
  while len(out) < num:
    attempts += 1
    if attempts > 100 * num + 1000:
      raise InputError(f"SCAN*: only {len(out)} distinct commands of "
                       f"length {min_len}..{max_len} found for {num} asked")
    pool = verbs
    if max_distinct is not None:
      pool = rng.sample(list(verbs), min(max_distinct, len(verbs)))
    tokens = random_command(rng, rng.randint(min_len, max_len), pool)
    if tokens is None or len(tokens) < min_len:
      continue
    if must_have is not None and must_have not in tokens:
      # One clause's verb becomes it (clauses start the command and follow
      # each conjunction).
      starts = [0] + [i + 1 for i, t in enumerate(tokens)
                      if t in CONJUNCTIONS]
      tokens[rng.choice(starts)] = must_have
    command = " ".join(tokens)
    if command in seen:
      continue
    seen.add(command)
    out.append(Example(command, interpret(command, verbs)))
  return out


def halve(example: Example, verbs: Sequence[str]) -> Optional[Example]:
  """App. A.2's half-length truncation: the most leading clauses (with the
  conjunctions between them) of length <= len/2; None if none fits."""
  tokens = example.input.split()
  limit = len(tokens) // 2
  kept, clause = [], []
  for t in tokens + ["and"]:
    if t in CONJUNCTIONS:
      if len(kept) + len(clause) > limit:
        break
      kept.extend(clause)
      kept.append(t)
      clause = []
    else:
      clause.append(t)
  kept = kept[:-1]  # the trailing conjunction
  if not kept:
    return None
  command = " ".join(kept)
  return Example(command, interpret(command, verbs))


def _check_sizes(**sizes) -> None:
  for name, value in sizes.items():
    if not isinstance(value, int) or value < 1:
      raise InputError(f"SCAN* {name} must be a positive integer, got "
                       f"{value!r}")


def _dedup(examples):
  seen, out = set(), []
  for e in examples:
    if e.input not in seen:
      seen.add(e.input)
      out.append(e)
  return out


def length_split(max_train_len: int, num_train: int = 10_000,
                 num_test: int = 2_000, seed: int = 0,
                 num_primitives: int = NUM_PRIMITIVES,
                 lengths: Sequence[int] = LENGTHS
                 ) -> Tuple[List[Example], List[Example]]:
  """Train: 0 < l <= L, test: L < l <= 2L, L = `max_train_len`, one of
  `lengths`: generated at the largest L, halved down to L (App. A.2)."""
  _check_sizes(num_train=num_train, num_test=num_test)
  lengths = sorted(lengths)
  if max_train_len not in lengths:
    raise InputError(f"SCAN* length split: L must be one of "
                     f"{', '.join(map(str, lengths))}, got {max_train_len}")
  verbs = primitives(num_primitives)
  rng = random.Random(f"scan_star length {seed}")
  top = lengths[-1]
  train = generate(rng, num_train, 1, top, verbs)
  test = generate(rng, num_test, top + 1, 2 * top, verbs,
                  exclude={e.input for e in train})
  for length in reversed(lengths[:-1]):
    if length < max_train_len:
      break
    train = _dedup(h for h in (halve(e, verbs) for e in train) if h)
    test = _dedup(h for h in (halve(e, verbs) for e in test)
                  if h and length < len(h.input.split()) <= 2 * length)
  return train, test


def jump_split(max_train_len: int = 62, num_train: int = 10_000,
               num_test: int = 2_000, seed: int = 0,
               max_primitives_per_example: Optional[int] = None,
               test_max_len: int = 62,
               num_primitives: int = NUM_PRIMITIVES,
               primitive: str = "jump"
               ) -> Tuple[List[Example], List[Example]]:
  """SCAN's add-primitive split on SCAN*: `primitive` appears in training
  only alone (1/10 of the lines, as in SCAN), the test set holds commands
  with it of 2 to `test_max_len` tokens. Training examples have at most
  `max_train_len` tokens and at most `max_primitives_per_example` distinct
  verbs (§5.2's difficulty knobs); the test set depends only on `seed`,
  `num_test`, `test_max_len` and the verbs."""
  _check_sizes(max_train_len=max_train_len, num_train=num_train,
               num_test=num_test, test_max_len=test_max_len)
  if num_train < 10 or test_max_len < 2:
    raise InputError("SCAN* jump split: num_train must be >= 10 (a tenth "
                     "is the primitive alone) and test_max_len >= 2")
  verbs = primitives(num_primitives)
  if primitive not in verbs:
    raise InputError(f"{primitive!r} is not a SCAN* verb")
  if max_primitives_per_example is not None and \
      max_primitives_per_example < 1:
    raise InputError("max_primitives_per_example must be >= 1")
  others = [v for v in verbs if v != primitive]
  test_rng = random.Random(f"scan_star jump test {seed}")
  test = generate(test_rng, num_test, 2, test_max_len, verbs,
                  exclude={primitive}, must_have=primitive)
  rng = random.Random(f"scan_star jump train {seed} {max_train_len} "
                      f"{max_primitives_per_example}")
  num_alone = num_train // 10
  train = generate(rng, num_train - num_alone, 1, max_train_len, others,
                   max_distinct=max_primitives_per_example)
  train += [Example(primitive, action(primitive))] * num_alone
  rng.shuffle(train)
  return train, test
