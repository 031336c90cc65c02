"""AugZero (Zhou et al. 2023 §4.3, App. C.3, Fig. 3): k copies of the whole
training set, copy i written in the i-th copy of the vocabulary
(`walk left and jump` -> `walk@2 left@2 and@2 jump@2`, on both sides).

No task knowledge: every token is copied, primitive or not. Copy 1 is the
training set itself (the run's original data), so the method's candidates
are copies 2..k: the training data the model sees is k times the original,
with k times its input and output vocabularies. Copies are generated one
line at a time and written as they come: memory does not grow with k.
Dev and test data stay in copy 1.

The variant of App. C.3 that mixes copies inside one example ("walk left@2
and@2 jump@2") needs the syntax: `mixed_copies` takes a QCFG (the run's CSL
grammar), picks a derivation of each pair and writes each rule application's
terminals, on both sides, in copy 1 or copy i. Tokens a rule ties together
(`left` and `I_TURN_LEFT`) so stay in one copy, and every mixed example maps
back to its original.
"""

import dataclasses
import random
from typing import Dict, Iterator, List, Sequence, Tuple

import gin

from csl_jax.data import token_copies
from csl_jax.errors import InputError

Pair = Tuple[str, str]


@gin.configurable(module="augzero")
@dataclasses.dataclass(frozen=True)
class AugZeroConfig:
  """Attributes:
    k: copies of the vocabulary, the original included (the paper: 200).
    mix: App. C.3's variant: copy i of an example mixes copies 1 and i by
      rule application of a derivation under `grammar`.
    mix_prob: with `mix`, the chance that a rule application is in copy i
      (at least one always is; 1.0 gives the plain copies).
    grammar: with `mix`, the QCFG; a relative path is under the run
      directory (the default: the CSL method's grammar of the same run, so
      list `csl` before the mixed AugZero).
    seed: with `mix`, seeds the choices of derivation and copies.
  """
  k: int = 20
  mix: bool = False
  mix_prob: float = 0.5
  grammar: str = "csl/induce/grammar.qcfg"
  seed: int = 0

  def __post_init__(self):
    from csl_jax import configs  # pylint: disable=g-import-not-at-top
    configs.check_types(self)
    if self.k < 2:
      raise InputError(f"augzero k must be >= 2, got {self.k}")
    if not 0.0 < self.mix_prob <= 1.0:
      raise InputError(f"augzero mix_prob must be in (0, 1], got "
                       f"{self.mix_prob}")

  def key(self) -> dict:
    """What determines the copies (the plain ones depend on k alone)."""
    if not self.mix:
      return {"k": self.k}
    return {"k": self.k, "mix": True, "mix_prob": self.mix_prob,
            "seed": self.seed}


def copies(pairs: Sequence[Pair], config: AugZeroConfig,
           source: str = None) -> Iterator[Pair]:
  """Copies 2..k of every pair, copy by copy, in the training order."""
  token_copies.check_no_separator(pairs, source)
  split = [(x.split(), y.split()) for x, y in pairs]
  vocab = sorted({t for x, y in split for t in x + y})
  for i in range(2, config.k + 1):
    copy = {t: token_copies.copy_token(t, i) for t in vocab}.__getitem__
    for x, y in split:
      yield " ".join(map(copy, x)), " ".join(map(copy, y))


def _derivations(rules, pairs):
  """One packed forest per pair under `rules` (empty: not derivable)."""
  # pylint: disable=g-import-not-at-top
  from csl_jax.cky import forest
  from csl_jax.cky.grammar_arrays import encode_qcfg
  # pylint: enable=g-import-not-at-top
  grammar = encode_qcfg(rules, max([r.num_nts for r in rules] + [1]))
  batch, _ = forest.build_forests(grammar, pairs, max_source_len=10**9,
                                  max_target_len=10**9)
  return [batch[b] for b in range(len(batch))]


def _choose(f, rng: random.Random) -> Dict[int, int]:
  """One derivation: node -> its edge, drawn with `rng`, root first."""
  by_parent: Dict[int, List[int]] = {}
  for e, parent in enumerate(f.edge_parent):
    by_parent.setdefault(int(parent), []).append(e)
  chosen, todo = {}, [f.root]
  while todo:
    v = todo.pop()
    e = rng.choice(by_parent[v])
    chosen[v] = e
    todo.extend(int(c) for c in reversed(f.edge_children[e]) if c >= 0)
  return chosen


def _rule(rules, f, e: int) -> List[str]:
  """Edge e's rule, source and target symbols."""
  rule = rules[int(f.edge_rule[e])]
  return list(rule.source) + list(rule.target)


def _render(rules, f, chosen: Dict[int, int], copy_of: Dict[int, int]
            ) -> Tuple[List[str], List[str]]:
  """The pair the derivation `chosen` yields, node v's rule terminals in
  copy `copy_of[v]` (a node a rule repeats on the target is one subtree)."""
  def render(v):
    e = chosen[v]
    rule = rules[int(f.edge_rule[e])]
    children = [render(int(c)) for c in f.edge_children[e] if c >= 0]

    def side(symbols, which):
      out = []
      for t in symbols:
        n = _nt(t)
        out.extend(children[n - 1][which] if n else
                   [token_copies.copy_token(t, copy_of[v])])
      return out
    return side(rule.source, 0), side(rule.target, 1)

  return render(f.root)


def _nt(token: str) -> int:
  from csl_jax.qcfg.rules import nt_index  # pylint: disable=g-import-not-at-top
  return nt_index(token) or 0


def mixed_copies(pairs: Sequence[Pair], rules, config: AugZeroConfig,
                 source: str = None, stats: dict = None) -> Iterator[Pair]:
  """Copies 2..k of every pair, each mixing copy 1 and copy i by rule
  application (App. C.3); a pair `rules` cannot derive is copied whole
  (counted in `stats["not_derived"]`)."""
  token_copies.check_no_separator(pairs, source)
  forests = _derivations(rules, [(x.split(), y.split()) for x, y in pairs])
  if stats is not None:
    stats["not_derived"] = sum(not f.derivable for f in forests)
  for i in range(2, config.k + 1):
    rng = random.Random(f"augzero mix {config.seed} {i}")
    for (x, y), f in zip(pairs, forests, strict=True):
      if not f.derivable:
        yield (" ".join(token_copies.copy_token(t, i) for t in x.split()),
               " ".join(token_copies.copy_token(t, i) for t in y.split()))
        continue
      chosen = _choose(f, rng)
      copy_of = {v: i if rng.random() < config.mix_prob else 1
                 for v in chosen}
      # At least one rule with terminals in copy i: a rule of nonterminals
      # alone writes nothing, so the pair would be copy 1's.
      lexical = [v for v in chosen if not all(
          _nt(t) for t in _rule(rules, f, chosen[v]))] or list(chosen)
      if not any(copy_of[v] == i for v in lexical):
        copy_of[rng.choice(lexical)] = i
      src, tgt = _render(rules, f, chosen, copy_of)
      yield " ".join(src), " ".join(tgt)
