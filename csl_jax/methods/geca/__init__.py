"""GECA (Andreas, 2020) as method `geca`; see `augment.py` for the algorithm.

Importing the package registers the method and loads only gin and the
configuration (the Numba kernels load when a stage runs).
"""

from csl_jax.methods.geca.config import GECAConfig
from csl_jax.methods.geca.method import GECA
