"""Pipeline options from the command line: `--runner` plus any Beam
pipeline flags, passed through as Beam parses them."""

from typing import Sequence

from csl_jax.errors import InputError

RUNNERS = ("DirectRunner", "DataflowRunner", "FlinkRunner", "SparkRunner",
           "FnApiRunner", "PrismRunner")


def beam():
  """The apache_beam module, or a one-line error saying how to get it."""
  try:
    import apache_beam  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise InputError(
        "--runner needs apache-beam, which is not installed: see README "
        f"'Scaling out' ({e})") from None
  return apache_beam


def pipeline_options(runner: str, args: Sequence[str] = ()):
  """Beam PipelineOptions for `runner` and extra flags, e.g.
  ["--direct_num_workers=2", "--direct_running_mode=multi_processing"]
  or Dataflow's ["--project=P", "--region=R", "--temp_location=gs://..."].
  """
  if runner not in RUNNERS:
    raise InputError(f"--runner must be one of {', '.join(RUNNERS)}, got "
                     f"{runner!r}")
  beam()
  from apache_beam.options.pipeline_options import PipelineOptions  # pylint: disable=g-import-not-at-top
  return PipelineOptions([f"--runner={runner}", *args])
