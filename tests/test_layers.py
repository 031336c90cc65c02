"""Imports run one way (the guide's architecture): `qcfg/` imports nothing
above it, no method imports another, and what methods share lives below
them. Every import counts, a function's own too."""

import ast
import os

import pytest

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "csl_jax")

# What the layers below the methods may import from the package besides
# themselves: small utilities with no method, pipeline or model in them.
UTILITIES = {"errors", "files", "numba_fixes", "quiet", "progress",
             "configs", "stop_request", "summaries", "sort_kernel", "beam",
             "provenance"}


def _imports(path):
  """The `csl_jax.a.b...` names a file imports (from-imports with each
  imported name appended: `from csl_jax.methods import geca`)."""
  with open(path, encoding="utf-8") as f:
    tree = ast.parse(f.read(), path)
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
      names = [f"{node.module}.{a.name}" for a in node.names]
    else:
      continue
    for name in names:
      if name.startswith("csl_jax."):
        yield node.lineno, name.split(".")[1:]


def _files(sub):
  for dirpath, _, names in os.walk(os.path.join(PACKAGE, sub)):
    for name in sorted(names):
      if name.endswith(".py"):
        yield os.path.join(dirpath, name)


def _above(paths, layer, allowed):
  """`file:line: csl_jax.x` for each import of `paths` outside `allowed`."""
  return [f"{os.path.relpath(path, PACKAGE)}:{line}: csl_jax.{parts[0]}"
          for path in paths for line, parts in _imports(path)
          if parts[0] not in allowed | {layer}]


@pytest.mark.parametrize("layer, allowed", [
    ("qcfg", UTILITIES),
    ("data", UTILITIES),
    ("cky", UTILITIES | {"qcfg"}),
    ("seq2seq", UTILITIES | {"data"}),
])
def test_the_lower_layers_import_nothing_above_them(layer, allowed):
  wrong = _above(_files(layer), layer, allowed)
  assert not wrong, "imports from above the layer:\n" + "\n".join(wrong)


def test_no_method_imports_another():
  methods = os.path.join(PACKAGE, "methods")
  wrong = []
  for own in sorted(os.listdir(methods)):
    if not os.path.isdir(os.path.join(methods, own)) or own.startswith("_"):
      continue
    for path in _files(os.path.join("methods", own)):
      for line, parts in _imports(path):
        if (parts[0] == "methods" and len(parts) > 1
            and parts[1] not in (own, "base")):
          wrong.append(f"{os.path.relpath(path, PACKAGE)}:{line}: "
                       f"csl_jax.{'.'.join(parts)}")
  assert not wrong, ("a method imports another (move what they share "
                     "below them):\n" + "\n".join(wrong))


def test_the_scan_finds_a_wrong_import(tmp_path):
  """The check can fail: a method imported inside a function is found."""
  bad = tmp_path / "bad.py"
  bad.write_text("from csl_jax.qcfg import grammar\n"
                 "def f():\n  from csl_jax.methods import geca\n")
  assert _above([str(bad)], "qcfg", UTILITIES) == [
      f"{os.path.relpath(str(bad), PACKAGE)}:3: csl_jax.methods"]
