"""Primitive augmentation (Zhou et al. 2023 §3, after Jiang et al. 2022) as
method `primaug`; see `augment.py`. Importing registers the method."""

from csl_jax.methods.primaug.augment import PrimAugConfig
from csl_jax.methods.primaug.method import PrimAug
