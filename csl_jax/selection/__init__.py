"""Selectors of a candidate pool; importing this package registers them."""

from csl_jax.selection import random  # pylint: disable=redefined-builtin
from csl_jax.selection import cmaxent, uat  # UAT, CMaxEnt, CMaxEnt+UAT
from csl_jax.selection.base import add, get, names, parse
