"""PP and CP recursion depth of COGS variable-free programs (Yao & Koller
Fig. 5 and footnote 2; peers.md Y6: under P_uniform the share of CP depth d
falls faster with d than the share of PP depth d).

A program's PP depth is its longest chain of nested `nmod . prep = ...`
arguments, its CP depth its longest chain of nested `ccomp = ...` ones
(`A dog liked that the girl cooked .` -> `like ( agent = dog , ccomp = cook
( agent = * girl ) )`: CP depth 1). Each file is one program per line, or a
TSV whose second column is the program.

  python3 benchmarks/bench_recursion_depth.py \
    train=RUN/augment/gen/seed_0/data/train.tsv \
    P_train=RUN/augment/gen/seed_0/pcfg_bt_train/programs/programs.txt \
    P_uniform=RUN/augment/gen/seed_0/pcfg_bt_uniform/programs/programs.txt
"""

import argparse
import collections
from typing import Dict, List, Tuple

from csl_jax.errors import run_script
from csl_jax.selection.templates import Tree, parse_brackets


def depths(tree: Tree) -> Tuple[int, int]:
  """(PP depth, CP depth) of a `parse_brackets` tree: a role `nmod . in`
  or `ccomp` is a node over its argument."""
  label, children = tree
  pp = cp = 0
  for child in children:
    child_pp, child_cp = depths(child)
    pp, cp = max(pp, child_pp), max(cp, child_cp)
  if label.startswith("nmod"):
    pp += 1
  elif label == "ccomp":
    cp += 1
  return pp, cp


def programs_of(path: str) -> List[str]:
  with open(path, encoding="utf-8") as f:
    lines = [line.rstrip("\n") for line in f if line.strip()]
  return [line.split("\t")[1] if "\t" in line else line for line in lines]


def profile(programs: List[str]) -> Dict[str, collections.Counter]:
  pp, cp = collections.Counter(), collections.Counter()
  for program in programs:
    p, c = depths(parse_brackets(program))
    pp[p] += 1
    cp[c] += 1
  return {"pp": pp, "cp": cp}


def main() -> None:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("files", nargs="+", help="NAME=PATH")
  args = p.parse_args()
  named = [f.split("=", 1) for f in args.files]
  if any(len(pair) != 2 for pair in named):
    p.error("each file is NAME=PATH")
  profiles = {name: profile(programs_of(path)) for name, path in named}
  top = max(max(max(prof[k]) for k in prof) for prof in profiles.values())
  head = " | ".join(str(d) for d in range(top + 1))
  for kind in ("pp", "cp"):
    print(f"\n{kind.upper()} depth: share of programs (%)\n")
    print(f"| data | programs | {head} |")
    print("|---|---|" + "---|" * (top + 1))
    for name, prof in profiles.items():
      counts = prof[kind]
      n = sum(counts.values())
      cells = " | ".join(f"{100 * counts[d] / n:.2f}" for d in range(top + 1))
      print(f"| {name} | {n:,} | {cells} |")


if __name__ == "__main__":
  run_script(main)
