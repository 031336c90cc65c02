"""What produced a run directory: the code, the libraries and the gin bindings.

Every run (`augment`, `experiment`, each stage command) writes, under its
lock, `OUT/provenance.json` (the command, csl_jax's version and source
commit, Python and the installed versions of csl_jax's requirements) and
`OUT/config.gin` (every gin binding in force, includes resolved, and the
arguments `augment` was called with: `csl-jax augment` or `experiment
--gin_file=OUT/config.gin` reruns it, as T5X's `config.gin`; a stage
command's flags are in provenance.json's command, and the keywords of an
`experiment()` called from Python in its experiment.json). A stage computed
by other code than the current one says so when it is reused
(`pipeline/cache.py`). No clock time: a rerun writes the same bytes.
"""

import functools
import importlib.metadata
import os
import platform
import re
import shlex
import subprocess
import sys
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

import csl_jax
from csl_jax.files import atomic_write_json, atomic_write_text

PROVENANCE_FILE = "provenance.json"
GIN_FILE = "config.gin"
_DISTRIBUTION = "csl_jax"
# The `csl-jax` arguments (`cli.main` sets them); None where a library
# function was called from Python.
_ARGV: Dict[str, Optional[Sequence[str]]] = {"argv": None}


def set_command_line(argv: Optional[Sequence[str]]
                     ) -> Optional[Sequence[str]]:
  """Sets the `csl-jax` arguments (None: none); returns the previous."""
  previous = _ARGV["argv"]
  _ARGV["argv"] = None if argv is None else list(argv)
  return previous


def command_line() -> Optional[str]:
  """The invocation, for summaries: `csl-jax ARGS`, shell-quoted."""
  if _ARGV["argv"] is None:
    return None
  return " ".join(["csl-jax"] + [shlex.quote(a) for a in _ARGV["argv"]])


def _git(root: str, *args: str) -> Tuple[Optional[str], str]:
  """(git's output or None, why not: its first error line)."""
  # The package's own checkout: not one that GIT_DIR & co. name (a git hook
  # exports them); no index lock taken beside the user's own git commands.
  env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
  try:
    done = subprocess.run(["git", "--no-optional-locks", "-C", root, *args],
                          capture_output=True, text=True, errors="replace",
                          env=env, timeout=10, check=False)
  except (OSError, subprocess.SubprocessError) as e:  # no git, or it hangs
    return None, f"git did not run ({type(e).__name__})"
  if done.returncode:
    return None, (done.stderr.strip().splitlines() or ["git failed"])[0]
  return done.stdout, ""


def code() -> Dict[str, Any]:
  """csl_jax's version, and where it runs from a git checkout (`pip install
  -e .`), the commit and whether its tracked files but the Markdown docs
  differ from it."""
  return dict(_code())


@functools.lru_cache(maxsize=None)
def _code() -> Dict[str, Any]:  # git runs once a process
  record: Dict[str, Any] = {"csl_jax": csl_jax.__version__}
  root = os.path.dirname(os.path.dirname(os.path.abspath(csl_jax.__file__)))
  if os.path.exists(os.path.join(root, ".git")):
    commit, why = _git(root, "rev-parse", "HEAD")
    if not commit:
      # A checkout git would not read (another user's: "dubious
      # ownership"; no git installed): said, not mistaken for a wheel.
      record["git"] = why
      return record
    record["commit"] = commit.strip()
    # What runs, not the docs: the checkout's tracked files but its
    # Markdown (below `root` alone, in a large repository holding it).
    status, why = _git(root, "status", "--porcelain", "--untracked-files=no",
                       "--", ".", ":(exclude)*.md")
    if status is not None:
      record["modified"] = bool(status.strip())
    else:
      record["git"] = why
  return record


def describe(record: Optional[Dict[str, Any]] = None) -> str:
  """`0.1.0 at 1bf5754215ba with local changes` (of `code()` by default)."""
  record = code() if record is None else record
  words = [str(record.get("csl_jax"))]
  if record.get("commit"):
    words.append(f"at {str(record['commit'])[:12]}")
  if record.get("modified"):
    words.append("with local changes")
  return " ".join(words)


def line(libraries: Sequence[str] = ("jax", "numba")) -> str:
  """`csl_jax 0.1.0 at 1bf5754215ba, jax 0.10.2, numba 0.68.1`: what wrote a
  report, for its first lines (provenance.json has the rest)."""
  found = packages()
  return ", ".join([f"csl_jax {describe()}"] + [
      f"{name} {found[name]}" for name in libraries if found.get(name)])


def _requirement_name(requirement: str) -> str:
  return re.split(r"[\s<>=!~;\[(]", requirement, maxsplit=1)[0]


# Where csl_jax runs from a checkout on PYTHONPATH (no metadata of its
# requirements, as `launch/gpu_bundle.sh` runs it): what trains and fits.
_CORE = ("flax", "gin-config", "jax", "jaxlib", "numba", "numpy", "optax",
         "orbax-checkpoint", "seqio", "tensorflow")
# Not requirements, but what a device runs on: JAX's CUDA and TPU plugins,
# NVIDIA's libraries, libtpu.
_ACCELERATOR = re.compile(r"^(jax[-_.]|libtpu|nvidia[-_.])", re.IGNORECASE)


def packages() -> Dict[str, str]:
  """The installed version of each of csl_jax's requirements (of a core
  list where csl_jax is not installed) and of the accelerator's libraries;
  read from the metadata, nothing imported."""
  return dict(_packages())


@functools.lru_cache(maxsize=None)
def _packages() -> Dict[str, Optional[str]]:
  try:
    requirements = importlib.metadata.requires(_DISTRIBUTION) or []
    names = [_requirement_name(r) for r in requirements
             if not re.search(r"extra\s*==", r)]  # the test extra: not run
  except importlib.metadata.PackageNotFoundError:
    names = list(_CORE)
  found: Dict[str, Optional[str]] = {}
  for name in names:
    try:
      found[name] = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
      found[name] = None
  for dist in importlib.metadata.distributions():
    name = dist.metadata["Name"]
    if name and _ACCELERATOR.match(name):
      found.setdefault(name, dist.version)
  return dict(sorted(found.items()))


def record() -> Dict[str, Any]:
  return {"command": command_line(), "code": code(),
          "python": platform.python_version(),
          "platform": f"{sys.platform} {platform.machine()}",
          "packages": packages()}


def gin_config() -> str:
  """Every gin binding parsed in this process (gin's `config_str`)."""
  import gin  # pylint: disable=g-import-not-at-top
  try:
    return gin.config_str()
  except Exception as e:  # pylint: disable=broad-except
    # A record of the run must not stop it (gin looks each binding's
    # configurable up again here).
    return f"# gin could not write its bindings: {type(e).__name__}: {e}\n"


def _gin_literal(value: Any) -> Any:
  """`value` as gin reads it back: a path (pathlib's, from Python) as its
  string; containers element by element."""
  if isinstance(value, os.PathLike):
    return os.fspath(value)
  if isinstance(value, (list, tuple)):
    return type(value)(_gin_literal(v) for v in value)
  if isinstance(value, dict):
    return {k: _gin_literal(v) for k, v in value.items()}
  return value


def write(out_dir: str,
          arguments: Optional[Mapping[str, Any]] = None) -> None:
  """OUT/provenance.json and OUT/config.gin (called under the run's lock).

  `arguments`: {"configurable.param": value} the call was given besides
  gin (a command's flags, a caller's keywords), appended to config.gin as
  bindings, which win over those before them as the arguments did."""
  atomic_write_json(os.path.join(out_dir, PROVENANCE_FILE), record())
  text = ("# The gin bindings this directory was last run with "
          "(csl_jax/provenance.py).\n" + gin_config())
  if arguments:
    text += ("\n# The call's own arguments (flags or keywords), which won "
             "over gin's:\n" + "".join(
                 f"{name} = {_gin_literal(value)!r}\n"
                 for name, value in arguments.items()))
  atomic_write_text(os.path.join(out_dir, GIN_FILE), text)
