"""The experiment's plots (matplotlib, PNG): accuracy by output length and
learning curves read back from the trainer's TensorBoard event files."""

import glob
import os
from typing import Dict, List, Mapping, Sequence, Tuple

from csl_jax.experiments import results as results_lib
from csl_jax.files import save_figure_once


def _pyplot():
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")  # files only, no display
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  return plt


def read_scalars(directory: str, tag: str) -> List[Tuple[int, float]]:
  """(step, value) of a scalar `tag` in the event files under `directory`,
  sorted by step (a resumed run's later value for a step wins)."""
  from csl_jax import quiet  # pylint: disable=g-import-not-at-top
  tf = quiet.import_tensorflow()
  points: Dict[int, float] = {}
  for path in sorted(glob.glob(os.path.join(directory, "**",
                                            "events.out.tfevents.*"),
                               recursive=True)):
    try:
      # The records read as tf.compat.v1.train.summary_iterator would,
      # without its deprecation warning in every experiment's output.
      for record in tf.data.TFRecordDataset(path):
        event = tf.compat.v1.Event.FromString(record.numpy())
        for value in event.summary.value:
          if value.tag != tag:
            continue
          if value.HasField("tensor"):
            number = float(tf.make_ndarray(value.tensor))
          else:
            number = float(value.simple_value)
          points[int(event.step)] = number
    except tf.errors.DataLossError:  # a file cut short by a kill
      continue
  return sorted(points.items())


def accuracy_by_length(path: str, curves: Mapping[str, Mapping[int, float]],
                       title: str) -> str:
  """One line per training data: exact match (%) against target length.
  A rerun whose figure would be the same keeps the PNG
  (`files.save_figure_once`), as `learning_curves` does."""
  def draw():
    fig, ax = _pyplot().subplots(figsize=(6.4, 4.0))
    for data, points in curves.items():
      xs = sorted(points)
      ax.plot(xs, [points[x] for x in xs], marker="o", markersize=3,
              label=data)
    ax.set_xlabel("target length (output tokens)")
    ax.set_ylabel("exact match (%)")
    ax.set_ylim(-2, 102)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return fig

  return save_figure_once(path, [title, {
      data: sorted(points.items()) for data, points in curves.items()}],
                          draw)


def learning_curves(path: str,
                    runs: Mapping[str, Sequence[Tuple[int, float]]],
                    title: str) -> str:
  """Training loss (token cross-entropy, nats) against step, one line per
  run, log scale."""
  def draw():
    fig, ax = _pyplot().subplots(figsize=(6.4, 4.0))
    for label, points in runs.items():
      if points:
        ax.plot([p[0] for p in points], [max(p[1], 1e-6) for p in points],
                label=label, linewidth=1)
    ax.set_xlabel("training step")
    ax.set_ylabel("training loss (nats per target token)")
    ax.set_yscale("log")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig

  return save_figure_once(path, [title, dict(runs)], draw)


def write_plots(out_dir: str, records, splits: Sequence[str],
                cell_dirs: Mapping[Tuple[str, str, int], Sequence[str]]
                ) -> Dict[str, str]:
  """Per split: accuracy by length and learning curves; {label: path}."""
  files = os.path.join(out_dir, results_lib.FILES_DIR)
  plots = {}
  for split in splits:
    curve = results_lib.length_curve(records, split)
    if curve:
      plots[f"{split}: exact match by target length"] = accuracy_by_length(
          os.path.join(files, f"{split}_accuracy_by_length.png"), curve,
          f"{split}: exact match by target length (seeds pooled)")
    runs = {}
    for (sp, data, seed), dirs in cell_dirs.items():
      if sp != split:
        continue
      for d in dirs:
        stage = os.path.basename(d)
        label = f"{data} seed {seed}" + ("" if stage == "train"
                                         else f" ({stage})")
        runs[label] = read_scalars(os.path.join(d, "tensorboard"),
                                   "train/loss")
    if any(runs.values()):
      plots[f"{split}: learning curves"] = learning_curves(
          os.path.join(files, f"{split}_learning_curves.png"), runs,
          f"{split}: training loss")
  return plots
