"""`augment`: data -> each method's stages -> candidates -> selection -> report.

The run directory contract (read by the report and `tasks.register_run`):
  RUN/data/{train,dev,test,gen}.tsv          original parts (those present)
  RUN/<method>/<stage>/...                   the method's cached stages
  RUN/<method>/candidates.tsv                everything the method generated
  RUN/<method>/synthetic.tsv                 its synthetic training pairs,
                                             in a random order (below)
  RUN/<method>/<selector>_<k>/synthetic.tsv  a selector's subset of k
  RUN/<method>/diversity/                    the selections' figures and
                                             template frequency plot
  RUN/<method>/summary.json                  stage summaries, report rows
  RUN/report.{md,html}, RUN/summary.json
One process at a time holds the directory (`lock.run_lock`).
"""

import functools
import hashlib
import os
from typing import (Any, Dict, List, Mapping, Optional, Sequence, Tuple,
                    Union)

from absl import logging
import gin
import numpy as np

from csl_jax.data import registry as data_registry
from csl_jax.data import scan
from csl_jax.data import token_copies
from csl_jax.data import tsv
from csl_jax.errors import InputError
from csl_jax.errors import Pending
from csl_jax.files import atomic_copy
from csl_jax.files import atomic_write_bytes
from csl_jax.files import atomic_write_json
from csl_jax.files import read_json
from csl_jax.methods import base as method_base
from csl_jax.pipeline import cache
from csl_jax.pipeline import lock
from csl_jax.pipeline import report as report_lib
from csl_jax import configs
from csl_jax import gin_defaults
from csl_jax import provenance
from csl_jax import quiet
from csl_jax import selection
from csl_jax.selection import diversity
from csl_jax.selection import templates

DATA_DIR = "data"


def _publish(src: str, dst: str) -> None:
  """Atomic copy, skipped when `dst` already has the same bytes."""
  if os.path.exists(dst) and cache.file_hash(dst) == cache.file_hash(src):
    return
  atomic_copy(src, dst)


def _publish_shuffled(src: str, dst: str) -> None:
  """`src`'s lines into `dst` in a random order that its bytes fix (the
  same file, the same order: a rerun writes the same bytes).

  The trainers read a synthetic file as a stream: SeqIO shuffles it
  through a buffer of 1,000 examples, so a cell that reads R of its N lines
  read the first R or so. In a method's own order that is not a random R
  (AugZero writes copy by copy), and two pools drawn with one seed (100K
  and 1M) share their first lines, so their cells read the same data. In
  an order fixed by the file's own bytes, neither holds (BENCHMARKS "A
  pass over the published numbers", session 49)."""
  with open(src, "rb") as f:
    data = f.read()
  lines = data.splitlines(keepends=True)
  if lines and not lines[-1].endswith(b"\n"):
    lines[-1] += b"\n"
  seed = int.from_bytes(hashlib.sha256(data).digest()[:8], "little")
  order = np.random.default_rng(seed).permutation(len(lines))
  out = b"".join(lines[i] for i in order)
  if (os.path.exists(dst) and
      cache.file_hash(dst) == hashlib.sha256(out).hexdigest()):
    return
  atomic_write_bytes(dst, out)


def prepare_stage(dataset: str, split: Optional[str], data_dir: Optional[str],
                  options: Mapping[str, Any]) -> method_base.Stage:
  spec = data_registry.get(dataset)
  split = spec.resolve(split, data_dir, options)
  if spec.needs_data_dir and not data_dir:
    raise InputError(f"augment of {dataset} needs --data_dir (or "
                     "--gin.augment.data_dir=\"'DIR'\")")
  if data_dir and not os.path.isdir(data_dir):
    raise InputError(data_registry.not_a_data_directory(data_dir), data_dir)
  files = spec.source_files(split, data_dir, options) if data_dir else []
  config = {"dataset": dataset, "split": split, "options": dict(options)}
  if files:  # which file is which part (dev.tsv renamed test.tsv is new)
    config["files"] = [os.path.relpath(f, data_dir) for f in files]
  return method_base.Stage(
      DATA_DIR, files, config,
      lambda d: data_registry.prepare(d, dataset, split, data_dir, options))


def originals(pool: Sequence[tsv.Example]) -> List[tsv.Example]:
  """The pool with every token copy (`jump@2`) read as the token it copies
  (`jump`): what a selector parses of primaug's and AugZero's candidates."""
  read = token_copies.original_text
  return [tsv.Example(read(ex.input), read(ex.output)) for ex in pool]


@gin.configurable(module="augment")
def exclude_templates(part: Optional[str] = None) -> Optional[str]:
  """A part of the run (e.g. "test") whose outputs' abstract templates no
  selection takes: every candidate of such a template leaves the pool
  before a selector reads it (Oren et al. App. A keep the compositional
  evaluation's templates out of the synthetic pool). A control for how
  much of a selection's gain is templates of the test set that the pool
  (CSL's, say) happens to hold. None: the whole pool."""
  if part is not None and (not isinstance(part, str) or not part):
    raise InputError(f"augment.exclude_templates.part: {part!r}; a part "
                     "name such as 'test', or None")
  return part


def _without_templates(pool: Sequence[tsv.Example], of: str,
                       abstraction: str) -> Tuple[np.ndarray, int, str]:
  """(indices of the candidates whose template is none of `of`'s outputs',
  the number of `of`'s templates, the abstraction `abstraction` resolves
  to on the pool); candidates the abstraction cannot read have no
  template and stay."""
  name = templates.get(abstraction, pool).name
  try:
    feats = diversity.featurize(pool, name, structure=False)
  except InputError:  # no candidate has a template: none is excluded
    return np.arange(len(pool)), len(_templates_of_part(of, name)), name
  kept, num_banned = _kept(feats, of)
  return kept, num_banned, name


def _templates_of_part(of: str, abstraction: str) -> set:
  try:
    return diversity.templates_of(tsv.read_tsv(of), abstraction)
  except InputError as e:
    raise InputError(f"augment.exclude_templates: none of its outputs is "
                     f"a {abstraction} query ({e.message})", of) from None


def _kept(feats: diversity.PoolFeatures, of: str) -> Tuple[np.ndarray, int]:
  """(indices of the featurized pool's examples of no template of `of`'s
  outputs, the number of those templates)."""
  banned = _templates_of_part(of, feats.abstraction)
  hit = np.array([feats.valid[q] and feats.templates[
      feats.template_of[q]] in banned for q in range(feats.num_queries)],
                 bool)
  return np.flatnonzero(~hit[feats.query_of]), len(banned)


def select_stage(selector: str, k: int, seed: int, candidates: str,
                 train: str, copies: bool = False,
                 exclude: Optional[Tuple[str, str, str]] = None
                 ) -> method_base.Stage:
  """A selector's k of `candidates`. With `copies` (a method that writes
  token copies) the selector sees each copy as the token it copies: the
  templates, atoms and compounds are the dataset's (a copy of `jump` is a
  verb), and the subset written is of the candidates as they are. With
  `exclude` ((part name, its file, abstraction); `exclude_templates`), the
  candidates of that part's templates under the abstraction (one for every
  selector of the run, resolved on the whole pool) are left out first,
  and a selector reading "auto" reads that abstraction."""
  chooser = selection.get(selector)

  def run(directory: str) -> Dict[str, Any]:
    pool = tsv.read_tsv(candidates)
    readable = originals(pool) if copies else pool
    kept, num_banned = np.arange(len(pool)), None
    if exclude:
      kept, num_banned, name = _without_templates(readable, exclude[1],
                                                  exclude[2])
      if not len(kept):
        raise InputError(f"every one of the {len(pool):,} candidates has "
                         f"a template of the {exclude[0]} part "
                         "(augment.exclude_templates): nothing to select",
                         candidates)
      # "auto" read on what is left could resolve otherwise.
      if getattr(chooser, "abstraction", None) == "auto":
        chooser.abstraction = name
    chosen = kept[np.asarray(chooser.select(
        [readable[i] for i in kept], tsv.read_tsv(train), k, seed),
                             np.int64)]
    tsv.write_tsv(os.path.join(directory, "synthetic.tsv"),
                  [pool[i] for i in chosen])
    # A pool that repeats pairs (CSL samples with replacement) gives
    # selections that may repeat them too: the report says so.
    out = {"selector": selector, "k": k, "seed": seed,
           "pool_size": len(pool), "pool_distinct": len(set(pool)),
           "num_examples": len(chosen),
           "num_distinct": len({pool[i] for i in chosen}),
           "num_short": max(0, k - len(chosen))}
    if exclude:
      out["excluded"] = {"part": exclude[0], "part_templates": num_banned,
                         "candidates": len(pool) - len(kept)}
    return out

  config = {"selector": selector, "k": k, "seed": seed}
  if copies:  # the key a selection made before had
    config["copies_read_as_originals"] = True
  if hasattr(chooser, "config"):  # gin-bound options (UAT.alpha, ...)
    config["options"] = chooser.config()
  if exclude:
    config.update(exclude_templates_of=exclude[0],
                  exclude_abstraction=exclude[2],
                  abstractions=templates.ABSTRACTIONS_VERSION)
  return method_base.Stage(
      f"{selector}_{k}", [candidates, train] + ([exclude[1]] if exclude
                                                  else []), config, run)


INTERPRETER_STAGE = "scan_check"


# The datasets whose inputs a program interprets into their outputs.
INTERPRETERS = ("scan", "scan_star")


def interpreter_stage(candidates: str, copies: bool = False,
                      dataset: str = "scan") -> method_base.Stage:
  """The dataset's interpreter (SCAN's or SCAN*'s) over a method's
  candidates: how many commands give their pair's action sequence (peers.md
  §5: every augmentation says its correctness where an interpreter exists;
  for pcfg_bt, Y&K's backtranslation correctness, Y7). With `copies` each
  token copy is read as the token it copies (`jump@2` is a jump)."""
  if dataset == "scan_star":
    from csl_jax.data import scan_star  # pylint: disable=g-import-not-at-top
    interpret = functools.partial(scan_star.interpret,
                                  verbs=scan_star.primitives())
  else:
    interpret = scan.interpret

  def run(directory: str) -> Dict[str, Any]:
    del directory
    pool = tsv.read_tsv(candidates, allow_empty=True)
    right = not_commands = 0
    for ex in originals(pool) if copies else pool:
      try:
        right += interpret(ex.input) == " ".join(ex.output.split())
      except InputError:  # a command the dataset's grammar does not make
        not_commands += 1
    return {"interpreter": dataset, "checked": len(pool), "correct": right,
            "not_commands": not_commands}

  return method_base.Stage(
      INTERPRETER_STAGE, [candidates],
      {"interpreter": dataset, "copies_read_as_originals": copies}, run)


def interpreter_row(summary: Mapping[str, Any]) -> Tuple[str, str]:
  n, name = summary["checked"], {"scan_star": "SCAN*"}.get(
      summary["interpreter"], "SCAN")
  return (f"Pairs {name}'s interpreter confirms (inputs that are no {name} "
          "command)", f'{summary["correct"]:,} of {n:,} '
          f'({100 * summary["correct"] / max(n, 1):.2f} %; '
          f'{summary["not_commands"]:,})')


DIVERSITY_STAGE = "diversity"
TEMPLATE_PLOT = "template_frequency.png"
RANDOM_REPEATS = 10  # uniform draws averaged into each random baseline


def diversity_settings(selectors: Sequence[str]
                       ) -> Tuple[str, str, Dict[str, Dict[str, str]]]:
  """(abstraction, weighting, differ) the report measures with: the
  selectors' own where every selector that has the setting agrees (a bound
  `UAT.abstraction` alone, say), else the default; `differ` names each
  selector whose own setting is not the one measured with, so figures made
  under another setting than the selection's are said."""
  choosers = {n: selection.get(n) for n in selectors}
  found, differ = [], {}
  for attr, default in (("abstraction", "auto"), ("weighting", "keysers")):
    own = {n: getattr(c, attr) for n, c in choosers.items()
           if hasattr(c, attr)}
    values = set(own.values())
    value = next(iter(values)) if len(values) == 1 else default
    found.append(value)
    for n, v in sorted(own.items()):
      if v != value:
        differ.setdefault(n, {})[attr] = v
  return found[0], found[1], differ


def diversity_stage(selections: Sequence[Tuple[str, str]], candidates: str,
                    seed: int, copies: bool = False,
                    abstraction: str = "auto",
                    weighting: str = "keysers",
                    differ: Optional[Dict[str, Dict[str, str]]] = None,
                    train: Optional[str] = None,
                    exclude: Optional[Tuple[str, str]] = None
                    ) -> method_base.Stage:
  """The report's figures of a method's selections ((stage name,
  synthetic.tsv) pairs): templates covered, H(A), H(C), each against the
  mean of `RANDOM_REPEATS` uniform draws of the same size from the pool,
  and the template frequency plot. The pool is featurized once for all
  the method's selections (as CMaxEnt featurizes it), and again only when
  one of them or the candidates change. With `train` (the run's training
  pairs), also the templates of each selection with the training set's
  (Oren et al.'s Table 8 counts those). With `exclude` (as `select_stage`'s)
  the random draws are of the candidates the selectors could take."""

  def run(directory: str) -> Dict[str, Any]:
    pool = tsv.read_tsv(candidates, allow_empty=True)
    chosen = {name: tsv.read_tsv(path, allow_empty=True)
              for name, path in selections}
    # A selection's examples as pool indices: the first of equal examples
    # is as good as any (one query, so the same figures).
    wanted = {ex for exs in chosen.values() for ex in exs}
    first: Dict[tsv.Example, int] = {}
    for i, ex in enumerate(pool):
      if ex in wanted and ex not in first:
        first[ex] = i
    indices = {name: np.array([first[ex] for ex in exs], np.int64)
               for name, exs in chosen.items()}
    out = {"abstraction": abstraction, "weighting": weighting,
           "random_repeats": RANDOM_REPEATS, "pool_size": len(pool)}
    if differ:  # selectors that chose under another setting
      out["selectors_differ"] = differ
    try:
      feats = diversity.featurize(originals(pool) if copies else pool,
                                  abstraction, weighting)
    except InputError as e:  # a pool without templates: no figures
      logging.warning("%s: no selection diversity figures: %s", candidates,
                      e)
      return dict(out, diversity=[], error=str(e))
    # Templates that are the distinct programs (an abstraction of another
    # dataset's, e.g. SMCalFlow's for Lisp programs of your own) are said
    # (`report.nothing_abstracted`).
    out["pool_queries"] = int(feats.valid.sum())
    out["pool_templates"] = int(np.unique(
        feats.template_of[feats.valid]).size)
    train_templates = None
    if train:
      try:
        train_templates = diversity.templates_of(
            tsv.read_tsv(train), feats.abstraction)
        out["train_templates"] = len(train_templates)
      except InputError as e:  # the abstraction reads none of them
        logging.warning("%s: no templates of the training set: %s", train,
                        e)
    allowed = None
    if exclude:  # `feats` reads the exclusion's abstraction (_augment)
      allowed, _ = _kept(feats, exclude[1])
      out["random_of"] = f"the candidates of no {exclude[0]} template"
    rows = diversity.report_rows(feats, indices, seed=seed,
                                 random_repeats=RANDOM_REPEATS,
                                 train_templates=train_templates,
                                 allowed=allowed)
    whole = diversity.diversity(feats, np.arange(len(pool)))
    figures = [dict(whole, selection="pool (all candidates)")]
    for row, rand in zip(rows[::2], rows[1::2], strict=True):
      name = row.pop("selector")
      rand.pop("selector")
      figures.append(dict(row, selection=name, random=rand))
    diversity.plot_template_frequency(
        os.path.join(directory, TEMPLATE_PLOT), feats, indices)
    return dict(out, abstraction=feats.abstraction, diversity=figures,
                plot=TEMPLATE_PLOT)

  config = {"selections": [name for name, _ in selections], "seed": seed,
            "abstraction": abstraction, "weighting": weighting,
            **({"selectors_differ": differ} if differ else {}),
            "random_repeats": RANDOM_REPEATS,
            "compounds": templates.COMPOUNDS_VERSION,
            "abstractions": templates.ABSTRACTIONS_VERSION}
  if copies:
    config["copies_read_as_originals"] = True
  if exclude:
    config["exclude_templates_of"] = exclude[0]
  return method_base.Stage(
      DIVERSITY_STAGE, [candidates] + [path for _, path in selections] +
      ([train] if train else []) + ([exclude[1]] if exclude else []),
      config, run)


def configure(dataset: str, methods: Sequence[str] = ("csl",),
              gin_files: Sequence[str] = (),
              bindings: Sequence[str] = ()) -> List[str]:
  """From Python, gin as `csl-jax augment --dataset DATASET --method M...
  --gin_file=F... --gin.B...` sets it: the dataset's settings for the
  methods (`csl_jax.gin_defaults`), then `gin_files` and `bindings` (e.g.
  "CSL.num_samples = 1000") on top; `include 'gin/...'` resolves from the
  checkout. The config stays unlocked, so a later call configures afresh.
  Returns the files read.

    augment.configure("scan", ["csl"], bindings=["CSL.num_samples = 1000"])
    augment.augment("runs/scan", dataset="scan", split="addprim_jump")
  """
  # pylint: disable=g-import-not-at-top,unused-import
  from csl_jax.model import train  # FitConfig
  from csl_jax.seq2seq import config  # pcfg_bt's reverse model
  # pylint: enable=g-import-not-at-top,unused-import
  quiet.quiet_gin_search()  # its "Path not found" probes of each root
  gin.add_config_file_search_path(gin_defaults.REPO_ROOT)
  gin.clear_config()
  read = gin_defaults.missing(dataset, methods, gin_files) + list(gin_files)
  gin.parse_config_files_and_bindings(read, list(bindings),
                                      finalize_config=False)
  gin_defaults.mark_configured()
  return read


@gin.configurable(module="augment")
def augment(run_dir: str, dataset: str = "scan", split: Optional[str] = None,
            data_dir: Optional[str] = None,
            dataset_options: Optional[Mapping[str, Any]] = None,
            methods: Sequence[str] = ("csl",),
            select: Union[None, str, Sequence[str]] = None,
            select_num: Optional[int] = None, select_seed: int = 0,
            wait: bool = False, shards: Optional[int] = None,
            runner: Optional[str] = None,
            pipeline_args: Sequence[str] = (),
            need_parts: Optional[Mapping[str, str]] = None
            ) -> Dict[str, Any]:
  """Runs the pipeline into `run_dir`; returns the run summary.

  Args:
    run_dir: the run directory (locked while this runs).
    dataset: a `csl_jax.data.registry` name.
    split: the dataset's split (its default if None).
    data_dir: the dataset's files (not needed for SCAN).
    dataset_options: extra loader options (SCAN `seed`, COGS `primitives`).
    methods: the methods to run, `csl_jax.methods` registry names.
    select: selector names (`csl_jax.selection`: a list, one name or
      "a,b"), each keeping its own subset of every method's candidates.
    select_num: how many candidates each selector keeps.
    select_seed: the selectors' seed.
    wait: wait for another process holding `run_dir` instead of stopping.
    shards: CSL's sampling and forests in that many shards (`sample.shards`,
      `fit.forest_shards`).
    runner: every stage with a Beam form on this Apache Beam runner: CSL's
      induction search, forests and sampling, UAT's templating, and CMaxEnt
      where
      `CMaxEnt.num_shards` > 1 is bound.
    pipeline_args: Beam flags for `runner`.
    need_parts: {part: the setting that asks for it}: a part the data
      lacks is an InputError once the data is read, before any method.
  """
  if shards:
    names = [methods] if isinstance(methods, str) else list(methods)
    whole = [m for m in names if m in method_base.names() and not getattr(
        method_base.get(m), "shardable", False)]
    if whole:
      logging.warning("--shards %d: %s %s no sharded form and run%s whole",
                      shards, ", ".join(whole),
                      "has" if len(whole) == 1 else "have",
                      "s" if len(whole) == 1 else "")
  with configs.bound(beam_bindings(shards, runner, pipeline_args),
                     "--shards/--runner"):
    return _augment(run_dir, dataset, split, data_dir, dataset_options,
                    methods, select, select_num, select_seed, wait,
                    need_parts or {}, shards)


def beam_bindings(shards: Optional[int], runner: Optional[str],
                  pipeline_args: Sequence[str] = ()) -> Dict[str, Any]:
  """The gin bindings that shard the stages and put them on `runner`."""
  # pylint: disable=g-import-not-at-top,unused-import
  from csl_jax.methods.csl import fit, sample
  from csl_jax.methods.geca import config as geca_config
  from csl_jax.selection import cmaxent, uat
  # pylint: enable=g-import-not-at-top,unused-import
  if pipeline_args and not runner:
    raise InputError(f"Beam pipeline flags {list(pipeline_args)} need "
                     "--runner")
  if runner and not shards:
    raise InputError("--runner needs --shards N: the stages run on Beam "
                     "one shard per element")
  if shards is not None and shards < 1:
    raise InputError(f"--shards must be >= 1, not {shards}")
  bindings: Dict[str, Any] = {}
  if shards:
    bindings.update({"sample.shards": shards, "fit.forest_shards": shards,
                     "UAT.num_shards": shards,
                     "geca.GECAConfig.num_shards": shards})
  if runner:
    stages = ["sample", "fit", "UAT", "geca.GECAConfig"]
    try:  # CMaxEnt goes to Beam only where it is sharded (approximate)
      if gin.query_parameter("CMaxEnt.num_shards") > 1:
        stages.append("CMaxEnt")
    except ValueError:
      pass
    for fn in stages:
      bindings[f"{fn}.runner"] = runner
      bindings[f"{fn}.pipeline_args"] = list(pipeline_args)
    bindings["InductionConfig.runner"] = runner
    bindings["InductionConfig.pipeline_args"] = tuple(pipeline_args)
  return bindings


def _augment(run_dir, dataset, split, data_dir, dataset_options, methods,
             select, select_num, select_seed, wait, need_parts, shards
             ) -> Dict[str, Any]:
  selectors = selection.parse(select)  # fail before any work on a bad name
  for name, value in (("select_num", select_num),
                      ("select_seed", select_seed)):
    if value is not None and (isinstance(value, bool) or
                              not isinstance(value, int)):
      raise InputError(f"--{name} must be an integer, not {value!r}")
  if isinstance(methods, str):  # "csl" is a method, not "c", "s", "l"
    methods = [methods]
  if selectors and (select_num is None or select_num < 1):
    raise InputError("--select needs --select_num K with K >= 1")
  if select_seed is not None and select_seed < 0:
    raise InputError(f"--select_seed must be >= 0, got {select_seed}")
  if not selectors and select_num is not None:
    raise InputError("--select_num needs --select (a selector to keep "
                     "that many)")
  chosen = [method_base.get(m) for m in methods]
  settings = [] if gin_defaults.configured() else gin_defaults.files(
      dataset, methods)
  if settings:
    logging.warning(
        "augment(dataset=%r) called without the dataset's settings (%s): "
        "each method runs its class defaults; from Python, call "
        "csl_jax.pipeline.augment.configure(%r, %r, ...) first, as `csl-jax "
        "augment` does", dataset, ", ".join(settings), dataset,
        list(methods))
  options = dict(dataset_options or {})
  with lock.run_lock(run_dir, wait):
    # The call's arguments after gin's bindings: config.gin reruns it.
    provenance.write(run_dir, {f"augment.{k}": v for k, v in (
        ("dataset", dataset), ("split", split), ("data_dir", data_dir),
        ("dataset_options", dataset_options), ("methods", methods),
        ("select", select), ("select_num", select_num),
        ("select_seed", select_seed), ("shards", shards))})
    summary: Dict[str, Any] = {"dataset": dataset, "stages": {}}
    prep = prepare_stage(dataset, split, data_dir, options)
    data_dir_out = os.path.join(run_dir, DATA_DIR)
    data_summary = cache.run_stage(prep, data_dir_out)
    summary["split"] = data_summary.get("split")
    summary["stages"]["data"] = _brief(data_summary)
    parts = {p: os.path.join(data_dir_out, f"{p}.tsv")
             for p in ("train", "dev", "test", "gen")
             if os.path.exists(os.path.join(data_dir_out, f"{p}.tsv"))}
    for part, setting in need_parts.items():
      if part not in parts:
        which = " ".join(filter(None, (dataset, summary["split"])))
        raise InputError(f"{setting}: {which} has no {part} part (it has "
                         f"{', '.join(parts)})", data_dir_out)
    run_data = method_base.RunData(data_dir_out, parts)
    settings = diversity_settings(selectors)
    excluded, part = None, exclude_templates()
    if part:
      if part not in parts:
        raise InputError(f"augment.exclude_templates.part: the run has no "
                         f"{part!r} part (it has {', '.join(parts)})",
                         data_dir_out)
      if not selectors:
        logging.warning("augment.exclude_templates.part=%r: no selector "
                        "(--select), so nothing is excluded", part)
      # One abstraction for every selector's exclusion and the report's.
      excluded = (part, parts[part], settings[0])
    waiting = []  # methods whose work waits elsewhere; the others go on
    hows = []
    # Of which data each method is: one not rerun after the data changed is
    # left out of the report and the SeqIO registration.
    data_key = read_json(os.path.join(data_dir_out, cache.KEY_FILE))["key"]
    for method in chosen:
      workdir = os.path.join(run_dir, method.name)
      stage_summaries, stage_dirs = {}, {}
      try:
        for stage in method.stages(run_data, workdir):
          stage_dirs[stage.name] = stage.path(workdir)
          _run(stage, stage_dirs[stage.name], method.name, stage_summaries,
               summary)
      except Pending as e:
        waiting.extend(e.cells)
        hows += [e.how] if e.how else []
        continue
      # The last stage's, or the earlier stage's it names (a last stage
      # that describes them, as pcfg_bt's statistics).
      last = list(stage_summaries)[-1]
      writer = (last if "candidates" in stage_summaries[last] else
                stage_summaries[last].get("candidates_from"))
      if "candidates" not in stage_summaries.get(writer, {}):
        raise RuntimeError(f"method {method.name}: the last stage's summary "
                           "names no `candidates` file, nor a "
                           "`candidates_from` stage that does")
      candidates = os.path.join(workdir, "candidates.tsv")
      # The stage's own file: a cached summary holds the path it was
      # written at, which is another run's in a copied run directory.
      _publish(os.path.join(stage_dirs[writer], os.path.basename(
          stage_summaries[writer]["candidates"])), candidates)
      _publish_shuffled(candidates, os.path.join(workdir, "synthetic.tsv"))
      copies = getattr(method, "writes_token_copies", False)
      selections = []
      for selector in selectors:
        stage = select_stage(selector, select_num, select_seed, candidates,
                             run_data.train, copies, excluded)
        _run(stage, stage.path(workdir), method.name, stage_summaries,
             summary)
        selections.append((stage.name, os.path.join(stage.path(workdir),
                                                    "synthetic.tsv")))
      if selections:
        stage = diversity_stage(selections, candidates, select_seed, copies,
                                *settings, train=run_data.train,
                                exclude=excluded)
        _run(stage, stage.path(workdir), method.name, stage_summaries,
             summary)
      rows = method.report_rows(stage_summaries)
      if dataset in INTERPRETERS:
        stage = interpreter_stage(candidates, copies, dataset)
        _run(stage, stage.path(workdir), method.name, stage_summaries,
             summary)
        rows = list(rows) + [interpreter_row(stage_summaries[stage.name])]
      atomic_write_json(os.path.join(workdir, "summary.json"), {
          "method": method.name, "data_key": data_key,
          # How it trains (`tasks.register_run`'s mixture rates).
          "mixing": getattr(method, "mixing", "equal"),
          "stages": stage_summaries,
          "stage_order": list(stage_summaries),
          "report_rows": [list(r) for r in rows]})
    if waiting:
      raise Pending(*waiting, how="\n\n".join(hows))
    summary["report"] = report_lib.write_report(run_dir)
    atomic_write_json(os.path.join(run_dir, "summary.json"), summary)
  return summary


def _run(stage: method_base.Stage, directory: str, method: str,
         stage_summaries: Dict[str, Any], summary: Dict[str, Any]) -> None:
  """Runs (or reuses) a method's stage, records its summary in the
  method's and the run's, and logs its warnings (`report.stage_warnings`)
  on every run, cached or not: a short or repetitive selection is never a
  surprise."""
  done = cache.run_stage(stage, directory)
  stage_summaries[stage.name] = done
  where = f"{method}/{stage.name}"
  summary["stages"][where] = _brief(done)
  for line in report_lib.stage_warnings(where, done):
    logging.warning("selection: %s", line)


def _brief(stage_summary: Mapping[str, Any]) -> Dict[str, Any]:
  return {"cached": stage_summary.get("cached"),
          "seconds": stage_summary.get("seconds")}
