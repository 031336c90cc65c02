"""Slice assignment without a formatted shape message: a far shorter compile.

Numba (0.68) compiles every assignment of an array into a slice
(`grown[:n] = old`, `out[i] = row`) together with the error it raises when
the shapes differ, and that error's message is an f-string of both shape
tuples: compiling the unicode formatting behind it was most of the kernels'
cold compile time (BENCHMARKS.md "Issue 10 → Test suite" profiles a
60-line CKY helper). Importing this module points the
assignment's error at one with a fixed message, the one numba itself uses
for targets without string support. Only the text of a shape-mismatch
error changes, and no kernel of ours assigns mismatched shapes.
"""

from numba.core.extending import overload
from numba.np import arrayobj

MESSAGE = "cannot assign slice from input of different size"


def raise_shape_mismatch(src_shapes, index_shape):
  """Stands in for `numba.np.arrayobj.raise_with_shape_context`."""
  raise ValueError(MESSAGE, src_shapes, index_shape)


@overload(raise_shape_mismatch)
def _raise_shape_mismatch(src_shapes, index_shape):
  del src_shapes, index_shape

  def impl(src_shapes, index_shape):
    raise ValueError(MESSAGE)

  return impl


def install() -> bool:
  """Points numba's slice assignment at `raise_shape_mismatch` (once);
  False on a numba without the hook (its own message is kept)."""
  if not hasattr(arrayobj, "raise_with_shape_context"):
    return False
  arrayobj.raise_with_shape_context = raise_shape_mismatch
  return True


install()
