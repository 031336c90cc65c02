"""A built-in dataset's settings for each method, applied without naming them.

`csl-jax augment --dataset geoquery --method geca` runs GECA with
`gin/geca/geoquery.gin`, as if `--gin_file=gin/geca/geoquery.gin` came
before the user's gin files: their files and `--gin.` bindings still win.
Before, a method left to its class defaults ran settings of no dataset (on
SCAN GECA's wug is one word, not four; on COGS it needs its memory cap) and
`pcfg_bt` stopped for want of an output grammar the dataset has.

From Python, `csl_jax.pipeline.augment.configure(dataset, methods,
gin_files, bindings)` does what the command does with gin.
"""

import os
import re
from typing import Iterable, List, Optional, Sequence, Set

# The checkout holding `gin/` (the entry point resolves `include 'gin/...'`
# from here too).
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def family(method: str) -> Optional[str]:
  """The family of a registered method (a variant such as `pcfg_bt_uniform`
  or `primaug_20` is its base method's), None if no method has that name:
  the registry says, so a method of one's own reads its gin files too."""
  import csl_jax.methods  # pylint: disable=g-import-not-at-top,unused-import
  from csl_jax.methods import base  # pylint: disable=g-import-not-at-top
  return base.family(method)


def path(method_family: str, dataset: str) -> str:
  """Where the family's settings for `dataset` live, relative to the repo."""
  if method_family == "csl":  # CSL's file for a run also names the dataset
    return f"gin/csl/{dataset}_augment.gin"
  return f"gin/{method_family}/{dataset}.gin"


def files(dataset: Optional[str], methods: Sequence[str]) -> List[str]:
  """The existing settings files of `methods` on `dataset`, in method order,
  each once (repo-relative, as gin's search path resolves them)."""
  if not dataset:
    return []
  out: List[str] = []
  for method in methods:
    fam = family(method)
    if fam is None:
      continue
    name = path(fam, dataset)
    if name not in out and os.path.isfile(os.path.join(REPO_ROOT, name)):
      out.append(name)
  return out


def without_settings(dataset: Optional[str], methods: Sequence[str]
                     ) -> List[str]:
  """The registered `methods` (families, each once) that have no settings
  file for built-in `dataset`: they run their class defaults there."""
  if not dataset or dataset == "tsv":
    return []
  out: List[str] = []
  for method in methods:
    fam = family(method)
    if fam is not None and fam not in out and not os.path.isfile(
        os.path.join(REPO_ROOT, path(fam, dataset))):
      out.append(fam)
  return out


_INCLUDE = re.compile(r"""^\s*include\s+['"]([^'"]+)['"]""", re.M)


def loaded(gin_files: Iterable[str]) -> Set[str]:
  """`gin_files` and every file they include, as written (repo-relative
  where they are): what a run loads already needs no default."""
  seen: Set[str] = set()
  todo = list(gin_files)
  while todo:
    name = todo.pop()
    if name in seen:
      continue
    seen.add(name)
    for root in ("", REPO_ROOT):
      full = os.path.join(root, name)
      if os.path.isfile(full):
        with open(full, encoding="utf-8") as f:
          todo.extend(_INCLUDE.findall(f.read()))
        break
  return seen


def missing(dataset: Optional[str], methods: Sequence[str],
            gin_files: Iterable[str]) -> List[str]:
  """`files(dataset, methods)` that `gin_files` (includes followed) do not
  load already: what a command reads before the user's files."""
  already = loaded(gin_files)
  return [f for f in files(dataset, methods) if f not in already]


def bound(name: str, default):
  """The value gin binds to `name` (`augment.dataset`), else `default`."""
  import gin  # pylint: disable=g-import-not-at-top
  try:
    value = gin.query_parameter(name)
  except ValueError:  # not bound
    return default
  if isinstance(value, gin.config.ConfigurableReference):
    # `%gin.REQUIRED` (gin/experiments/base.gin), or a macro: gin says what
    # is unset when the function is called; its reference is no value
    # (it was read as the dataset "<object object at 0x...>").
    try:
      value = value.scoped_configurable_fn()
    except Exception:  # pylint: disable=broad-except
      return default
  return default if value is gin.config.REQUIRED else value


# Whether gin was configured as a command configures it (`augment.configure`,
# or a `csl-jax` command's entry point): `augment` called without it warns.
_CONFIGURED: List[bool] = []


def mark_configured() -> None:
  _CONFIGURED[:] = [True]


def configured() -> bool:
  return bool(_CONFIGURED)

