"""csl_jax: compositional data augmentation for semantic parsing (CSL and peers) in JAX."""

__version__ = "0.1.0"
