"""csl_jax: compositional data augmentation for semantic parsing in JAX."""

import os
import subprocess
import sys

import setuptools
from setuptools.command.develop import develop

# Pinned to a set that installs together on Python 3.11 (CPU); see README.
INSTALL_REQUIRES = [
    "absl-py==2.5.1",
    "flax==0.12.8",
    "gin-config==0.5.0",
    "importlib_resources==6.5.2",  # tensorflow-datasets needs it at load time
    "jax==0.10.2",
    "jaxlib==0.10.2",
    "matplotlib==3.11.2",  # report and experiment plots
    "numba==0.68.1",
    "numpy==2.4.6",
    "optax==0.2.8",
    "orbax-checkpoint==0.12.8",
    "sentencepiece==0.2.3",
    "seqio==0.0.20",
    "tensorflow==2.21.0",
    "tensorflow-datasets==4.9.10",
    "tensorboard==2.21.0",  # tf.summary needs it; TF no longer pulls it in
    "tensorflow-text==2.21.1",
    "tqdm==4.70.1",
]

EXTRAS_REQUIRE = {
    "test": [
        "hypothesis==6.170.15",
        "pytest==9.2.0",
        "pytest-xdist==3.8.0",
    ],
}


class DevelopAndCompile(develop):
  """`pip install -e .`, then the CSL pipeline's numba kernels compiled
  (every kernel given a core a part; csl_jax/precompile.py) so that the
  first run loads them like any later run. Best effort: if it fails, the
  first run compiles them. Off with CSL_JAX_COMPILE_AT_INSTALL=0."""

  def run(self):
    super().run()
    if self.uninstall or os.environ.get("CSL_JAX_COMPILE_AT_INSTALL") == "0":
      return
    here = os.path.dirname(os.path.abspath(__file__))
    code = subprocess.call(
        [sys.executable, "-m", "csl_jax.precompile", "--install"], cwd=here)
    if code:
      print("csl_jax: compiling the numba kernels at install failed; the "
            "first run compiles them", file=sys.stderr)


setuptools.setup(
    name="csl_jax",
    version="0.1.0",
    description=("Compositional data augmentation for semantic parsing "
                 "(CSL, GECA, PCFG sampling, UAT, AugZero) in JAX/Flax."),
    packages=setuptools.find_packages(
        include=["csl_jax", "csl_jax.*", "tasks", "tasks.*"]),
    package_data={"tasks": ["*/*.cfg"]},
    python_requires=">=3.11,<3.13",
    install_requires=INSTALL_REQUIRES,
    extras_require=EXTRAS_REQUIRE,
    entry_points={"console_scripts": ["csl-jax=csl_jax.cli.main:run"]},
    cmdclass={"develop": DevelopAndCompile},
)
