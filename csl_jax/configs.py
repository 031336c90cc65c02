"""The effective gin configuration of a function, as JSON (for cache keys).

A stage's cache key must change exactly when a setting that changes its
result changes: the function's defaults overridden by its gin bindings,
with configurable references (e.g. `induce.config = @InductionConfig()`)
evaluated to the objects they make.
"""

import collections.abc
import contextlib
import dataclasses
import inspect
import math
import numbers
import typing
from typing import Any, Callable, Dict, Iterable, Iterator, Mapping

import gin

from csl_jax.errors import InputError


def to_json(value: Any) -> Any:
  """Dataclasses, tuples, sets and non-finite floats as plain JSON."""
  if dataclasses.is_dataclass(value) and not isinstance(value, type):
    return {f.name: to_json(getattr(value, f.name))
            for f in dataclasses.fields(value)}
  if isinstance(value, dict):
    return {str(k): to_json(v) for k, v in sorted(value.items())}
  if isinstance(value, (list, tuple)):
    return [to_json(v) for v in value]
  if isinstance(value, (set, frozenset)):
    return sorted(to_json(v) for v in value)
  if isinstance(value, float) and not math.isfinite(value):
    return repr(value)  # "inf", "nan": strict JSON has no such numbers
  return value


def gin_params(fn: Callable[..., Any], exclude: Iterable[str] = ()
               ) -> Dict[str, Any]:
  """`fn`'s keyword parameters as gin would call it: defaults, then bindings.

  Args:
    fn: a gin-configurable function (or class).
    exclude: parameter names to leave out (paths the caller passes).
  """
  exclude = set(exclude)
  params = {}
  for name, p in inspect.signature(fn).parameters.items():
    if name in exclude or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
      continue
    if p.default is not inspect.Parameter.empty:
      params[name] = p.default
  params.update({k: v for k, v in gin.get_bindings(fn).items()
                 if k not in exclude})
  return params


def _type_ok(value: Any, annotation: Any) -> bool:
  origin = typing.get_origin(annotation)
  if annotation is Any:
    return True
  if origin is typing.Union:
    return any(_type_ok(value, a) for a in typing.get_args(annotation))
  if annotation is type(None):
    return value is None
  if annotation is bool:
    return isinstance(value, bool)
  if annotation is int:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)
  if annotation is float:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)
  if annotation is str:
    return isinstance(value, str)
  if origin in (tuple, list, collections.abc.Sequence):
    if not isinstance(value, (tuple, list)):
      return False
    args = typing.get_args(annotation)
    if origin is tuple and args and args[-1] is not Ellipsis:
      return len(value) == len(args) and all(
          _type_ok(v, a) for v, a in zip(value, args, strict=True))
    # The elements too: `[["a", 1]]` for Tuple[Tuple[str, ...], ...]
    # would otherwise fail as a traceback inside the method.
    return not args or all(_type_ok(v, args[0]) for v in value)
  if origin in (dict, collections.abc.Mapping):
    if not isinstance(value, dict):
      return False
    args = typing.get_args(annotation)
    return not args or all(_type_ok(k, args[0]) and _type_ok(v, args[1])
                           for k, v in value.items())
  return True  # other annotations are not checked


def _type_name(annotation: Any) -> str:
  """`int`, `int or None`, ... for an error message."""
  if typing.get_origin(annotation) is typing.Union:
    return " or ".join(_type_name(a) for a in typing.get_args(annotation))
  if annotation is type(None):
    return "None"
  if typing.get_args(annotation):  # Tuple[str, ...]: as written
    return str(annotation).replace("typing.", "")
  return getattr(annotation, "__name__", str(annotation))


def check_types(config: Any) -> None:
  """Raises InputError when a dataclass config field has a value of the
  wrong type (a gin binding such as `FitConfig.num_states = '4'` would
  otherwise fail deep inside a kernel)."""
  hints = typing.get_type_hints(type(config))
  for field in dataclasses.fields(config):
    check_type(f"{type(config).__name__}.{field.name}",
               getattr(config, field.name), hints.get(field.name, Any))


def check_init_types(obj: Any, arguments: Mapping[str, Any]) -> None:
  """`check_types` for a class's `__init__` arguments (call it with
  `locals()` first thing in `__init__`): each annotated one is checked."""
  hints = typing.get_type_hints(type(obj).__init__)
  for name, value in arguments.items():
    if name in hints and name != "return":
      check_type(f"{type(obj).__name__}.{name}", value, hints[name])


def check_type(name: str, value: Any, annotation: Any) -> None:
  """Raises InputError naming `name` when `value` is not an `annotation`
  (the checks of `check_types`, for a setting that is not a dataclass's)."""
  if not _type_ok(value, annotation):
    raise InputError(f"{name} must be of type {_type_name(annotation)}, got "
                     f"{value!r}")


# Value rules for `check_ranges`: (test, what the message says it wants).
# Each test is false for NaN, so NaN breaks every rule.
AT_LEAST_ONE = (lambda v: v >= 1, ">= 1")
NON_NEGATIVE = (lambda v: v >= 0, ">= 0")
NON_NEGATIVE_FINITE = (lambda v: 0 <= v < math.inf, "finite and >= 0")
POSITIVE_FINITE = (lambda v: 0 < v < math.inf, "finite and > 0")
ABOVE_ONE = (lambda v: 1 < v < math.inf, "finite and > 1")


def check_ranges(config: Any, **rules) -> None:
  """Raises InputError naming the first field of `config` whose value
  breaks its rule, e.g. `check_ranges(self, num_steps=AT_LEAST_ONE)`: a
  gin binding such as `FitConfig.num_steps = 0` is refused before any
  work, not met as a traceback after it. Call after `check_types`."""
  check_values(type(config).__name__,
               {name: getattr(config, name) for name in rules}, **rules)


def check_values(owner: str, values: Mapping[str, Any], **rules) -> None:
  """`check_ranges` for a function's arguments, e.g.
  `check_values("fit", locals(), max_source_len=AT_LEAST_ONE)`; the error
  names `owner.name` (its gin name)."""
  for name, (test, wanted) in rules.items():
    value = values[name]
    if value is not None and not test(value):
      raise InputError(f"{owner}.{name} must be {wanted}, got {value!r}")


@contextlib.contextmanager
def bound(bindings: Mapping[str, Any], what: str) -> Iterator[None]:
  """Binds each gin parameter to its value for the body, then restores the
  earlier bindings; `what` names the setting in the error of a parameter
  gin does not know."""
  old = {}
  with gin.unlock_config():
    for p, value in bindings.items():
      try:
        old[p] = gin.query_parameter(p)
      except ValueError:
        pass
      try:
        gin.bind_parameter(p, value)
      except ValueError as e:
        raise InputError(f"{what}: {e}") from None
  try:
    yield
  finally:
    with gin.unlock_config():
      for p in bindings:
        if p in old:
          gin.bind_parameter(p, old[p])
        else:  # unbound before: unbound again (gin 0.5 has no public way)
          key = gin.config.ParsedBindingKey.parse(p)
          # pylint: disable-next=protected-access
          gin.config._CONFIG.get(key.config_key, {}).pop(key.arg_name, None)
