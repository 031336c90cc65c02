"""Augmentation methods; importing this package registers every one."""

from csl_jax.methods import augzero
from csl_jax.methods import csl
from csl_jax.methods import geca
from csl_jax.methods import pcfg_bt
from csl_jax.methods import primaug
from csl_jax.methods.base import add, get, names
