"""`csl-jax`: one entry point, a subcommand per pipeline stage.

Configuration is T5X style: `--gin_file=F` (repeatable) and
`--gin.NAME=VALUE` bindings; explicit command-line flags win over gin.
"""

import argparse
import errno
import gc
import os
import re
import sys
import tokenize
from typing import List, Optional

# Before TensorFlow or JAX can be imported: no CUDA probe noise on CPU.
from csl_jax import quiet  # pylint: disable=g-bad-import-order
quiet.silence_accelerator_logs()

from absl import logging  # pylint: disable=g-import-not-at-top
import gin  # pylint: disable=g-import-not-at-top

from csl_jax import allocator
from csl_jax import compile_cache
from csl_jax import gin_defaults
from csl_jax import provenance
from csl_jax.cli import augment
from csl_jax.cli import experiment
from csl_jax.cli import coverage
from csl_jax.cli import difficulty
from csl_jax.cli import fit
from csl_jax.cli import induce
from csl_jax.cli import parse
from csl_jax.cli import sample
from csl_jax.cli import train_seq2seq
from csl_jax.cli import vocab
from csl_jax.cli import prepare
from csl_jax.cli import run_bundle
from csl_jax.cli import stage
from csl_jax.errors import InputError
from csl_jax.files import read_json, read_text

SUBCOMMANDS = {
    "prepare": prepare,
    "induce": induce,
    "coverage": coverage,
    "fit": fit,
    "parse": parse,
    "evaluate": parse,
    "sample": sample,
    "augment": augment,
    "experiment": experiment,
    "train": train_seq2seq,
    "decode": train_seq2seq,
    "vocab": vocab,
    "difficulty": difficulty,
    "run-bundle": run_bundle,
}


def _split_gin_flags(argv: List[str]):
  """Separates `--gin.NAME=VALUE` / `--gin_file=F` from the other flags."""
  files, bindings, rest = [], [], []
  it = iter(argv)
  for arg in it:
    if arg.startswith("--gin_file"):
      value = arg.split("=", 1)[1] if "=" in arg else next(it, "")
      files.append(value)
    elif arg.startswith("--gin."):
      name_value = arg[len("--gin."):]
      if "=" not in name_value:
        raise InputError(f"{arg!r}: expected --gin.NAME=VALUE")
      name, value = name_value.split("=", 1)
      bindings.append(f"{name} = {value}")
    else:
      rest.append(arg)
  return files, bindings, rest


class _Parser(argparse.ArgumentParser):
  """argparse's errors as one line (its usage block can run to a dozen
  lines for a stage with many flags); `--help` still gives the usage.
  Subcommand parsers are of this class too (`add_subparsers` makes its
  parsers of the parent's class)."""

  def error(self, message: str):
    self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class _Version(argparse.Action):
  """`--version`; git asked only then, not for every command's parser."""

  def __call__(self, parser, namespace, values, option_string=None):
    print(f"csl-jax {provenance.describe()}")
    parser.exit()


def build_parser() -> argparse.ArgumentParser:
  parser = _Parser(
      prog="csl-jax",
      description="Compositional data augmentation for semantic parsing.",
      epilog="Every stage also takes --gin_file=F and --gin.NAME=VALUE.")
  parser.add_argument("--version", action=_Version, nargs=0,
                      help="show the version (and git commit) and exit")
  subparsers = parser.add_subparsers(dest="subcommand", required=True)
  for module in dict.fromkeys(SUBCOMMANDS.values()):
    module.add_parser(subparsers)
  _say_gin_flags(subparsers)
  return parser


GIN_FLAGS = ("Configuration (read before the flags above, which win): "
             "--gin_file=F (repeatable; a file may include others) and "
             "--gin.NAME=VALUE, e.g. --gin.InductionConfig.max_nts=3.")


def _say_gin_flags(subparsers) -> None:
  """Each stage's --help names the gin flags, which argparse never sees
  (`_split_gin_flags` takes them out first)."""
  for sub in dict.fromkeys(subparsers.choices.values()):
    sub.epilog = f"{sub.epilog} {GIN_FLAGS}" if sub.epilog else GIN_FLAGS
    for action in sub._actions:  # pylint: disable=protected-access
      if isinstance(action, argparse._SubParsersAction):  # pylint: disable=protected-access
        _say_gin_flags(action)


def _check_out(path: str) -> None:
  """--out must be a directory we can write, checked before any work."""
  if os.path.exists(path) and not os.path.isdir(path):
    raise InputError("--out exists and is not a directory", path)
  try:
    os.makedirs(path, exist_ok=True)
  except OSError as e:
    raise InputError(f"cannot create --out ({e.strerror.lower()})",
                     path) from None
  if not os.access(path, os.W_OK | os.X_OK):
    read_only = os.statvfs(path).f_flag & os.ST_RDONLY
    raise InputError("--out is not writable (%s)" % (
        "a read-only file system" if read_only else "permission denied"),
                     path)


def _check_out_owner(path: str, subcommand: str) -> None:
  """--out must not be another command's directory: its summary.json (and
  files such as predictions.tsv) would be overwritten without a word, e.g.
  `parse --model M --out M` replaced the fit's summary. The same command
  again (a rerun, a resume) is fine."""
  summary = os.path.join(path, "summary.json")
  if not os.path.isfile(summary):
    return
  try:
    record = read_json(summary)
    command = record.get("command", "")
  except (OSError, ValueError, AttributeError):
    return  # not ours to judge
  # The pipeline's summaries name no command: a run directory's
  # (`dataset`, `stages`) or one of its stages' (`cached`). `fit --out RUN`
  # replaced the run's summary.
  if (not command and subcommand != "augment"
      and ({"dataset", "stages"} <= set(record) or "cached" in record)):
    raise InputError(f"holds the summary of a `csl-jax augment` run (or of "
                     f"one of its stages), which this `csl-jax {subcommand}`"
                     " would overwrite: give --out another directory",
                     summary)
  words = command.split() if isinstance(command, str) else []
  if len(words) < 2 or words[0] != "csl-jax":
    return
  try:  # gin flags may stand before the subcommand
    rest = _split_gin_flags(words[1:])[2]
  except InputError:
    return
  if not rest or rest[0] == subcommand:
    return
  raise InputError(f"holds the summary of `csl-jax {rest[0]}`, which this "
                   f"`csl-jax {subcommand}` would overwrite: give --out "
                   "another directory", summary)


def _gin_roots():
  """Where gin looks for a file given by a relative path (and its
  includes): the working directory, then the checkout's root."""
  return (os.getcwd(), gin_defaults.REPO_ROOT)


def configure_gin(module, args: argparse.Namespace, files: List[str],
                  bindings: List[str]) -> None:
  """Parses the user's gin files and bindings, after the dataset's settings
  for the command's methods where it names them (`module.gin_defaults`)."""
  texts = _check_gin_files(files)
  try:
    for root in _gin_roots():
      gin.add_config_file_search_path(root)
    gin.parse_config_files_and_bindings(files, bindings,
                                        finalize_config=False)
    defaults = (module.gin_defaults(args, files)
                if hasattr(module, "gin_defaults") else [])
    if defaults:  # the dataset's settings, then the user's on top
      gin.clear_config()
      gin.parse_config_files_and_bindings(defaults + files, bindings,
                                          finalize_config=False)
      logging.info("gin: %s first (the dataset's settings for the "
                   "methods; your gin files and bindings override them)",
                   ", ".join(defaults))
    _check_macros(texts + [text for _, text in _gin_files_and_includes(
        defaults, read_text)], bindings)
    gin_defaults.mark_configured()
  except tokenize.TokenError as e:  # an unclosed bracket or string
    raise InputError(_token_error(e, files)) from None
  except (IOError, ValueError, SyntaxError) as e:
    raise InputError(f"gin configuration: {_one_line(str(e))}"
                     f"{_binding_of(str(e), bindings)}"
                     f"{_unknown_configurable_hint(str(e), args)}") from None


def _gin_files_and_includes(files: List[str], read):
  """(path, text) of each gin file given and each it includes, once, as
  gin finds them; `read(path)` gives the text. A name not found is passed
  over: gin's own message names the paths it searched."""
  seen = set()
  todo = list(files)
  while todo:
    name = todo.pop(0)
    path = next((os.path.join(root, name) for root in ("",) + _gin_roots()
                 if os.path.exists(os.path.join(root, name))), None)
    if path is None or path in seen:
      continue
    seen.add(path)
    text = read(path)
    yield path, text
    todo += re.findall(r"^include\s+['\"]([^'\"]+)['\"]", text, re.M)


def _check_gin_files(files: List[str]) -> List[str]:
  """Gin opens its files itself, and says of a directory "Unable to open
  file", of bytes that are not UTF-8 a codec error naming no file, of a
  byte-order mark "Unexpected token": each file given, and what it
  includes, is read first, so that these name the file (and line).
  Returns the texts read."""
  def read(path):
    if not os.path.isdir(path):
      with open(path, "rb") as f:
        if f.read(3) == b"\xef\xbb\xbf":
          raise InputError("starts with a UTF-8 byte-order mark, which gin "
                           "does not read: save the file without it", path,
                           1)
    return read_text(path)  # a directory, not UTF-8: named, with the line
  return [text for _, text in _gin_files_and_includes(files, read)]


def _check_macros(texts: List[str], bindings: List[str]) -> None:
  """`--gin.NAME=V` with no dot binds a macro, which changes something
  only where a file (`texts`: those gin read) or binding reads `%NAME`: a
  mistyped one (`--gin.MAXLEN=16` for MAX_LEN) would run the file's
  default unsaid."""
  used = set(re.findall(r"%([A-Za-z_][\w.]*)", "\n".join(texts + bindings)))
  for binding in bindings:
    name = binding.split("=", 1)[0].strip()
    if re.fullmatch(r"[A-Za-z_]\w*", name) and name not in used:
      known = sorted(m for m in used if not m.startswith("gin."))
      raise InputError(
          f"--gin.{name}: no gin file read uses the macro %{name}, so it "
          "would change nothing" + (f" (the macros they use: "
                                     f"{', '.join(known)})" if known else ""))


def _binding_of(message: str, bindings: List[str]) -> str:
  """Gin numbers the --gin. bindings as lines of one string ("Unable to
  parse value. (line 2)"): which binding that is, where gin does not quote
  it."""
  if "In file" in message or not bindings:
    return ""
  match = re.search(r"\(line (\d+)\)|bindings string line (\d+)", message)
  if not match:
    return ""
  index = int(match.group(1) or match.group(2)) - 1
  if not 0 <= index < len(bindings):
    return ""
  name, _, value = bindings[index].partition(" = ")
  flag = f"--gin.{name}={value}"
  return "" if flag in message or bindings[index] in message else (
      f" (in {flag})")


def _unknown_configurable_hint(message: str, args: argparse.Namespace) -> str:
  """For gin's "No configurable matching 'X'": X is another command's (a
  gin file of `csl-jax experiment` given to `train`), or misspelt."""
  match = re.search(r"No configurable matching '([\w.]+)'", message)
  if not match:
    return ""
  name = match.group(1).split(".")[0]
  if name in SUBCOMMANDS and name != args.subcommand:
    return (f" ({name}.* is read by `csl-jax {name}`, not by this command: "
            "a gin file of another command?)")
  return " (misspelt, or not read by this command)"


def _token_error(error: tokenize.TokenError, files: List[str]) -> str:
  """Gin's tokenizer error (`('EOF in multi-line statement', (2, 0))`)
  names no file: find the gin file (or a file it includes) that does not
  tokenize, else it is a binding."""
  what = str(error.args[0] if error.args else error)
  # From an included file gin wraps it: "('EOF in ...', (2, 0))\n  In file".
  inner = re.search(r"\('([^']*)', \(\d+, \d+\)\)", what)
  what = inner.group(1) if inner else _one_line(what)
  def read(path):
    if os.path.isdir(path):
      return ""
    with open(path, encoding="utf-8", errors="replace") as f:
      return f.read()
  for path, text in _gin_files_and_includes(files, read):
    try:
      for _ in tokenize.generate_tokens(iter(text.splitlines(True)).__next__):
        pass
    except tokenize.TokenError as e:
      line = e.args[1][0] if len(e.args) > 1 else "?"
      return (f"{path}:{line}: gin configuration: {what} (a bracket or "
              "string left open above)")
  return (f"gin configuration: {what} in a --gin. binding (a bracket or "
          "string left open)")


def _one_line(message: str) -> str:
  """Gin's multi-line message as one line; its parse failure of a bare
  word (Python's "malformed node or string ... <ast.Name object ...>")
  says what to do instead."""
  lines = [line.strip() for line in message.splitlines() if line.strip()]
  if lines and lines[0].startswith("malformed node or string"):
    lines[0] = "not a value (a string needs quotes, e.g. --gin.X=\"'text'\")"
  return "; ".join(line.rstrip(".") for line in lines)


def _home(value):
  if isinstance(value, str) and (value == "~" or value.startswith("~/")):
    return os.path.expanduser(value)
  return value


def _expand_home(args) -> None:
  """`--out=~/x`: the shell expands `~` only at a word's start, so the
  command got a literal `~` and made a directory named `~` here (which a
  later `rm -rf ~` would mistake for the home)."""
  for name, value in vars(args).items():
    setattr(args, name, [_home(v) for v in value]
            if isinstance(value, list) else _home(value))


# Commands that give paths to TensorFlow or SentencePiece, which take a path
# as UTF-8 text.
_UTF8_PATH_COMMANDS = ("vocab", "train", "decode", "experiment")


def _check_utf8_names(words: List[str], subcommand: str) -> None:
  """A name that is not UTF-8 (`caf\\xe9` from an older system) reaches
  Python as lone surrogates; TensorFlow's file functions then raised a
  TypeError traceback."""
  if subcommand not in _UTF8_PATH_COMMANDS:
    return
  for word in words:
    try:
      word.encode("utf-8")
    except UnicodeEncodeError:
      shown = os.fsencode(word).decode("utf-8", "backslashreplace")
      raise InputError(
          f"{shown}: a name that is not UTF-8; `{subcommand}` reads its "
          "files through TensorFlow and SentencePiece, which cannot open "
          "it: rename it, or link it under a UTF-8 name") from None


_ENVIRONMENT_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES,
                       errno.EPERM)


def main(argv: Optional[List[str]] = None, *,
         freeze_imports: bool = False) -> int:
  argv = list(sys.argv[1:] if argv is None else argv)
  logging.set_verbosity(logging.INFO)
  quiet.quiet_checkpointer_logs()
  quiet.quiet_gin_search()
  # This invocation's until it returns: a library call after it in the
  # same process (a notebook, a test) has none.
  called_from = provenance.set_command_line(argv)
  try:
    files, bindings, rest = _split_gin_flags(argv)
    args = build_parser().parse_args(rest)
    args.gin_files = files  # for errors that name them
    stage.check_pipeline_args(args)
    _expand_home(args)
    files = args.gin_files  # what gin reads is what the errors name
    _check_utf8_names(rest + files + bindings, args.subcommand)
    module = SUBCOMMANDS[args.subcommand]
    compile_cache.enable()
    allocator.keep_freed_memory()
    if getattr(args, "out", None) is not None and not args.out.strip():
      # `--out ""` (an unset shell variable): a traceback, or vocab's
      # hidden `.model` in the working directory.
      raise InputError("--out is empty: give a directory (vocab: a file "
                       "prefix)")
    if getattr(args, "out", None) and args.subcommand != "vocab":  # a prefix
      _check_out_owner(args.out, args.subcommand)
      _check_out(args.out)
    if hasattr(module, "register_configurables"):
      module.register_configurables()
    configure_gin(module, args, files, bindings)
    if freeze_imports:
      # The imports above leave many objects that Python's cyclic collector
      # would rescan at every full collection of the stages' many small
      # objects (BENCHMARKS "Issue 17 → Python's collector after the
      # imports"). Only for a process of its own: frozen objects are never
      # collected.
      gc.freeze()
    return SUBCOMMANDS[args.subcommand].main(args) or 0
  except InputError as e:
    if getattr(e, "exit_at_once", False):
      _EXIT_AT_ONCE.append(True)
    return stage.report_input_error(e)
  except OSError as e:
    # The machine's, not the program's: a full disk, a read-only or
    # forbidden directory. One line naming the file; the stages' caches
    # keep what finished, so the same command resumes once it is mended.
    if e.errno not in _ENVIRONMENT_ERRNOS:
      raise
    print(f"csl-jax: error: {e.filename or ''}{': ' if e.filename else ''}"
          f"{e.strerror}; the same command resumes once that is mended",
          file=sys.stderr)
    return 2
  except MemoryError as e:
    # An input the bounds let through but the machine cannot hold: `fit
    # --max_source_len 6000` on a 5,000-token line was numba's raw
    # "Allocation failed" traceback. (gin appends "In call to configurable
    # ..." lines: the first line is the allocator's.)
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    print(f"csl-jax: error: out of memory{f' ({first})' if first else ''}: "
          "is an input longer than this machine can take? Lower the length "
          "bounds (--max_source_len / --max_target_len where the command "
          "has them) or pass --skip_too_long; the stages' caches keep what "
          "finished", file=sys.stderr)
    return 2
  except KeyboardInterrupt as e:  # Ctrl-C: one line, not a traceback
    # A trainer's says what it saved, or that a second Ctrl-C lost the
    # steps since its last checkpoint (stop_request.py); elsewhere the
    # stages' caches keep what finished.
    print(f"csl-jax: interrupted: {e}" if str(e) else
          "csl-jax: interrupted; the same command resumes where it stopped",
          file=sys.stderr)
    return 130
  finally:
    provenance.set_command_line(called_from)


# An error after which native threads are left running (orbax's reads of a
# damaged checkpoint): their tracebacks at the interpreter's teardown would
# follow the one-line error.
_EXIT_AT_ONCE: List[bool] = []


def _in_utf8_mode() -> None:
  """Runs the command again in Python's UTF-8 mode where the locale's
  encoding is not UTF-8 (a Latin-1 locale, or LC_ALL=C with PYTHONUTF8=0).
  TensorFlow and SentencePiece encode every path as UTF-8, whatever the
  locale: there, a path decoded from Latin-1 named another file (`vocab`:
  "No such file" for a file that exists), and one decoded from ASCII was a
  TypeError traceback. Python's own files and TensorFlow's then agree on
  a path's bytes; data files are UTF-8 either way."""
  if sys.flags.utf8_mode or sys.getfilesystemencoding().lower().replace(
      "-", "") == "utf8":
    return
  os.environ["PYTHONUTF8"] = "1"  # side processes too
  # -X utf8 wins over the environment even under -E or -I (no loop).
  os.execv(sys.executable, [sys.orig_argv[0], "-X", "utf8",
                            *sys.orig_argv[1:]])


class _ReaderMayGo:
  """sys.stdout (or stderr) whose reader may go away (`csl-jax augment ...
  | head -1`, `| grep -q done`): what is written after is dropped and the
  work goes on. Before, the closing line was a BrokenPipeError traceback
  and exit status 1 after a finished run (and run-bundle's first line
  would have stopped the run)."""

  def __init__(self, stream):
    self._stream = stream

  def _guard(self, method: str, *args):
    try:
      return getattr(self._stream, method)(*args)
    except BrokenPipeError:
      devnull = os.open(os.devnull, os.O_WRONLY)
      os.dup2(devnull, self._stream.fileno())  # what is buffered goes too
      os.close(devnull)
      return None

  def write(self, text):
    return self._guard("write", text)

  def writelines(self, lines):
    return self._guard("writelines", lines)

  def flush(self):
    return self._guard("flush")

  def __getattr__(self, name):
    return getattr(self._stream, name)


def run() -> None:
  _in_utf8_mode()
  for name in ("stdout", "stderr"):
    stream = getattr(sys, name)
    if stream is not None:  # None: the descriptor was closed (`>&-`)
      setattr(sys, name, _ReaderMayGo(stream))
  code = main(freeze_imports=True)
  if code == 130 or (code == 2 and _EXIT_AT_ONCE):
    # Ctrl-C can land while native threads run (XLA's, orbax's async save);
    # the interpreter's teardown beside them once ended in a glibc abort.
    # Nothing is left to write: checkpoints are atomic and the rerun
    # resumes from the last one (a cut save's temporary directory is
    # removed then).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # pylint: disable=protected-access
  sys.exit(code)


if __name__ == "__main__":
  run()
