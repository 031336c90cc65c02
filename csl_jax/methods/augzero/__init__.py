"""AugZero (Zhou et al. 2023 §4.3, App. C.3) as method `augzero`; see
`augment.py`. Importing registers the method."""

from csl_jax.methods.augzero.augment import AugZeroConfig
from csl_jax.methods.augzero.method import AugZero
