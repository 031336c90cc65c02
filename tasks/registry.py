"""SeqIO tasks and mixtures: original data, each method's synthetic data.

For a dataset NAME whose synthetic training pairs come from augmentation
methods m (csl, geca, csl_random_50000, ...), `register_dataset` registers
  NAME                the original splits DATA_DIR/{train,dev,test,gen}.tsv,
                      and "validation", T5X's evaluation split during
                      training: dev.tsv where there is one, else test.tsv
  NAME_reversed       the same files with inputs and targets swapped
                      (program -> utterance), e.g. for backtranslation
  NAME_<m>_synthetic  method m's synthetic pairs, as a "train" split
  NAME_<m>_mixture    NAME and NAME_<m>_synthetic, sampled 1:1 by default:
                      the paper's (§3.2) "approximately equal number of
                      original and synthesized examples", in expectation
  NAME_all_mixture    NAME and every method's synthetic task: NAME at the
                      original rate and the methods splitting the synthetic
                      rate equally, so original:synthetic stays 1:1 and each
                      of n methods gives 1/n of the synthetic examples
A method whose synthetic file has no pairs (it made nothing) still gets its
NAME_<m>_synthetic (empty), but NAME_<m>_mixture is NAME alone and
NAME_all_mixture leaves it out: a SeqIO mixture ends at its first empty
component, so either would otherwise give no example at all.
  NAME_<m>_programs   method m's sampled programs to backtranslate (pcfg_bt
                      with a T5X reverse model), as split "programs":
                      inputs the program, targets empty (for t5x.infer)
`register_dataset(..., synthetic_tsv=S)` is method "csl" (NAME_csl_*, the
names the T5X gin files use). `register_run(RUN)` reads the run directory
that `csl-jax augment --out RUN` writes:
  RUN/data/<split>.tsv                 the original splits
  RUN/<m>/synthetic.tsv                method m (any directory holding a
                                       synthetic.tsv, other than data/)
  RUN/<m>/<selector>_<k>/synthetic.tsv method m_<selector>_<k>, a subset
  RUN/<m>/programs/programs.txt        method m's programs (NAME_<m>_programs)
  RUN/<m>/summary.json                 `mixing`: "union" for a method that
                                       trains on the union of original and
                                       synthetic pairs (primaug, augzero,
                                       pcfg_bt): register_run then samples
                                       its NAME_<m>_mixture in proportion to
                                       the sizes (`union_rates`)
Paths are local or gs:// (read with tf.io.gfile). Files hold
`input<TAB>output` lines (UTF-8); a malformed line fails the input pipeline
with an InvalidArgumentError naming the file and line. An input prefix
(`input_prefix`, or $CSL_JAX_INPUT_PREFIX when registering), e.g. Shaw et
al.'s "semanticparse: ", goes before every input of NAME and the synthetic
tasks (not NAME_reversed, whose inputs are programs).
"""

import functools
import glob
import json
import os
import re
import types
from typing import (Any, Collection, Dict, List, Mapping, NamedTuple,
                    Optional, Sequence, Tuple, Union)

from absl import logging
import seqio
import tensorflow as tf

from csl_jax.errors import InputError
from csl_jax.files import file_sha256
from tasks import metrics
from tasks import vocab as vocab_lib

PathLike = Union[str, os.PathLike]
RateOrRates = Union[seqio.MixtureRate, Mapping[str, seqio.MixtureRate]]

DEFAULT_SPLITS = ("train", "dev", "test", "gen")  # gen: COGS
# T5X's default evaluation split, an alias of the first of these that exists:
# a held-out dev set where the dataset has one (COGS, GeoQuery's template
# and length splits), else test (SCAN, GeoQuery's standard split).
VALIDATION = "validation"
VALIDATION_SOURCES = ("dev", "test")
CSL = "csl"  # The method `synthetic_tsv` and the older layouts stand for.
SYNTHETIC_SUFFIX = "_csl_synthetic"
MIXTURE_SUFFIX = "_csl_mixture"
ALL_MIXTURE_SUFFIX = "_all_mixture"
REVERSED_SUFFIX = "_reversed"
PROGRAMS_SUFFIX = "_programs"  # NAME_<m>_programs
PROGRAMS_SPLIT = "programs"
PROGRAMS_FILE = "programs/programs.txt"  # RUN/<method>/programs/programs.txt
ENV_DATA = "CSL_JAX_DATA"
ENV_INPUT_PREFIX = "CSL_JAX_INPUT_PREFIX"
RUN_DATA_DIR = "data"  # RUN/data/<split>.tsv
SYNTHETIC_FILE = "synthetic.tsv"  # RUN/<method>[/<selector>]/synthetic.tsv
# Method csl's pairs in a flat dataset directory or an older run, in order.
SYNTHETIC_FILES = ("synthetic.tsv", "samples/samples.tsv")
# "all" would make NAME_all_mixture both a method's and the all-mixture.
_RESERVED_METHODS = ("all",)


class RegisteredNames(NamedTuple):
  """The names `register_dataset` registered for one dataset."""
  original: str
  synthetic: Optional[str]  # Method csl's task; None without it, as mixture.
  mixture: Optional[str]
  reversed: Optional[str] = None
  # {method: (NAME_<m>_synthetic, NAME_<m>_mixture)}, csl included.
  methods: Mapping[str, Tuple[str, str]] = types.MappingProxyType({})
  all_mixture: Optional[str] = None  # None without methods.
  # {method: NAME_<m>_programs}, the programs to backtranslate.
  programs: Mapping[str, str] = types.MappingProxyType({})

  def task_names(self) -> List[str]:
    """Every registered task: original, reversed, each method's synthetic
    and programs."""
    return [n for n in (self.original, self.reversed) if n] + [
        synthetic for synthetic, _ in self.methods.values()] + list(
            self.programs.values())

  def mixture_names(self) -> List[str]:
    """Every registered mixture: each method's and the all-mixture."""
    return [mixture for _, mixture in self.methods.values()] + (
        [self.all_mixture] if self.all_mixture else [])


# name -> RegisteredNames, so unregistering finds every method's names.
# Kept across importlib.reload, which re-runs this in the same namespace.
_REGISTERED: Dict[str, RegisteredNames] = globals().get("_REGISTERED", {})


def _read_numbered_lines(path: tf.Tensor) -> tf.data.Dataset:
  # Keeps file and line number so a bad line can be reported. As
  # csl_jax.data.tsv reads the file: a BOM is not part of the first token,
  # and a blank line (only at the end, the readers before training check)
  # is no example (a lone tab is, malformed).
  lines = tf.data.TextLineDataset(path).enumerate(start=1)
  lines = lines.filter(lambda number, line: tf.logical_or(
      tf.strings.strip(line) != "",
      tf.strings.regex_full_match(line, "(?s).*\t.*")))
  return lines.map(lambda number, line: {
      "line": tf.where(number == 1,
                       tf.strings.regex_replace(line, "^\ufeff", ""), line),
      "source": path, "line_number": number})


@seqio.map_over_dataset
def parse_tsv(ex):
  """Maps an `input<TAB>output` line to {"inputs", "targets"} text."""
  line = ex["line"]
  fields = tf.strings.split(line, "\t")
  padded = tf.concat([fields, ["", ""]], axis=0)
  inputs = tf.strings.strip(padded[0])
  targets = tf.strings.strip(padded[1])
  ok = tf.logical_and(tf.equal(tf.size(fields), 2),
                      tf.logical_and(inputs != "", targets != ""))
  where = tf.strings.join([ex["source"], ":",
                           tf.strings.as_string(ex["line_number"])])
  check = tf.debugging.Assert(ok, [
      where, "malformed TSV line (want `input<TAB>output`, both non-empty):",
      line])
  with tf.control_dependencies([check]):
    return {"inputs": tf.identity(inputs), "targets": tf.identity(targets)}


@seqio.map_over_dataset
def parse_program(ex):
  """Maps a program line to {"inputs": the program, "targets": ""}."""
  program = tf.strings.strip(ex["line"])
  where = tf.strings.join([ex["source"], ":",
                           tf.strings.as_string(ex["line_number"])])
  check = tf.debugging.Assert(program != "", [
      where, "empty line (want one program a line)"])
  with tf.control_dependencies([check]):
    return {"inputs": tf.identity(program), "targets": tf.constant("")}


@seqio.map_over_dataset
def swap_inputs_targets(ex):
  """{"inputs": x, "targets": y} -> {"inputs": y, "targets": x}."""
  return {"inputs": ex["targets"], "targets": ex["inputs"]}


def prefix_inputs(prefix: str):
  """A preprocessor that puts `prefix` before every input text."""

  @seqio.map_over_dataset
  def add_prefix(ex):
    return {**ex, "inputs": tf.strings.join([prefix, ex["inputs"]])}

  return add_prefix


def _input_prefix(input_prefix: Optional[str]) -> str:
  if input_prefix is None:
    return os.environ.get(ENV_INPUT_PREFIX, "")
  return input_prefix


def _replace_task(name, split_to_path, vocabulary, metric_fns,
                  reverse=False, input_prefix="", parse=parse_tsv):
  features = {key: seqio.Feature(vocabulary, add_eos=True)
              for key in ("inputs", "targets")}
  # Swapping after parse_tsv reads the very same files as the original.
  text_steps = [swap_inputs_targets] if reverse else []
  if input_prefix:
    text_steps.append(prefix_inputs(input_prefix))
  # Remove first so reloading a module that registers does not crash.
  seqio.TaskRegistry.remove(name)
  task = seqio.TaskRegistry.add(
      name,
      source=seqio.FileDataSource(_read_numbered_lines, split_to_path),
      output_features=features,
      preprocessors=[parse] + text_steps + [
          seqio.preprocessors.tokenize,
          seqio.CacheDatasetPlaceholder(),
          seqio.preprocessors.append_eos_after_trim,
      ],
      postprocess_fn=metrics.strip_text,
      metric_fns=list(metric_fns))
  if parse is parse_tsv:  # what split_texts knows how to read
    _TEXT_STEPS[name] = (task, reverse, input_prefix)
  else:
    _TEXT_STEPS.pop(name, None)


# name -> (the Task, reverse, input prefix) of the tasks `_replace_task`
# made: what `split_texts` needs to read their text without tf.data.
_TEXT_STEPS = globals().get("_TEXT_STEPS", {})
_ASCII_SPACE = " \t\n\r\x0b\x0c"  # tf.strings.strip's whitespace


def split_texts(name: str, split: str
                ) -> Optional[Tuple[List[str], List[str]]]:
  """The (inputs, targets) texts of `split` of task `name` as its
  preprocessors leave them before tokenizing (`parse_tsv`, the swap of
  NAME_reversed, the input prefix), in SeqIO's data order, read without
  tf.data. None where that cannot be promised, and SeqIO must read it: a
  task this module did not make (or one replaced since), a split of
  several files (SeqIO interleaves their lines), or a file `parse_tsv`
  would reject (SeqIO then says where)."""
  made = _TEXT_STEPS.get(name)
  if made is None or name not in seqio.TaskRegistry.names() or \
      seqio.TaskRegistry.get(name) is not made[0]:
    return None
  task, reverse, prefix = made
  files = task.source.list_shards(split)
  if len(files) != 1:
    return None
  try:
    with tf.io.gfile.GFile(files[0], "rb") as f:
      text = f.read().decode("utf-8")
  except UnicodeDecodeError:
    return None
  lines = text.split("\n")
  if lines and lines[-1] == "":
    lines.pop()  # TextLineDataset yields no line after the last newline
  inputs, targets = [], []
  for number, line in enumerate(lines, start=1):
    line = line.replace("\r", "")  # TextLineDataset drops every one
    if number == 1 and line.startswith("\ufeff"):
      line = line[1:]  # as _read_numbered_lines
    if not line.strip(_ASCII_SPACE) and "\t" not in line:
      continue  # a blank line: no example (_read_numbered_lines)
    fields = line.split("\t")
    if len(fields) != 2:
      return None
    x, y = fields[0].strip(_ASCII_SPACE), fields[1].strip(_ASCII_SPACE)
    if not x or not y:
      return None
    if reverse:
      x, y = y, x
    inputs.append(prefix + x)
    targets.append(y)
  return inputs, targets


def _replace_mixture(name, tasks_and_rates):
  seqio.MixtureRegistry.remove(name)
  seqio.MixtureRegistry.add(name, tasks_and_rates)
  logging.info("Registered SeqIO mixture %s: %s", name, tasks_and_rates)


def _join(directory: str, *names: str) -> str:
  return "/".join([directory.rstrip("/")] + list(names))


def _divided(rate: seqio.MixtureRate, n: int) -> seqio.MixtureRate:
  if callable(rate):
    return lambda task: rate(task) / n
  return rate / n


def _has_examples(pattern: str) -> bool:
  """Whether the file(s) `pattern` names hold a line SeqIO reads as an
  example (`_read_numbered_lines`: one not blank, or with a tab). Reads up
  to the first such line."""
  for path in sorted(tf.io.gfile.glob(pattern)):
    with tf.io.gfile.GFile(path, "rb") as f:
      for line in f:
        if line.strip() or b"\t" in line:
          return True
  return False


def _count_lines(path: Optional[str]) -> int:
  """The file's lines that are not blank (its examples); 0 if missing."""
  if not path or not tf.io.gfile.exists(path):
    return 0
  with tf.io.gfile.GFile(path, "rb") as f:
    return sum(1 for line in f if line.strip())


def union_rates(methods: Mapping[str, str], union: Collection[str],
                train_tsv: str) -> Dict[str, Any]:
  """`register_dataset`'s rates for methods ({method: synthetic file}) of
  which those in `union` train on the union of original and synthetic
  pairs: example counts, a union method's its size and every other
  method's the original's (1:1 as before), so NAME_all_mixture stays
  consistent too. None in `union`: {} (every mixture 1:1)."""
  if not set(union) & set(methods):
    return {}
  original = float(_count_lines(train_tsv))
  return {"original_rate": original,
          "synthetic_rate": {m: float(_count_lines(path)) if m in union
                             else original for m, path in methods.items()}}


def union_methods(run_dir: PathLike) -> List[str]:
  """The methods of a run directory whose RUN/<m>/summary.json says they
  train on the union (`mixing` "union"; `csl_jax.pipeline.augment` writes
  it); their selector subsets mix 1:1."""
  run_dir = os.fspath(run_dir)
  return [_method_name(entry) for entry in sorted(tf.io.gfile.listdir(
      run_dir)) if _data_key(_join(run_dir, entry.rstrip("/")), "mixing",
                             "summary.json") == "union"]


def _check_method(method: str) -> None:
  if not re.fullmatch(r"[a-z0-9_]+", method) or method in _RESERVED_METHODS:
    raise InputError(f"{method!r}: a method name is [a-z0-9_]+, not "
                     f"{', '.join(_RESERVED_METHODS)}")


def register_dataset(
    name: str,
    data_dir: PathLike,
    splits: Sequence[str] = DEFAULT_SPLITS,
    synthetic_tsv: Optional[PathLike] = None,
    vocabulary: Optional[seqio.Vocabulary] = None,
    original_rate: seqio.MixtureRate = 1.0,
    synthetic_rate: RateOrRates = 1.0,
    metric_fns=(metrics.exact_match,),
    synthetic: Optional[Mapping[str, PathLike]] = None,
    all_methods: Optional[Sequence[str]] = None,
    input_prefix: Optional[str] = None,
    programs: Optional[Mapping[str, PathLike]] = None,
) -> RegisteredNames:
  """Registers NAME, NAME_reversed and NAME_<m>_{synthetic,mixture} per method.

  Registering a name again replaces everything the earlier registration
  of that name registered.

  Args:
    name: task name, e.g. "scan_addprim_jump" (letters, digits, `_.:`).
    data_dir: directory (local or gs://) with `<split>.tsv` files.
    splits: the splits to register, those whose file exists; VALIDATION
      is added as the first of VALIDATION_SOURCES among them.
    synthetic_tsv: file (or glob) of method csl's synthetic pairs, e.g.
      `<run>/csl/synthetic.tsv`: the same as `synthetic={"csl": ...}`.
    vocabulary: defaults to `vocab.get_vocabulary()`.
    original_rate: mixture rate of the original task (a float or a
      `fn(task) -> float`, as seqio takes).
    synthetic_rate: mixture rate of each method's synthetic task, or
      {method: rate} (missing methods: 1.0); equal rates draw original and
      synthetic examples 1:1, each source repeated as needed.
    metric_fns: SeqIO metric functions for the tasks.
    synthetic: {method: file (or glob) of its synthetic pairs}, methods
      named [a-z0-9_]+ (not "all"), e.g. {"geca": ..., "csl_uat_5000": ...}.
    all_methods: the methods NAME_all_mixture mixes, default all of them
      (`register_run` leaves out selector subsets); with none, no
      NAME_all_mixture. NAME gets `original_rate` and each of the n methods
      its synthetic rate / n, so original:synthetic is as in the methods'
      own mixtures. A method with no synthetic pairs is left out (n counts
      the others), and its own mixture is NAME alone.
    input_prefix: text put before every input of NAME and the synthetic
      tasks, e.g. "semanticparse: "; defaults to $CSL_JAX_INPUT_PREFIX
      (none when unset).
    programs: {method: file of programs, one a line} to register as
      NAME_<m>_programs (split "programs"; no input prefix: its inputs are
      programs, as NAME_reversed's).

  Returns:
    The registered names.
  """
  data_dir = os.fspath(data_dir)
  methods = {m: os.fspath(p) for m, p in (synthetic or {}).items()}
  if synthetic_tsv is not None:
    if CSL in methods:
      raise InputError("method csl given both as synthetic_tsv and in "
                       "synthetic")
    methods = {CSL: os.fspath(synthetic_tsv), **methods}
  all_methods = list(methods if all_methods is None else all_methods)
  if isinstance(synthetic_rate, Mapping):
    rates_given = synthetic_rate
    rates = {m: synthetic_rate.get(m, 1.0) for m in methods}
  else:
    rates_given = {}
    rates = {m: synthetic_rate for m in methods}
  # Check everything before replacing anything.
  programs = {m: os.fspath(p) for m, p in (programs or {}).items()}
  for method, path in methods.items():
    _check_method(method)
    if not tf.io.gfile.glob(path):
      raise InputError(f"{path}: no such synthetic data file (method "
                       f"{method})")
  for method, path in programs.items():
    _check_method(method)
    if not tf.io.gfile.exists(path):
      raise InputError(f"{path}: no such programs file (method {method})")
  for what, named in (("all_methods", all_methods),
                      ("synthetic_rate", rates_given)):
    unknown = set(named) - set(methods)
    if unknown:  # A typo would otherwise pass unnoticed.
      raise InputError(f"{what}: {', '.join(sorted(unknown))} not among the "
                       "synthetic methods")
  split_to_path = {}
  for split in splits:
    path = _join(data_dir, f"{split}.tsv")
    if tf.io.gfile.exists(path):
      split_to_path[split] = path
  if not split_to_path:
    raise InputError(f"{data_dir}: none of "
                     f"{', '.join(s + '.tsv' for s in splits)} exists")
  held_out = [s for s in VALIDATION_SOURCES if s in split_to_path]
  if held_out and VALIDATION not in split_to_path:
    split_to_path[VALIDATION] = split_to_path[held_out[0]]
  input_prefix = _input_prefix(input_prefix)
  # A method may make nothing (GECA with one wug on SCAN length). SeqIO's
  # mixtures end at their first empty component: its mixture is the
  # original data alone, and the all-mixture leaves it out.
  empty = {m for m, path in methods.items() if not _has_examples(path)}
  for method in sorted(empty):
    logging.warning("%s: no synthetic pairs (method %s made nothing): "
                    "%s_%s_mixture is %s alone, and %s leaves it out",
                    methods[method], method, name, method, name,
                    name + ALL_MIXTURE_SUFFIX)

  vocabulary = vocabulary or vocab_lib.get_vocabulary()
  unregister_dataset(name)  # Drops methods the new registration lacks.
  _replace_task(name, split_to_path, vocabulary, metric_fns,
                input_prefix=input_prefix)
  reversed_name = name + REVERSED_SUFFIX
  _replace_task(reversed_name, split_to_path, vocabulary, metric_fns,
                reverse=True)
  logging.info("Registered SeqIO tasks %s, %s: %s%s", name, reversed_name,
               split_to_path,
               f" (input prefix {input_prefix!r})" if input_prefix else "")
  registered = {}
  for method, path in methods.items():
    task, mixture = f"{name}_{method}_synthetic", f"{name}_{method}_mixture"
    _replace_task(task, {"train": path}, vocabulary, metric_fns,
                  input_prefix=input_prefix)
    _replace_mixture(mixture, [(name, original_rate)] + (
        [] if method in empty else [(task, rates[method])]))
    registered[method] = (task, mixture)
  all_mixture = None
  if all_methods:
    all_mixture = name + ALL_MIXTURE_SUFFIX
    mixed = [m for m in all_methods if m not in empty]
    _replace_mixture(all_mixture, [(name, original_rate)] + [
        (registered[m][0], _divided(rates[m], len(mixed))) for m in mixed])
  program_tasks = {}
  for method, path in programs.items():
    program_tasks[method] = _programs_task(name, method)
    _replace_task(program_tasks[method], {PROGRAMS_SPLIT: path}, vocabulary,
                  metric_fns, parse=parse_program)
  csl = registered.get(CSL, (None, None))
  names = RegisteredNames(name, csl[0], csl[1], reversed_name,
                          types.MappingProxyType(registered), all_mixture,
                          types.MappingProxyType(program_tasks))
  _REGISTERED[name] = names
  return names


def unregister_dataset(name: str) -> None:
  """Removes what `register_dataset(name, ...)` registered, if anything."""
  names = _REGISTERED.pop(name, None)
  # The csl names too, as before, should the record be gone.
  mixtures = {name + MIXTURE_SUFFIX}
  tasks = {name, name + SYNTHETIC_SUFFIX}
  if names:
    mixtures.update(names.mixture_names())
    tasks.update(names.task_names())
  for mixture in sorted(mixtures):
    seqio.MixtureRegistry.remove(mixture)
  for task in sorted(tasks):
    seqio.TaskRegistry.remove(task)


def task_name(directory: PathLike) -> str:
  """A directory's basename as a task name: other than `\\w.:` becomes `_`."""
  return re.sub(r"[^\w.:]", "_",
                os.path.basename(os.fspath(directory).rstrip("/")))


def _method_name(directory_name: str) -> str:
  return re.sub(r"[^a-z0-9_]", "_", directory_name.rstrip("/").lower())


def _first_existing(paths):
  return next((p for p in paths if tf.io.gfile.exists(p)), None)


def _has_splits(data_dir: str, splits: Sequence[str] = DEFAULT_SPLITS):
  return any(tf.io.gfile.exists(_join(data_dir, f"{s}.tsv")) for s in splits)


def _add_method(methods: Dict[str, str], method: str, path: str) -> None:
  if method in methods:
    raise InputError(f"{path}: method {method} is also {methods[method]}")
  methods[method] = path


def _data_key(directory: str, field: str = "key",
              name: str = "stage_key.json") -> Optional[str]:
  """`field` of DIR/NAME (the pipeline's record of which data a stage or
  method was made from), or None."""
  path = _join(directory, name)
  if not tf.io.gfile.exists(path):
    return None
  with tf.io.gfile.GFile(path) as f:
    return json.load(f).get(field)


def find_methods(run_dir: PathLike) -> Tuple[Dict[str, str], List[str]]:
  """The synthetic data of a run directory (see the module docstring).

  Args:
    run_dir: an `augment --out` directory, local or gs://.

  Returns:
    ({method: synthetic.tsv}, the methods proper, without selector subsets).
    RUN/<m>/synthetic.tsv is method m and RUN/<m>/<sel>/synthetic.tsv
    method m_<sel> (directory names lowercased, other than [a-z0-9_] as
    `_`); an older run's synthetic.tsv or samples/samples.tsv is method csl
    when there is no RUN/csl/.
  """
  run_dir = os.fspath(run_dir)
  methods, proper = {}, []
  current = _data_key(_join(run_dir, RUN_DATA_DIR))
  for entry in sorted(tf.io.gfile.listdir(run_dir)):
    method_dir = _join(run_dir, entry.rstrip("/"))
    path = _join(method_dir, SYNTHETIC_FILE)
    if entry.rstrip("/") == RUN_DATA_DIR or not tf.io.gfile.exists(path):
      continue
    made_from = _data_key(method_dir, "data_key", "summary.json")
    if made_from and current and made_from != current:
      logging.warning("%s: made from another version of the run's data "
                      "(not rerun since it changed); left out", method_dir)
      continue
    method = _method_name(entry)
    _add_method(methods, method, path)
    proper.append(method)
    # Hashed only if a selection is there to check.
    candidates = functools.cache(lambda p=_join(method_dir, CANDIDATES_FILE):
                                 file_sha256(p) if tf.io.gfile.exists(p)
                                 else None)
    for sub in sorted(tf.io.gfile.listdir(method_dir)):
      sub_dir = _join(method_dir, sub.rstrip("/"))
      path = _join(sub_dir, SYNTHETIC_FILE)
      if not tf.io.gfile.exists(path):
        continue
      if not _selected_from(sub_dir, candidates):
        logging.warning("%s: selected from other candidates than %s's "
                        "(not rerun since they changed); left out", sub_dir,
                        method_dir)
        continue
      _add_method(methods, f"{method}_{_method_name(sub)}", path)
  if CSL not in methods:
    legacy = _first_existing(_join(run_dir, f) for f in SYNTHETIC_FILES)
    if legacy:
      methods[CSL] = legacy
      proper.append(CSL)
  return methods, proper


CANDIDATES_FILE = "candidates.tsv"  # what a method's selectors read


def _selected_from(sub_dir: str, candidates) -> bool:
  """Whether the selection stage in `sub_dir` read the method's current
  candidates (its stage key's first input; csl_jax.pipeline.augment's
  select_stage). One without a complete key is left out; one of a method
  without candidates.tsv (made by hand) is kept."""
  key_path = _join(sub_dir, "stage_key.json")
  if not tf.io.gfile.exists(key_path):
    return True
  with tf.io.gfile.GFile(key_path) as f:
    key = json.load(f)
  hashes = key.get("input_hashes") or []
  if not key.get("complete") or not hashes:
    return False
  now = candidates()
  return now is None or hashes[0] == now


def register_run(
    run_dir: PathLike,
    name: Optional[str] = None,
    splits: Sequence[str] = DEFAULT_SPLITS,
    vocabulary: Optional[seqio.Vocabulary] = None,
    original_rate: Optional[seqio.MixtureRate] = None,
    synthetic_rate: Optional[RateOrRates] = None,
    metric_fns=(metrics.exact_match,),
    input_prefix: Optional[str] = None,
) -> RegisteredNames:
  """Registers an `augment --out RUN` directory: RUN/data and each method.

  Args:
    run_dir: the run directory, local or gs:// (module docstring).
    name: the dataset name; defaults to `task_name(run_dir)`, the
      directory's basename.
    original_rate, synthetic_rate: as for `register_dataset` (an unset one
      1.0). Both unset: each method's own (`union_rates` for those whose
      summary.json says they train on the union, else 1:1).
    splits, vocabulary, metric_fns, input_prefix: as for
      `register_dataset`.

  Returns:
    The registered names: NAME_all_mixture mixes the methods proper, not
    their selector subsets (a subset would count its method twice).
  """
  run_dir = os.fspath(run_dir).rstrip("/")
  methods, proper = find_methods(run_dir)
  if original_rate is None and synthetic_rate is None:
    rates = union_rates(
        methods, set(union_methods(run_dir)) & set(proper),
        _join(run_dir, RUN_DATA_DIR, "train.tsv"))
    original_rate = rates.get("original_rate")
    synthetic_rate = rates.get("synthetic_rate")
  original_rate = 1.0 if original_rate is None else original_rate
  synthetic_rate = 1.0 if synthetic_rate is None else synthetic_rate
  return register_dataset(
      name or task_name(run_dir), _join(run_dir, RUN_DATA_DIR), splits,
      vocabulary=vocabulary, original_rate=original_rate,
      synthetic_rate=synthetic_rate, metric_fns=metric_fns,
      synthetic=methods, all_methods=proper, input_prefix=input_prefix,
      programs=find_programs(run_dir))


def base_name(task: str, methods: Sequence[str]) -> str:
  """The dataset name in a task name `NAME[_<method>_{synthetic,mixture}|
  _all_mixture|_reversed]`, for the methods present."""
  suffixes = [ALL_MIXTURE_SUFFIX, REVERSED_SUFFIX]
  suffixes += [f"_{m}_{kind}" for m in methods
               for kind in ("synthetic", "mixture")]
  for suffix in sorted(suffixes, key=len, reverse=True):
    if task.endswith(suffix):
      return task[:-len(suffix)]
  if task.endswith(("_mixture", "_synthetic")):
    # Else it would be registered as a dataset of that name: the original
    # data alone, trained on without a word.
    raise InputError(f"--task {task}: names a method the data has not "
                     f"(its methods: {', '.join(sorted(methods)) or 'none'};"
                     f" tasks NAME, NAME_<method>_mixture, "
                     f"NAME_<method>_synthetic, NAME_all_mixture)")
  return task


def register_task(task: str, data_dir: Optional[str],
                  synthetic: Optional[str]) -> None:
  """`csl-jax train` / `decode`'s --task: registers it from `data_dir` (a
  run directory of `csl-jax augment`, or a directory of <split>.tsv with
  `synthetic` as method csl); else the task must be registered already."""
  if data_dir:
    try:
      if os.path.isdir(os.path.join(data_dir, RUN_DATA_DIR)):
        methods, _ = find_methods(data_dir)
        register_run(data_dir, name=base_name(task, methods))
      else:
        # A malformed line is named here, not by a TensorFlow assertion
        # in the middle of training (a run directory's files are checked
        # by `csl-jax augment`).
        from csl_jax.data import tsv  # pylint: disable=g-import-not-at-top
        name = base_name(task, ["csl"])
        if not synthetic and name != task and task != (
            name + REVERSED_SUFFIX):
          raise InputError(f"--task {task} trains on synthetic pairs: give "
                           "them with --synthetic S.tsv (or train --task "
                           f"{name} on the original data)")
        for path in sorted(glob.glob(os.path.join(data_dir, "*.tsv"))) + (
            [synthetic] if synthetic else []):
          # The training data must have an example (an empty train.tsv
          # was a TensorFlow OutOfRangeError traceback mid-training).
          tsv.read_tsv(path, allow_empty=os.path.basename(path) !=
                       "train.tsv" and path != synthetic)
        register_dataset(name, data_dir, synthetic_tsv=synthetic)
    except ValueError as e:
      raise InputError(str(e)) from None
  if task not in seqio.TaskRegistry.names() | seqio.MixtureRegistry.names():
    raise InputError(f"{task}: no such SeqIO task or mixture (give "
                     "--data_dir, or set $CSL_JAX_DATA)")


def _programs_task(name: str, method: str) -> str:
  return f"{name}_{method}{PROGRAMS_SUFFIX}"


def programs_task_name(run_dir: PathLike, method_dir: str) -> str:
  """NAME_<m>_programs, the task `register_run(run_dir)` makes of
  RUN/<method_dir>/programs/programs.txt."""
  return _programs_task(task_name(run_dir), _method_name(method_dir))


def find_programs(run_dir: PathLike) -> Dict[str, str]:
  """{method: RUN/<m>/programs/programs.txt} of a run directory: pcfg_bt's
  sampled programs, there as soon as its programs stage has run (before
  any backtranslation)."""
  run_dir = os.fspath(run_dir)
  found = {}
  for entry in sorted(tf.io.gfile.listdir(run_dir)):
    path = _join(run_dir, entry.rstrip("/"), PROGRAMS_FILE)
    if entry.rstrip("/") != RUN_DATA_DIR and tf.io.gfile.exists(path):
      found[_method_name(entry)] = path
  return found


def register_from_env(roots: Optional[str] = None,
                      vocabulary: Optional[seqio.Vocabulary] = None
                      ) -> Sequence[RegisteredNames]:
  """Registers the datasets under $CSL_JAX_DATA, named after their dirs.

  Args:
    roots: comma-separated directories (local or gs://), each a dataset
      directory or a directory of them; defaults to $CSL_JAX_DATA, and
      nothing is registered when that is unset. A dataset directory is
      either flat, `<split>.tsv` files and optionally method csl's pairs
      (its first existing file of SYNTHETIC_FILES), or a run directory with
      `data/<split>.tsv`, registered with `register_run`.
    vocabulary: defaults to `vocab.get_vocabulary()`.

  Returns:
    The registered names, one entry per dataset.
  """
  roots = os.environ.get(ENV_DATA, "") if roots is None else roots
  registered = []
  made_from: Dict[str, str] = {}  # task name -> its directory
  for root in filter(None, (r.strip().rstrip("/") for r in roots.split(","))):
    if not tf.io.gfile.isdir(root):
      raise InputError(f"{root} (from ${ENV_DATA}): no such directory")
    if _has_splits(root) or _has_splits(_join(root, RUN_DATA_DIR)):
      directories = [root]
    else:
      directories = [_join(root, e.rstrip("/"))
                     for e in sorted(tf.io.gfile.listdir(root))]
    for directory in directories:
      if not tf.io.gfile.isdir(directory):
        continue
      name = task_name(directory)
      if name in made_from:  # the same directory twice is registered once
        if made_from[name].rstrip("/") != directory.rstrip("/"):
          raise InputError(f"{made_from[name]} and {directory} (from "
                           f"${ENV_DATA}) would both be task {name}: rename "
                           f"one")
        continue
      if _has_splits(directory):  # Flat: `prepare --out` or by hand.
        made_from[name] = directory
        registered.append(register_dataset(
            name, directory, vocabulary=vocabulary,
            synthetic_tsv=_first_existing(
                _join(directory, f) for f in SYNTHETIC_FILES)))
      elif _has_splits(_join(directory, RUN_DATA_DIR)):
        made_from[name] = directory
        registered.append(register_run(directory, name,
                                       vocabulary=vocabulary))
  return registered
