"""What an augmentation method is: an ordered list of cached stages.

A method (CSL, GECA, PCFG sampling + backtranslation, AugZero, ...) turns a
run's original data into candidate synthetic pairs. The pipeline
(`csl_jax.pipeline.augment`) runs its stages in order, each in its own
directory `RUN/<method>/<stage.name>/`, redoing a stage only when the
contents of its `inputs` or its `config` change (`csl_jax.pipeline.cache`).
The last stage's summary names the candidates file (key `candidates`), or the
earlier stage whose summary does (`candidates_from`: a last stage that
describes them), and the pipeline publishes it as
`RUN/<method>/candidates.tsv`.

Methods never import each other; what two of them share lives below them
(`qcfg/`, `cky/`, `data/`).
"""

import dataclasses
import functools
import os
import re
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
  """An augmentation method of the pipeline (README "Adding a method").

  Beside `name` and the two methods below, the pipeline and the experiment
  runner read these class attributes where a method has them:
    adds_tokens: True if its pairs hold tokens the original data lacks
      (primaug, augzero): an experiment's vocabulary then has them too.
    writes_token_copies: True if those tokens are copies `jump@2`
      (`csl_jax.data.token_copies`): selectors read them as the originals.
    mixing: "union" to train on the union of original and synthetic data
      (the rows of `experiment.mixing = 'method'`); default "equal" rates.
    seed_params: the gin parameters its random draws read (e.g.
      `("geca.GECAConfig.seed",)`), `()` if it draws nothing at random;
      an experiment whose seeds share one sample names them in its warning.
    shardable: True if `augment --shards` shards its stages (CSL, GECA:
      their gin bindings are in `pipeline.augment.beam_bindings`); else a
      warning says it runs whole.
  A stage's `config` keys its cache, not its code: when a change of code
  changes what a stage writes, put a version number in its config. A
  stage's summary with `num_examples` has it logged when the stage ends.
  """

  name: str

  def stages(self, data: RunData, workdir: str) -> List[Stage]:
    """The method's stages; `workdir` is `RUN/<method>/`, stage `s` runs in
    `workdir/s.name`. The last stage's summary has `candidates`: the path
    of the TSV of generated pairs, or `candidates_from`: the name of an
    earlier stage whose summary has it."""

  def report_rows(self, summaries: Mapping[str, dict]
                  ) -> List[Tuple[str, str]]:
    """(label, value) rows for the run report from the stage summaries."""


_METHODS: Dict[str, Callable[[], Method]] = {}
_FAMILIES: Dict[str, str] = {}  # name -> the family whose gin files it reads
_NAME = re.compile(r"^[a-z0-9_]+$")  # a SeqIO task name's part, a directory


def _origin(factory: Callable[[], Method]) -> str:
  """What a factory is, across a reload of its module (a notebook's)."""
  inner = getattr(factory, "func", factory)  # add_variants' partials
  return (f"{getattr(inner, '__module__', '')}."
          f"{getattr(inner, '__qualname__', repr(inner))}")


def add(name: str, factory: Callable[[], Method],
        family: Optional[str] = None) -> None:
  """Registers a method factory (gin-configured classes are factories).

  `family` names the method whose per-dataset settings it reads,
  `gin/<family>/<dataset>.gin` (default: its own name); a variant
  registered by `add_variants` is its base method's. Another factory under
  a name already taken is refused: `remove` it first.
  """
  if not isinstance(name, str) or not _NAME.match(name):
    raise ValueError(f"method name {name!r}: lower-case letters, digits and "
                     "'_' only (it names SeqIO tasks and directories)")
  if name in _METHODS and _origin(_METHODS[name]) != _origin(factory):
    raise ValueError(f"method {name!r} is registered already (by "
                     f"{_origin(_METHODS[name])}); remove it first")
  _METHODS[name] = factory
  _FAMILIES[name] = family or name


def remove(name: str) -> None:
  """Unregisters a method (a test's or a notebook's own)."""
  _METHODS.pop(name, None)
  _FAMILIES.pop(name, None)


def family(name: str) -> Optional[str]:
  """The family of registered method `name` (whose gin files it reads),
  None if no method has that name."""
  return _FAMILIES.get(name)


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
    add(name, functools.partial(_variant, factory, name, field, value),
        family=base_name)


def get(name: str) -> Method:
  from csl_jax.errors import InputError  # pylint: disable=g-import-not-at-top
  if name not in _METHODS:
    raise InputError(f"unknown method {name!r}; valid: {', '.join(names())}")
  return _METHODS[name]()


def names() -> List[str]:
  return sorted(_METHODS)
