"""`configs.check_type`: a gin binding's value against its annotation."""

from typing import Dict, Mapping, Optional, Sequence, Tuple

import pytest

from csl_jax import configs
from csl_jax.errors import InputError


@pytest.mark.parametrize("value, annotation", [
    ((("jump", "walk"), ("left", "right")),
     Optional[Tuple[Tuple[str, ...], ...]]),
    (None, Optional[Tuple[Tuple[str, ...], ...]]),
    ([["a", "b"]], Tuple[Tuple[str, ...], ...]),  # gin writes lists
    ((1, "a"), Tuple[int, str]),
    ([1.0, 2], Sequence[float]),  # an int is a float's value
    ({"a": 1}, Dict[str, int]),
])
def test_values_of_their_type_pass(value, annotation):
  configs.check_type("X.f", value, annotation)


@pytest.mark.parametrize("value, annotation, named", [
    # The elements are checked, not only the outer sequence: these failed
    # as tracebacks inside a method before.
    ([1, 2], Optional[Tuple[Tuple[str, ...], ...]],
     "Tuple[Tuple[str, ...], ...] or None"),
    ([["a", 1]], Tuple[Tuple[str, ...], ...], "Tuple[Tuple[str, ...], ...]"),
    ((1, 2, 3), Tuple[int, int], "Tuple[int, int]"),
    ((1, 2), Tuple[int, str], "Tuple[int, str]"),
    (["a", True], Sequence[int], "Sequence[int]"),
    ({"a": "x"}, Mapping[str, int], "Mapping[str, int]"),
    ("ab", Sequence[str], "Sequence[str]"),
])
def test_values_of_another_type_are_refused_naming_it(value, annotation,
                                                      named):
  with pytest.raises(InputError) as e:
    configs.check_type("X.f", value, annotation)
  assert str(e.value) == f"X.f must be of type {named}, got {value!r}"
