"""A CSL fit's bytes do not depend on XLA's intra-op thread count.

XLA's CPU backend handed the fit's reductions to YNNPACK, which splits a
long reduction differently on one thread than on several: the README main
command's fit under `taskset -c 0` ended with other parameters (in the last
bits) than on 2 cores, and its synthetic.tsv in another order. The fit's
programs are compiled with `train.FIT_COMPILER_OPTIONS` (XLA's own
reductions, whose order is fixed at compile time)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest


_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Five training steps on 18,000 roots (the pairs repeated, random weights):
# YNNPACK split this batch's reductions differently on 1 and 2 threads.
# With "hlo", the compiled programs' text instead.
_SCRIPT = textwrap.dedent("""\
    import os, sys
    out, cpus = sys.argv[1], int(sys.argv[2])
    if cpus:
      os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:cpus])
    import jax, jax.numpy as jnp, numpy as np, optax
    from csl_jax.cky import forest as forest_lib
    from csl_jax.cky.grammar_arrays import encode_qcfg
    from csl_jax.model import contexts, train
    from csl_jax.model.forest_arrays import Layout
    from csl_jax.qcfg.rules import parse_rules
    from csl_jax.testing.walk_run import GRAMMAR, PAIRS
    rules = parse_rules(GRAMMAR)
    batch, _ = forest_lib.build_forests(encode_qcfg(rules, 2), PAIRS)
    examples = list(range(len(PAIRS))) * 3000
    layout = Layout(batch, examples, contexts.context_index(rules, 2))
    weights = np.random.default_rng(0).random(len(examples)) + 0.5
    forests = jax.tree_util.tree_map(jnp.asarray, layout.pad(
        weights.astype(np.float32), layout.shape()))
    params = train.init_params(len(rules), contexts.num_contexts(rules), 4,
                               1.0, 0)
    state = train._init_state(optax.adam(0.1), params)
    args = (forests, jnp.ones(len(rules), bool), None, np.float32(0.1))
    if sys.argv[3] == "hlo":
      text = [train._train_step.lower(params, state, *args, use_mask=False),
              train._log_likelihood_jit.lower(params, forests)]
      with open(out, "w") as f:
        f.write("\\n".join(t.compile().as_text() for t in text))
      sys.exit()
    for _ in range(5):
      params, state, loss = train._train_step(params, state, *args,
                                              use_mask=False)
    np.savez(out, loss=np.asarray(loss),
             **{k: np.asarray(v) for k, v in params.items()})
    """)


def _run(tmp_path, cpus: int, what: str) -> str:
  """Runs `_SCRIPT` in a fresh process with `cpus` CPUs (0: all) and XLA's
  settings as a `csl-jax` command has them: not the suite's `conftest.py`
  flags, under which XLA fused no reduction into YNNPACK (no optimization)
  or split none apart (two host devices)."""
  script = tmp_path / "fit_steps.py"
  script.write_text(_SCRIPT)
  out = str(tmp_path / f"{what}_{cpus}")
  env = dict(os.environ)
  env["PYTHONPATH"] = os.pathsep.join(
      filter(None, [_REPO, env.get("PYTHONPATH")]))
  env.pop("XLA_FLAGS", None)
  subprocess.run([sys.executable, str(script), out, str(cpus), what],
                 check=True, cwd=_REPO, env=env)
  return out


def test_fit_programs_keep_reductions_out_of_ynnpack(tmp_path):
  with open(_run(tmp_path, 0, "hlo"), encoding="utf-8") as f:
    text = f.read()
  assert "ENTRY" in text
  assert "__ynn_fusion" not in text


@pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or
    len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs to compare")
def test_fit_steps_same_bytes_on_one_and_two_threads(tmp_path):
  one = np.load(_run(tmp_path, 1, "steps") + ".npz")
  two = np.load(_run(tmp_path, 2, "steps") + ".npz")
  for key in one.files:
    assert one[key].tobytes() == two[key].tobytes(), key
