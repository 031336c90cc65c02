"""`csl-jax run-bundle DIR`: trains and decodes an experiment's exported
cells (`experiment.bundle`) where an accelerator is, with JAX alone."""

import argparse
import os
import sys
import traceback

from csl_jax.cli import stage
from csl_jax.errors import InputError
from csl_jax.seq2seq import bundle


def add_parser(subparsers) -> None:
  p = subparsers.add_parser(
      "run-bundle", help="train and decode the cells of an experiment "
      "bundle (experiment.bundle=DIR) on this machine")
  p.add_argument("bundle", help="the bundle directory")
  p.add_argument("--lanes", type=int, default=1,
                 help="cells trained at once, one process each, sharing "
                 "the accelerator")
  p.add_argument("--pack", default=None, metavar="FILE",
                 help="write FILE, a .tar.gz of the finished cells' "
                 "outputs (what the experiment reads back; unpack with "
                 "`tar xzf FILE -C DIR` beside the experiment), as cells "
                 "finish and at the end")
  p.add_argument("--pack_only", action="store_true",
                 help="train nothing: only --pack what is finished (e.g. "
                 "after a run stopped by a time limit)")
  p.add_argument("--only", default=None, metavar="GLOB",
                 help="run only the pending cells matching GLOB (e.g. "
                 "'*/primaug_20/*'): the rows that matter most first")
  p.add_argument("--stage_in", default=None, metavar="DIR",
                 help="run (and pack) a copy of the bundle kept under DIR "
                 "(made once; a later call resumes it): for machines that "
                 "keep DIR but not the working tree between calls")
  p.add_argument("--lane", type=int, default=None,
                 help=argparse.SUPPRESS)  # run_bundle's own processes
  p.add_argument("--cell", action="append", default=None,
                 help=argparse.SUPPRESS)  # a lane's cells


def _lane(args) -> None:
  """One lane of a multi-lane run (run_bundle's own process). It ends with
  os._exit whatever happened: a lane that failed, e.g. to open the device,
  can otherwise hang at interpreter exit on a thread that never ends, and
  its parent waits for it (a GPU call saw lanes fail so and the parent wait
  until its timeout: BENCHMARKS "Z5 on an H100, session 28")."""
  code = 0
  try:
    bundle.run_bundle(args.bundle, max(args.lanes, 1), args.lane,
                      only=args.only, assigned=args.cell)
  except SystemExit as e:  # SIGTERM: the step was checkpointed
    code = e.code if isinstance(e.code, int) else 1
  except KeyboardInterrupt as e:  # Ctrl-C: the trainer says what it saved
    print(f"[run-bundle] lane {args.lane} interrupted"
          + (f": {e}" if str(e) else ""), file=sys.stderr)
    code = 130
  except InputError as e:
    code = stage.report_input_error(e)
  except BaseException:  # pylint: disable=broad-except
    traceback.print_exc()
    code = 1
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(code)  # pylint: disable=protected-access


def main(args) -> int:
  if args.lane is not None:
    _lane(args)
  if args.lanes < 1:
    raise InputError(f"--lanes must be >= 1, got {args.lanes}")
  if args.pack_only and not args.pack:
    raise InputError("--pack_only needs --pack FILE")
  if args.pack and not os.path.isdir(os.path.dirname(
      os.path.abspath(args.pack))):  # found before any cell trains
    raise InputError("--pack: no such directory for the pack", args.pack)
  if args.stage_in:
    args.bundle = bundle.stage(args.bundle, args.stage_in)
    print(f"[run-bundle] running the copy {args.bundle}")
  failed = False
  if not args.pack_only:
    try:
      result = bundle.run_bundle(args.bundle, max(args.lanes, 1),
                                 only=args.only, pack=args.pack)
      print(f"[run-bundle] {len(result['cells'])} cell(s) run, "
            f"{len(result['left'])} left in {args.bundle}")
      failed = bool(result["left"])
    except bundle.LanesFailed as e:  # what finished is still packed
      print(f"[run-bundle] {e}", flush=True)
      failed = True
  if args.pack:
    packed = bundle.pack_outputs(args.bundle, args.pack)
    print(f"[run-bundle] {len(packed)} file(s) packed into {args.pack}")
  return 1 if failed else 0
