"""SCAN (Lake & Baroni, 2018), generated from its grammar; no download needed.

The phrase-structure grammar of SCAN commands:

  C -> S and S | S after S | S
  S -> V twice | V thrice | V
  V -> D[1] opposite D[2] | D[1] around D[2] | D | U
  D -> U left | U right | turn left | turn right
  U -> walk | look | run | jump

`D[1] opposite D[2]` puts `opposite` between the two words of a D ("walk
opposite left"). That gives 10 D, 34 V, 102 S and 102 + 2 * 102**2 = 20,910
distinct commands.

The interpretation maps a command to a sequence of the actions I_WALK,
I_LOOK, I_RUN, I_JUMP, I_TURN_LEFT and I_TURN_RIGHT ("turn" alone is no
action; "x after y" is y's actions, then x's).

`make_split` builds the `simple`, `addprim_jump`, `addprim_turn_left`,
`length` and `template_around_right` splits; the rule-defined ones equal the published files as multisets
of lines (checked by scripts/reproduce_scan_splits.py).
"""

import functools
import os
import random
import socket
import tempfile
import threading
from typing import (Dict, Iterable, List, Mapping, Optional, Tuple,
                    Union)
import urllib.parse

from csl_jax.data.tsv import Example, read_tsv
from csl_jax.errors import InputError

SPLITS = ("simple", "addprim_jump", "addprim_turn_left", "length",
          "template_around_right")

PRIMITIVES = ("walk", "look", "run", "jump")
DIRECTIONS = ("left", "right")
_ACTION = {p: f"I_{p.upper()}" for p in PRIMITIVES}
_TURN = {d: f"I_TURN_{d.upper()}" for d in DIRECTIONS}
_REPEAT = {"twice": 2, "thrice": 3}
_CONJUNCTIONS = ("and", "after")

# `simple`: a random 80/20 split (published: 16,728 train / 4,182 test).
SIMPLE_TEST_FRACTION = 0.2

# `length`: train holds the commands whose action sequence has at most this
# many actions, test the longer ones. In the published length split train has
# lengths 1..22 and test 24..48 (no command has exactly 23 actions), giving
# 16,990 train and 3,920 test commands.
LENGTH_MAX_TRAIN_ACTIONS = 22

# Add-primitive splits: the primitive is repeated in train so that it makes
# up exactly 1/10 of the training lines, i.e. it occurs (number of other
# training commands) / 9 times. Published counts: addprim_jump train has
# 13,203 commands without "jump" plus "jump" 1,467 times (13,203 / 9 = 1,467;
# 1,467 of 14,670 lines); addprim_turn_left train has 19,701 commands without
# "turn left" plus "turn left" 2,189 times (19,701 / 9 = 2,189; 2,189 of
# 21,890 lines). Both divide exactly.
PRIMITIVE_TRAIN_SHARE_DENOMINATOR = 10

# `template_around_right` (Loula et al., 2018; GECA's and Zhou et al.'s
# "around right"): test holds the commands with `U around right` for a
# primitive U, train those without `around right`; a command with `turn
# around right` is in neither (published: 15,225 train / 4,476 test, equal
# as multisets; the 1,209 others are the commands with `turn around right`).
TEMPLATE = "around right"
TEMPLATE_DROPPED = "turn around right"

# Split name -> the primitive held out (as a command).
_ADDPRIM = {"addprim_jump": "jump", "addprim_turn_left": "turn left"}


def _d_phrases() -> List[Tuple[str, str]]:
  """All D as (first word, direction)."""
  return [(w, d) for w in PRIMITIVES + ("turn",) for d in DIRECTIONS]


def _v_phrases() -> List[str]:
  vs = []
  for w, d in _d_phrases():
    vs.append(f"{w} opposite {d}")
    vs.append(f"{w} around {d}")
    vs.append(f"{w} {d}")
  vs.extend(PRIMITIVES)
  return vs


def _s_phrases() -> List[str]:
  ss = []
  for v in _v_phrases():
    ss.extend([f"{v} twice", f"{v} thrice", v])
  return ss


@functools.lru_cache(maxsize=None)
def _all_commands() -> Tuple[str, ...]:
  ss = _s_phrases()
  commands = set(ss)
  for conj in _CONJUNCTIONS:
    commands.update(f"{a} {conj} {b}" for a in ss for b in ss)
  return tuple(sorted(commands))


@functools.lru_cache(maxsize=None)
def _all_examples() -> Tuple[Example, ...]:
  return tuple(Example(c, interpret(c)) for c in _all_commands())


def all_commands() -> List[str]:
  """All 20,910 SCAN commands, sorted."""
  return list(_all_commands())


def _interpret_v(tokens: List[str], command: str) -> List[str]:
  """Actions of a V phrase (1 to 3 tokens)."""
  def bad(why):
    return InputError(f"invalid SCAN command {command!r}: {why}")

  if not tokens:
    raise bad("empty phrase")
  for t in tokens:
    if t in _REPEAT:
      raise bad(f"{t!r} may only end a phrase (before 'and'/'after' or at "
                "the end)")
  head = tokens[0]
  if head not in _ACTION and head != "turn":
    raise bad(f"unexpected token {head!r}; a phrase must start with one of "
              f"{', '.join(PRIMITIVES + ('turn',))}")
  act = [_ACTION[head]] if head in _ACTION else []
  if len(tokens) == 1:
    if head == "turn":
      raise bad("'turn' must be followed by a direction")
    return act
  if len(tokens) > 3:
    raise bad(f"unexpected token {tokens[3]!r} after "
              f"{' '.join(tokens[:3])!r}")
  modifier = tokens[1] if len(tokens) == 3 else None
  if modifier is not None and modifier not in ("opposite", "around"):
    raise bad(f"unexpected token {modifier!r} after {head!r}; expected "
              "opposite or around")
  direction = tokens[-1]
  if direction not in _TURN:
    raise bad(f"unexpected token {direction!r} after "
              f"{' '.join(tokens[:-1])!r}; expected left or right")
  turn = [_TURN[direction]]
  if modifier == "opposite":
    return turn + turn + act
  if modifier == "around":
    return (turn + act) * 4
  return turn + act


def _interpret_s(tokens: List[str], command: str) -> List[str]:
  if tokens and tokens[-1] in _REPEAT:
    return _interpret_v(tokens[:-1], command) * _REPEAT[tokens[-1]]
  return _interpret_v(tokens, command)


def interpret(command: str) -> str:
  """The action sequence of a SCAN command, space-separated.

  Raises:
    InputError: if `command` is not generated by the SCAN grammar.
  """
  if not isinstance(command, str):
    raise InputError(f"SCAN command must be a string, got {type(command)}")
  tokens = command.split()
  if not tokens:
    raise InputError("invalid SCAN command: empty")
  conj = [i for i, t in enumerate(tokens) if t in _CONJUNCTIONS]
  if len(conj) > 1:
    raise InputError(f"invalid SCAN command {command!r}: more than one "
                     f"conjunction ({tokens[conj[1]]!r} after "
                     f"{tokens[conj[0]]!r})")
  if conj:
    i = conj[0]
    if i == 0 or i == len(tokens) - 1:
      side = "before" if i == 0 else "after"
      raise InputError(f"invalid SCAN command {command!r}: nothing {side} "
                       f"{tokens[i]!r}")
    first = _interpret_s(tokens[:i], command)
    second = _interpret_s(tokens[i + 1:], command)
    actions = first + second if tokens[i] == "and" else second + first
  else:
    actions = _interpret_s(tokens, command)
  return " ".join(actions)


def is_valid_command(command: str) -> bool:
  """Whether `command` is one of the SCAN commands."""
  try:
    interpret(command)
  except InputError:
    return False
  return True


def _contains(command: str, phrase: str) -> bool:
  """Whether `phrase` occurs in `command` as a run of whole tokens."""
  return f" {phrase} " in f" {command} "


def _check_split_name(name: str) -> None:
  if name not in SPLITS:
    raise InputError(f"unknown SCAN split {name!r}; valid splits: "
                     f"{', '.join(SPLITS)}")


def make_split(name: str, seed: int = 0) -> Tuple[List[Example],
                                                  List[Example]]:
  """Builds a SCAN split as (train, test) lists of Examples.

  `simple` is a random 80/20 split of all commands drawn with `seed`. The
  other splits are defined by rules; for them `seed` only sets the order of
  the examples (both lists are shuffled with it).

  Raises:
    InputError: for an unknown split name.
  """
  _check_split_name(name)
  rng = random.Random(seed)
  examples = _all_examples()
  if name == "simple":
    order = list(range(len(examples)))
    rng.shuffle(order)
    num_test = round(len(examples) * SIMPLE_TEST_FRACTION)
    test = [examples[i] for i in order[:num_test]]
    train = [examples[i] for i in order[num_test:]]
    return train, test
  if name == "template_around_right":
    kept = [e for e in examples if not _contains(e.input, TEMPLATE_DROPPED)]
    train = [e for e in kept if not _contains(e.input, TEMPLATE)]
    test = [e for e in kept if _contains(e.input, TEMPLATE)]
  elif name == "length":
    train = [e for e in examples
             if len(e.output.split()) <= LENGTH_MAX_TRAIN_ACTIONS]
    test = [e for e in examples
            if len(e.output.split()) > LENGTH_MAX_TRAIN_ACTIONS]
  else:
    primitive = _ADDPRIM[name]
    train, test = [], []
    for e in examples:
      if e.input == primitive:
        continue
      (test if _contains(e.input, primitive) else train).append(e)
    # The primitive is 1/10 of the training lines (see the constant's
    # comment for the published counts this reproduces).
    num_repeats = round(len(train) / (PRIMITIVE_TRAIN_SHARE_DENOMINATOR - 1))
    train += [Example(primitive, interpret(primitive))] * num_repeats
  rng.shuffle(train)
  rng.shuffle(test)
  return train, test


def _text(value: Union[bytes, str]) -> str:
  if isinstance(value, bytes):
    return value.decode("utf-8")
  if hasattr(value, "numpy"):  # An eager tf.Tensor.
    return _text(value.numpy())
  if hasattr(value, "item") and not isinstance(value, str):  # numpy scalar.
    return _text(value.item())
  return str(value)


def examples_from_tfds_records(
    records: Iterable[Mapping[str, Union[bytes, str]]]) -> List[Example]:
  """Converts TFDS `scan` records ({'commands', 'actions'}) to Examples."""
  examples = []
  for i, record in enumerate(records):
    try:
      commands, actions = record["commands"], record["actions"]
    except KeyError as e:
      raise InputError(f"TFDS record {i} has no {e.args[0]!r} field") from None
    examples.append(Example(_text(commands).strip(), _text(actions).strip()))
  return examples


def load_tfds(split_name: str, data_dir: Optional[str] = None
              ) -> Tuple[List[Example], List[Example]]:
  """Loads a SCAN split with TensorFlow Datasets (needs network the first time).

  Returns (train, test). tensorflow_datasets is imported only here.
  """
  _check_split_name(split_name)
  from csl_jax import quiet  # pylint: disable=g-import-not-at-top
  try:
    quiet.silence_accelerator_logs()
    with quiet.filtered_stderr():  # TF's CUDA probe lines on import
      import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise InputError("load_tfds needs tensorflow_datasets "
                     "(pip install tensorflow-datasets)") from None
  name = f"scan/{split_name}"
  # tfds makes temporary directories it does not remove (its DatasetInfo
  # looks for metadata on GCS into `mkdtemp("tfds")`, also offline): they
  # go under one of ours, removed after. `tempfile.tempdir` is the
  # process's: one load at a time swaps it.
  with _TFDS_TEMPDIR:
    before = tempfile.tempdir
    try:
      with tempfile.TemporaryDirectory(prefix="csl_jax_tfds_",
                                       ignore_cleanup_errors=True) as scratch:
        tempfile.tempdir = scratch
        return _load_tfds(tfds, name, data_dir)
    finally:
      tempfile.tempdir = before


_TFDS_TEMPDIR = threading.Lock()


def _load_tfds(tfds, name: str, data_dir: Optional[str]
               ) -> Tuple[List[Example], List[Example]]:
  try:
    builder = tfds.builder(name, data_dir=data_dir)
    if not builder.data_path.exists():
      # tfds would retry the download for minutes offline: fail fast.
      host, port = _download_host()
      if not _reachable(host, port):
        raise InputError(
            f"TFDS has no prepared {name} in {builder.data_dir} and "
            f"{host}:{port} is unreachable (offline?); use --source "
            "generate (the default: no network) or --source local "
            "--data_dir DIR with train.tsv/test.tsv", data_dir)
      builder.download_and_prepare(download_config=tfds.download
                                   .DownloadConfig(try_download_gcs=False))
    result: Dict[str, List[Example]] = {}
    for part in ("train", "test"):
      ds = builder.as_dataset(split=part)
      result[part] = examples_from_tfds_records(tfds.as_numpy(ds))
  except InputError:
    raise
  except Exception as e:  # pylint: disable=broad-except
    # tfds raises many types (network, disk, registration): one line.
    raise InputError(f"TFDS could not load {name}: {type(e).__name__}: "
                     f"{str(e).splitlines()[0] if str(e) else ''}",
                     data_dir) from None
  return result["train"], result["test"]


_SCAN_DOWNLOAD = ("github.com", 443)  # tfds' SCAN builder's _DATA_URL host


def _download_host() -> Tuple[str, int]:
  """Where the download connects first: the HTTPS proxy if one is set."""
  proxy = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy")
  if proxy:
    parsed = urllib.parse.urlparse(proxy if "//" in proxy
                                   else f"http://{proxy}")
    if parsed.hostname:
      return parsed.hostname, parsed.port or 8080
  return _SCAN_DOWNLOAD


def _reachable(host: str, port: int, timeout: float = 5.0) -> bool:
  """Whether a TCP connection to host:port opens within `timeout` s."""
  try:
    with socket.create_connection((host, port), timeout=timeout):
      return True
  except OSError:
    return False


def load_local(directory: str) -> Tuple[List[Example], List[Example]]:
  """Reads (train, test) from `<directory>/train.tsv` and `test.tsv`."""
  return (read_tsv(os.path.join(directory, "train.tsv")),
          read_tsv(os.path.join(directory, "test.tsv")))
