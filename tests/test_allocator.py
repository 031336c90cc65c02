"""The CLI's glibc malloc settings (csl_jax/allocator.py)."""

import platform

import pytest

from csl_jax import allocator


@pytest.mark.skipif(platform.system() != "Linux" or
                    platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_applied_on_glibc(monkeypatch):
  monkeypatch.delenv("CSL_JAX_MALLOC", raising=False)
  assert allocator.keep_freed_memory()


def test_opt_out_leaves_malloc_alone(monkeypatch):
  monkeypatch.setenv("CSL_JAX_MALLOC", "default")
  assert not allocator.keep_freed_memory()
