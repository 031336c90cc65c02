"""`csl-jax augment`: prepare -> induce -> fit -> parse -> sample -> report.

Each stage writes into its own subdirectory of --out and records a key (a
hash of its inputs' contents and its gin configuration). A stage whose key
is unchanged and whose summary exists is reused, so re-running after a
change redoes only what depends on it.
"""

import argparse
import hashlib
import os
from typing import Callable, Dict, List, Optional

from absl import logging
import gin

from csl_jax.cli import fit as fit_stage
from csl_jax.cli import induce as induce_stage
from csl_jax.cli import parse as parse_stage
from csl_jax.cli import prepare as prepare_stage
from csl_jax.cli import report as report_stage
from csl_jax.cli import sample as sample_stage
from csl_jax.cli import stage
from csl_jax.errors import InputError
from csl_jax.files import atomic_write_json, read_json


def _file_hash(path: str) -> str:
  h = hashlib.sha256()
  with open(path, "rb") as f:
    for block in iter(lambda: f.read(1 << 20), b""):
      h.update(block)
  return h.hexdigest()


def _key(inputs: List[str], config: str) -> str:
  h = hashlib.sha256(config.encode())
  for path in inputs:
    h.update(_file_hash(path).encode())
  return h.hexdigest()


def _cached(directory: str, key: str, run: Callable[[], None]) -> dict:
  """Runs a stage unless its key is unchanged; returns its summary."""
  key_file = os.path.join(directory, "stage_key.json")
  summary_file = os.path.join(directory, "summary.json")
  if (os.path.exists(key_file) and os.path.exists(summary_file) and
      read_json(key_file).get("key") == key):
    logging.info("reusing %s", directory)
    summary = read_json(summary_file)
    summary["reused"] = True
    return summary
  run()
  atomic_write_json(key_file, {"key": key})
  return read_json(summary_file)


@gin.configurable(module="augment")
def augment(out_dir: str, dataset: str = "scan", split: str = "addprim_jump",
            data_dir: Optional[str] = None, num_samples: int = 100_000,
            parse_split: str = "test") -> Dict[str, dict]:
  """The whole CSL augmentation of one dataset split; returns summaries."""
  config = gin.config_str()
  summaries: Dict[str, dict] = {}
  with stage.stage(out_dir, stage.command_line()) as summary:
    data = os.path.join(out_dir, "data")
    if dataset == "scan":
      run = lambda: prepare_stage.prepare_scan(data, split=split)
      inputs = []
    elif dataset in ("geoquery", "cogs"):
      if not data_dir:
        raise InputError(f"augment of {dataset} needs augment.data_dir")
      if dataset == "geoquery":
        run = lambda: prepare_stage.prepare_geoquery(data, data_dir, split)
      else:
        run = lambda: prepare_stage.prepare_cogs(data, data_dir)
      inputs = []
    else:
      raise InputError(f"unknown dataset {dataset!r}; valid: scan, geoquery, "
                       "cogs (or run the stage commands on your own TSVs)")
    summaries["prepare"] = _cached(
        data, _key(inputs, f"{dataset} {split} {data_dir}"), run)
    train = os.path.join(data, "train.tsv")
    held_out = os.path.join(data, f"{parse_split}.tsv")

    grammar_dir = os.path.join(out_dir, "grammar")
    summaries["induce"] = _cached(
        grammar_dir, _key([train], config),
        lambda: induce_stage.induce(grammar_dir, train))
    grammar = os.path.join(grammar_dir, "grammar.qcfg")

    model = os.path.join(out_dir, "model")
    summaries["fit"] = _cached(
        model, _key([grammar, train], config),
        lambda: fit_stage.fit(model, grammar, train))

    if os.path.exists(held_out):
      parsed = os.path.join(out_dir, "parse")
      summaries["parse"] = _cached(
          parsed, _key([os.path.join(model, "params.npz"), held_out], config),
          lambda: parse_stage.parse(parsed, model, held_out))

    samples = os.path.join(out_dir, "samples")
    summaries["sample"] = _cached(
        samples, _key([os.path.join(model, "params.npz")],
                      f"{config} {num_samples}"),
        lambda: sample_stage.sample(samples, model, num=num_samples))

    report = report_stage.write_report(out_dir, summaries, dataset, split)
    summary.update(dataset=dataset, split=split, report=report,
                   num_rules=summaries["induce"]["num_rules"],
                   num_examples=summaries["sample"]["num_examples"],
                   stage_seconds={k: v.get("seconds") for k, v in
                                  summaries.items()})
    if "parse" in summaries:
      summary["accuracy"] = summaries["parse"]["accuracy"]
  return summaries


def add_parser(subparsers) -> None:
  p = subparsers.add_parser(
      "augment", help="the whole CSL augmentation pipeline (gin-configured)")
  p.add_argument("--out", required=True)


def main(args: argparse.Namespace) -> int:
  augment(args.out)
  return 0


def register_configurables() -> None:
  fit_stage.register_configurables()
