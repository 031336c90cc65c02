"""Fixes to numba (0.68) that every kernel module imports before it defines
kernels: `cache` (on-disk cache saves safe across processes) and
`slice_errors` (slice assignments that compile in a tenth of the time)."""

from csl_jax.numba_fixes import cache  # noqa: F401  pylint: disable=unused-import
from csl_jax.numba_fixes import slice_errors  # noqa: F401  pylint: disable=unused-import
