"""Copies of tokens: `walk` -> `walk@2`, the i-th copy of a token.

AugZero copies the whole vocabulary, primitive augmentation one primitive's
input and output tokens (Zhou et al. 2023 §3, §4.3). Copy 1 is the token
itself; copy i > 1 appends `@i`, so every copy is a bijection of the
vocabulary. A vocabulary that already has `@` in a token could collide with
a copy, so it is refused (an InputError naming the first such example).
"""

from typing import Iterable, Optional, Tuple

from csl_jax.errors import InputError

SEPARATOR = "@"


def copy_token(token: str, i: int) -> str:
  """The i-th copy (1-based; copy 1 is the token itself)."""
  return token if i == 1 else f"{token}{SEPARATOR}{i}"


def original_token(token: str) -> str:
  """The token a copy was made from (the inverse of `copy_token`)."""
  base, sep, index = token.rpartition(SEPARATOR)
  return base if sep and index.isdigit() else token


def original_text(text: str) -> str:
  """`text` with every copy read as the token it copies."""
  if SEPARATOR not in text:
    return text
  return " ".join(map(original_token, text.split()))


def check_no_separator(pairs: Iterable[Tuple[str, str]],
                       source: Optional[str] = None) -> None:
  """Raises InputError if a token already contains the separator."""
  for line, (x, y) in enumerate(pairs, start=1):
    for token in (x + " " + y).split():
      if SEPARATOR in token:
        raise InputError(
            f"token {token!r} contains {SEPARATOR!r}, which marks token "
            "copies; its copies could collide with other tokens", source,
            line)
