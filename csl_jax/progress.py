"""Progress bars for terminals, a few plain log lines for log files.

A tqdm bar redraws itself with carriage returns: in a log file (stderr not
a terminal: CI, `nohup`, `2> log`) that is thousands of lines. `progress`
shows the bar only when stderr is a terminal, or when CSL_JAX_PROGRESS=1;
otherwise (or with CSL_JAX_PROGRESS=0) it logs one line per 10% of a known
total, and one a minute between them (a 10,000-step run at a step a second
would otherwise be quiet for 17 minutes), with the time left at the rate
so far; per minute when the total is unknown; and one when it closes.

    for ex in progress(examples, desc="source parses"):
      ...
    bar = progress(total=steps, desc="fit", unit="step")
    bar.update(1); bar.set_postfix(loss=0.5); bar.close()
    progress(total=n, delay=5.0)  # nothing at all if done within 5 s
    for step in progress(range(start, steps), total=steps, initial=start):
      ...  # a resumed run's count
"""

import os
import sys
import time
from typing import Iterable, Optional

from absl import logging
import tqdm

ENV = "CSL_JAX_PROGRESS"
LOG_EVERY_PERCENT = 10
LOG_EVERY_SECONDS = 60.0


def bars_enabled() -> bool:
  """CSL_JAX_PROGRESS=1/0 decides; by default, whether stderr is a tty."""
  value = os.environ.get(ENV, "").strip().lower()
  if value in ("1", "true", "yes", "on"):
    return True
  if value in ("0", "false", "no", "off"):
    return False
  try:
    return sys.stderr.isatty()
  except (AttributeError, ValueError):  # Replaced or closed stderr.
    return False


def logs_at(count: float, total: float,
            previous: Optional[float] = None) -> bool:
  """Whether a logged progress of `total` writes a line as its count goes
  from `previous` (default count - 1) to `count`: when it passes into
  another LOG_EVERY_PERCENT of the total (so a caller can have the line's
  figures ready, e.g. a trainer its loss)."""
  previous = count - 1 if previous is None else previous
  every = LOG_EVERY_PERCENT * total
  return 100 * count // every > 100 * previous // every


class _LoggedProgress(tqdm.tqdm):
  """A disabled tqdm (no bar) that logs a line now and then instead."""

  def __init__(self, *args, **kwargs):
    kwargs["disable"] = True
    super().__init__(*args, **kwargs)
    self.desc = kwargs.get("desc") or ""
    self.unit = kwargs.get("unit") or "it"
    self.postfix = None
    # `initial`: counted before (a resumed run's steps): its lines say the
    # count of the whole, at the same tenths as an uninterrupted one's.
    self._count = self._logged = self._initial = kwargs.get("initial") or 0
    self._start = self._last_log = time.time()
    self._closed = False
    # tqdm's `delay`: quiet for its first seconds, so a piece of work that
    # is usually quick (a forest build) logs nothing unless it is slow.
    self._delay = kwargs.get("delay") or 0.0
    self._said = False

  def __iter__(self):
    for item in self.iterable:
      yield item
      self.update(1)
    self.close()

  def update(self, n=1):
    self._count += n
    now = time.time()
    if now - self._start < self._delay:
      return True
    if self.total and logs_at(self._count, self.total, self._count - n):
      self._log(now)
    elif now - self._last_log >= LOG_EVERY_SECONDS:
      self._log(now)
    return True

  def _eta(self, now: float) -> str:
    """`, ETA 4m10s` at this process's rate (a resumed run's own), or ''."""
    done = self._count - self._initial
    if not self.total or done <= 0 or self._count >= self.total:
      return ""
    left = (self.total - self._count) * (now - self._start) / done
    minutes, seconds = divmod(int(round(left)), 60)
    hours, minutes = divmod(minutes, 60)
    text = (f"{hours}h{minutes:02d}m" if hours else
            f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s")
    return f", ETA {text}"

  def _log(self, now: float) -> None:
    self._last_log, self._logged, self._said = now, self._count, True
    of = f"/{self.total:g}" if self.total else ""
    extra = f" ({self.postfix})" if self.postfix else ""
    logging.info("%s: %d%s %s, %.0fs%s%s", self.desc or "progress",
                 self._count, of, self.unit, now - self._start,
                 self._eta(now), extra)

  def close(self):
    if not self._closed:
      self._closed = True
      now = time.time()
      quiet = not self._said and now - self._start < self._delay
      if self._count != self._logged and not quiet:
        self._log(now)  # The final count, unless just logged.
    super().close()


def start_at(bar: tqdm.tqdm, count: int) -> None:
  """Tells a bar made before its loop knew it that the loop resumed at
  `count` (a checkpoint's step): the count, and the rate behind the ETA,
  are then of the whole run and of this process's steps."""
  if isinstance(bar, _LoggedProgress):
    bar._count = bar._logged = bar._initial = count  # pylint: disable=protected-access
  else:
    bar.n = bar.initial = count
    bar.refresh()


def progress(iterable: Optional[Iterable] = None, **tqdm_kwargs) -> tqdm.tqdm:
  """tqdm(iterable, **tqdm_kwargs) on a terminal; else periodic log lines.

  An explicit `disable=True` turns both off.
  """
  if tqdm_kwargs.get("disable"):
    return tqdm.tqdm(iterable, **tqdm_kwargs)
  if bars_enabled():
    return tqdm.tqdm(iterable, **tqdm_kwargs)
  return _LoggedProgress(iterable, **tqdm_kwargs)
