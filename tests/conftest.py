"""Shared pytest fixtures. Importable helpers live in `csl_jax.testing`."""

import importlib.util
import os

import pytest

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def clear_gin():
  """A clean gin config before and after the test."""
  import gin  # pylint: disable=g-import-not-at-top
  gin.clear_config()
  yield
  gin.clear_config()


@pytest.fixture
def load_script():
  """Loads `scripts/<name>.py` as a module (scripts are not a package)."""

  def load(name: str):
    path = os.path.join(_REPO_ROOT, "scripts", f"{name}.py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

  return load
