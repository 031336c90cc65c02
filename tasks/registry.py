"""SeqIO tasks and mixtures for fine-tuning on original + CSL-synthetic data.

`register_dataset(NAME, DATA_DIR, synthetic_tsv=S)` registers
  NAME                the original splits DATA_DIR/{train,dev,test,gen}.tsv
  NAME_csl_synthetic  the synthetic pairs S, as a "train" split
  NAME_csl_mixture    both, sampled 1:1 by default: the paper's (§3.2)
                      "approximately equal number of original and
                      synthesized examples", in expectation
Paths are local or gs:// (read with tf.io.gfile). Files hold
`input<TAB>output` lines (UTF-8); a malformed line fails the input pipeline
with an InvalidArgumentError naming the file and line.
"""

import os
import re
from typing import NamedTuple, Optional, Sequence, Union

from absl import logging
import seqio
import tensorflow as tf

from tasks import metrics
from tasks import vocab as vocab_lib

DEFAULT_SPLITS = ("train", "dev", "test", "gen")  # gen: COGS
SYNTHETIC_SUFFIX = "_csl_synthetic"
MIXTURE_SUFFIX = "_csl_mixture"
ENV_DATA = "CSL_JAX_DATA"
# Where register_from_env looks for a dataset's synthetic pairs, in order.
SYNTHETIC_FILES = ("synthetic.tsv", "samples/samples.tsv")


class RegisteredNames(NamedTuple):
  original: str
  synthetic: Optional[str]  # None without synthetic data, as is mixture.
  mixture: Optional[str]


def _read_numbered_lines(path: tf.Tensor) -> tf.data.Dataset:
  # Keeps file and line number so a bad line can be reported.
  lines = tf.data.TextLineDataset(path).enumerate(start=1)
  return lines.map(lambda number, line: {
      "line": line, "source": path, "line_number": number})


@seqio.map_over_dataset
def parse_tsv(ex):
  """Maps an `input<TAB>output` line to {"inputs", "targets"} text."""
  line = ex["line"]
  fields = tf.strings.split(line, "\t")
  padded = tf.concat([fields, ["", ""]], axis=0)
  inputs = tf.strings.strip(padded[0])
  targets = tf.strings.strip(padded[1])
  ok = tf.logical_and(tf.equal(tf.size(fields), 2),
                      tf.logical_and(inputs != "", targets != ""))
  where = tf.strings.join([ex["source"], ":",
                           tf.strings.as_string(ex["line_number"])])
  check = tf.debugging.Assert(ok, [
      where, "malformed TSV line (want `input<TAB>output`, both non-empty):",
      line])
  with tf.control_dependencies([check]):
    return {"inputs": tf.identity(inputs), "targets": tf.identity(targets)}


def _replace_task(name, split_to_path, vocabulary, metric_fns):
  features = {key: seqio.Feature(vocabulary, add_eos=True)
              for key in ("inputs", "targets")}
  # Remove first so reloading a module that registers does not crash.
  seqio.TaskRegistry.remove(name)
  seqio.TaskRegistry.add(
      name,
      source=seqio.FileDataSource(_read_numbered_lines, split_to_path),
      output_features=features,
      preprocessors=[
          parse_tsv,
          seqio.preprocessors.tokenize,
          seqio.CacheDatasetPlaceholder(),
          seqio.preprocessors.append_eos_after_trim,
      ],
      postprocess_fn=metrics.strip_text,
      metric_fns=list(metric_fns))


def _join(directory: str, name: str) -> str:
  return directory.rstrip("/") + "/" + name


def register_dataset(
    name: str,
    data_dir: Union[str, os.PathLike],
    splits: Sequence[str] = DEFAULT_SPLITS,
    synthetic_tsv: Optional[Union[str, os.PathLike]] = None,
    vocabulary: Optional[seqio.Vocabulary] = None,
    original_rate: seqio.MixtureRate = 1.0,
    synthetic_rate: seqio.MixtureRate = 1.0,
    metric_fns=(metrics.exact_match,),
) -> RegisteredNames:
  """Registers NAME, and with synthetic data NAME_csl_{synthetic,mixture}.

  Registering a name again replaces the earlier registration.

  Args:
    name: task name, e.g. "scan_addprim_jump" (letters, digits, `_.:`).
    data_dir: directory (local or gs://) with `<split>.tsv` files.
    splits: the splits to register, those whose file exists.
    synthetic_tsv: file (or glob) of synthetic pairs, e.g.
      `<run>/samples/samples.tsv`.
    vocabulary: defaults to `vocab.get_vocabulary()`.
    original_rate: mixture rate of the original task (a float or a
      `fn(task) -> float`, as seqio takes).
    synthetic_rate: mixture rate of the synthetic task; equal rates draw
      original and synthetic examples 1:1, each source repeated as needed.
    metric_fns: SeqIO metric functions for the tasks.

  Returns:
    The registered names.
  """
  data_dir = os.fspath(data_dir)
  vocabulary = vocabulary or vocab_lib.get_vocabulary()
  split_to_path = {}
  for split in splits:
    path = _join(data_dir, f"{split}.tsv")
    if tf.io.gfile.exists(path):
      split_to_path[split] = path
  if not split_to_path:
    raise ValueError(f"{data_dir}: none of "
                     f"{', '.join(s + '.tsv' for s in splits)} exists")
  _replace_task(name, split_to_path, vocabulary, metric_fns)
  logging.info("Registered SeqIO task %s: %s", name, split_to_path)
  if synthetic_tsv is None:
    return RegisteredNames(name, None, None)

  synthetic_tsv = os.fspath(synthetic_tsv)
  if not tf.io.gfile.glob(synthetic_tsv):
    raise ValueError(f"{synthetic_tsv}: no such synthetic data file")
  synthetic = name + SYNTHETIC_SUFFIX
  mixture = name + MIXTURE_SUFFIX
  _replace_task(synthetic, {"train": synthetic_tsv}, vocabulary, metric_fns)
  seqio.MixtureRegistry.remove(mixture)
  seqio.MixtureRegistry.add(
      mixture, [(name, original_rate), (synthetic, synthetic_rate)])
  logging.info("Registered SeqIO mixture %s (rates %s:%s)", mixture,
               original_rate, synthetic_rate)
  return RegisteredNames(name, synthetic, mixture)


def unregister_dataset(name: str) -> None:
  """Removes what `register_dataset(name, ...)` registered, if anything."""
  seqio.MixtureRegistry.remove(name + MIXTURE_SUFFIX)
  seqio.TaskRegistry.remove(name + SYNTHETIC_SUFFIX)
  seqio.TaskRegistry.remove(name)


def _first_existing(paths):
  return next((p for p in paths if tf.io.gfile.exists(p)), None)


def _find_dataset(directory: str):
  """(data dir, synthetic file or None) of a dataset directory, or None."""
  # Flat (`prepare --out`) or `augment --out` layout (data/, samples/).
  for data_dir in (directory, _join(directory, "data")):
    if any(tf.io.gfile.exists(_join(data_dir, f"{s}.tsv"))
           for s in DEFAULT_SPLITS):
      return data_dir, _first_existing(_join(directory, f)
                                       for f in SYNTHETIC_FILES)
  return None


def register_from_env(roots: Optional[str] = None,
                      vocabulary: Optional[seqio.Vocabulary] = None
                      ) -> Sequence[RegisteredNames]:
  """Registers the datasets under $CSL_JAX_DATA, named after their dirs.

  Args:
    roots: comma-separated directories (local or gs://), each a dataset
      directory or a directory of them; defaults to $CSL_JAX_DATA, and
      nothing is registered when that is unset. A dataset directory holds
      `<split>.tsv` files, directly or in `data/`, and optionally synthetic
      pairs, its first existing file of SYNTHETIC_FILES.
    vocabulary: defaults to `vocab.get_vocabulary()`.

  Returns:
    The registered names, one entry per dataset.
  """
  roots = os.environ.get(ENV_DATA, "") if roots is None else roots
  registered = []
  for root in filter(None, (r.strip().rstrip("/") for r in roots.split(","))):
    if not tf.io.gfile.isdir(root):
      raise ValueError(f"{root} (from ${ENV_DATA}): no such directory")
    if _find_dataset(root):
      directories = [root]
    else:
      directories = [_join(root, e.rstrip("/"))
                     for e in sorted(tf.io.gfile.listdir(root))]
    for directory in directories:
      found = tf.io.gfile.isdir(directory) and _find_dataset(directory)
      if found:
        name = re.sub(r"[^\w.:]", "_", os.path.basename(directory))
        registered.append(register_dataset(
            name, found[0], synthetic_tsv=found[1], vocabulary=vocabulary))
  return registered
