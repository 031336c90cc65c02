"""Shared pytest fixtures. Importable helpers live in `csl_jax.testing`."""

import atexit
import gc
import importlib.util
import os
import shutil
import sys
import tempfile
import time

import pytest

# Two host devices for the whole session (XLA reads the flag once, before
# jax's first use): every training in the suite runs data parallel, as on a
# pod, and no test needs a fresh process to get there.
os.environ["XLA_FLAGS"] = " ".join(filter(None, [
    os.environ.get("XLA_FLAGS"),
    "--xla_force_host_platform_device_count=2",
    # The suite's programs run on tiny data: compiling them is most of their
    # cost, and unoptimized CPU code compiles a third faster (BENCHMARKS.md
    # "Issue 10 → Test suite").
    "--xla_backend_optimization_level=0",
    "--xla_llvm_disable_expensive_passes=true"]))

# Under `-n auto` the cores are shared out by worker: one thread each for
# XLA, TensorFlow and BLAS, instead of every worker's pools fighting over all
# of them (BENCHMARKS.md "Issue 10 → Test suite").
if os.environ.get("PYTEST_XDIST_WORKER"):
  os.environ["XLA_FLAGS"] += (" --xla_cpu_multi_thread_eigen=false"
                              " intra_op_parallelism_threads=1")
  for _name in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS",
                "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

# One JAX compilation cache for the session (csl_jax/compile_cache.py),
# never the user's: made by the first process (xdist's controller), inherited
# by its workers and the CLI processes tests start, so a program one worker
# compiled is loaded by the other.
_SESSION_CACHE = "CSL_JAX_TEST_JAX_CACHE"
if not os.environ.get(_SESSION_CACHE):
  os.environ[_SESSION_CACHE] = tempfile.mkdtemp(
      prefix="csl_jax_test_jax_cache_")
  atexit.register(shutil.rmtree, os.environ[_SESSION_CACHE],
                  ignore_errors=True)
os.environ["JAX_COMPILATION_CACHE_DIR"] = os.environ[_SESSION_CACHE]
os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pytest_configure(config):
  """Under `-n N` (N >= 2), xdist's controller compiles the numba kernels
  before the workers start (csl_jax.precompile's parts side by side; after
  `pip install -e .` loading only), so no two processes compile the same
  kernel (each kernel is cached on disk and loaded by every later
  process)."""
  workers = getattr(config.option, "numprocesses", 0) or 0
  if os.environ.get("PYTEST_XDIST_WORKER") or workers < 2:
    return
  if not all(os.path.isdir(a) for a in config.args):
    return  # some files only: they compile what they use
  from csl_jax import precompile  # pylint: disable=g-import-not-at-top
  start = time.time()
  for part, err in precompile.run_all().items():
    # the tests that use these kernels will say why
    print(f"numba warm-up part {part!r} failed:\n{err}", file=sys.stderr)
  print(f"numba warm-up: {time.time() - start:.0f} s", file=sys.stderr)


def pytest_collection_finish(session):
  """Every test module is imported now, and with them TensorFlow, JAX and
  SeqIO: objects that live as long as the process. Frozen, the collector's
  full passes stop walking them (as `csl_jax.cli.main` freezes its
  imports), and the passes run 100 times less often: they were a measured
  share of the suite (BENCHMARKS.md "Issue 10 -> Test suite", session 43)."""
  del session
  gc.collect()
  gc.freeze()
  gc.set_threshold(700, 10, 1000)


def pytest_xdist_auto_num_workers(config):
  """`-n auto`: one worker per core, at most 8 (each loads TF and JAX)."""
  del config
  return max(1, min(os.cpu_count() or 1, 8))


@pytest.fixture
def clear_gin():
  """A clean gin config before and after the test."""
  import gin  # pylint: disable=g-import-not-at-top
  gin.clear_config()
  yield
  gin.clear_config()


@pytest.fixture
def python_sigint():
  """Python's own SIGINT handler for the test. A suite started in the
  background (`&`, nohup) inherits SIGINT ignored, which the trainers
  rightly leave alone, so a test of their Ctrl-C needs the handler a
  terminal's process has."""
  import signal  # pylint: disable=g-import-not-at-top
  before = signal.signal(signal.SIGINT, signal.default_int_handler)
  yield
  signal.signal(signal.SIGINT, before)


@pytest.fixture
def load_script():
  """Loads `scripts/<name>.py` (or `<folder>/<name>.py`, e.g. benchmarks/)
  as a module (neither folder is a package)."""

  def load(name: str, folder: str = "scripts"):
    path = os.path.join(_REPO_ROOT, folder, f"{name}.py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

  return load
