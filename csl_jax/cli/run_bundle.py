"""`csl-jax run-bundle DIR`: trains and decodes an experiment's exported
cells (`experiment.bundle`) where an accelerator is, with JAX alone."""

import argparse

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
                 help="then write FILE, a .tar.gz of the finished cells' "
                 "outputs (what the experiment reads back; unpack with "
                 "`tar xzf FILE -C DIR` beside the experiment)")
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


def main(args) -> int:
  if args.pack_only and not args.pack:
    raise InputError("--pack_only needs --pack FILE")
  if args.stage_in and args.lane is None:
    args.bundle = bundle.stage(args.bundle, args.stage_in)
    print(f"[run-bundle] running the copy {args.bundle}")
  left = []
  if not args.pack_only:
    result = bundle.run_bundle(args.bundle, max(args.lanes, 1), args.lane,
                               only=args.only)
    left = result["left"]
    print(f"[run-bundle] {len(result['cells'])} cell(s) run, "
          f"{len(left)} left in {args.bundle}")
  if args.pack and args.lane is None:
    packed = bundle.pack_outputs(args.bundle, args.pack)
    print(f"[run-bundle] {len(packed)} file(s) packed into {args.pack}")
  return 0 if not left or args.lane is not None else 1
