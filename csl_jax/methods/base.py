"""What an augmentation method is: an ordered list of cached stages.

A method (CSL, GECA, PCFG sampling + backtranslation, AugZero, ...) turns a
run's original data into candidate synthetic pairs. The pipeline
(`csl_jax.pipeline.augment`) runs its stages in order, each in its own
directory `RUN/<method>/<stage.name>/`, redoing a stage only when the
contents of its `inputs` or its `config` change (`csl_jax.pipeline.cache`).
The last stage's summary names the candidates file (key `candidates`), which
the pipeline publishes as `RUN/<method>/candidates.tsv`.

Methods never import each other; what two of them share lives below them
(`qcfg/`, `cky/`, `data/`).
"""

import dataclasses
import functools
import os
from typing import (Any, Callable, Dict, List, Mapping, Optional, Protocol,
                    Sequence, Tuple)


@dataclasses.dataclass(frozen=True)
class Stage:
  """One cached step of a method.

  Attributes:
    name: its directory under `RUN/<method>/`.
    inputs: files whose contents key the cache (outputs of earlier stages or
      the run's data).
    config: this stage's own settings, JSON-serializable; they key the cache.
      Only what changes the result belongs here.
    run: writes the stage's artifacts into the directory it is given and
      returns its summary (JSON-serializable).
    directory: where it runs instead of `RUN/<method>/<name>`: a result
      that several methods of a run share (same inputs and config, e.g. the
      reverse model of pcfg_bt's variants) is computed once there.
  """
  name: str
  inputs: Sequence[str]
  config: Mapping[str, Any]
  run: Callable[[str], Dict[str, Any]]
  directory: Optional[str] = None

  def path(self, workdir: str) -> str:
    """The stage's directory for a method working in `workdir`."""
    return self.directory or os.path.join(workdir, self.name)


@dataclasses.dataclass(frozen=True)
class RunData:
  """The original data of a run: `RUN/data/<split>.tsv` paths by split."""
  directory: str
  splits: Mapping[str, str]

  @property
  def train(self) -> str:
    return self.splits["train"]


class Method(Protocol):
  """An augmentation method of the pipeline."""

  name: str

  def stages(self, data: RunData, workdir: str) -> List[Stage]:
    """The method's stages; `workdir` is `RUN/<method>/`, stage `s` runs in
    `workdir/s.name`. The last stage's summary has `candidates`: the path of
    the TSV of generated pairs."""

  def report_rows(self, summaries: Mapping[str, dict]
                  ) -> List[Tuple[str, str]]:
    """(label, value) rows for the run report from the stage summaries."""


_METHODS: Dict[str, Callable[[], Method]] = {}


def add(name: str, factory: Callable[[], Method]) -> None:
  """Registers a method factory (gin-configured classes are factories)."""
  _METHODS[name] = factory


def remove(name: str) -> None:
  """Unregisters a method (a test's or a notebook's own)."""
  _METHODS.pop(name, None)


def _variant(factory: Callable[[], Method], name: str, field: str,
             value: Any) -> Method:
  method = factory()
  method.name = name
  method.config = dataclasses.replace(method.config, **{field: value})
  return method


def add_variants(factory: Callable[[], Method], field: str,
                 values: Sequence[Any]) -> None:
  """Registers `<name>_<value>`: the method with `config.<field>` fixed, so
  that one experiment has a row per setting (pcfg_bt_train, primaug_20)."""
  base_name = factory.name
  for value in values:
    name = f"{base_name}_{value}"
    add(name, functools.partial(_variant, factory, name, field, value))


def get(name: str) -> Method:
  from csl_jax.errors import InputError  # pylint: disable=g-import-not-at-top
  if name not in _METHODS:
    raise InputError(f"unknown method {name!r}; valid: {', '.join(names())}")
  return _METHODS[name]()


def names() -> List[str]:
  return sorted(_METHODS)
