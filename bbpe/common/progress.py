"""Progress of a training run: tqdm bars on stderr, or the caller's own callback.

The caller's callback (``ProgressFn``) gets ``(stage, done, total)`` for the stages
``scan`` and ``encode`` (corpus bytes), ``count`` (distinct lists) and ``merge`` (keys
added), in that order, each of them on every run:

* a stage's first report has ``done == 0`` (its start) and its last ``done == total``
  (its end, which may repeat the report before it); a stage with nothing to do (the
  merges when the first pass fills the vocabulary, the encoding with ``encodings=False``,
  all but the encoding for a vocab size of 7 to 270, which learns nothing) is reported
  as ``(0, 0)``, twice;
* ``done`` never goes down, and ``done <= total`` whenever the total is known;
* ``total`` is None while it is unknown, as tqdm takes it: the merges of a vocabulary
  without a limit. Otherwise the merges' total is the most keys the limit leaves room
  for; a corpus that runs out of pairs first ends the stage with its total lowered to
  the keys added.

The trainer reports less than that, and ``Stages`` makes up the rest: a stage with
nothing to do says nothing, the scan and the encoding count the bytes they read
against the file's size (more than it after GBK conversion, fewer after Windows text
mode; the scan of a large corpus reports only its first part's thread), and the merges
say total 0 for no limit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

ProgressFn = Callable[[str, int, int | None], None]  # the caller's callback: the contract above

STAGES = ("scan", "count", "merge", "encode")

_LABELS = {
    "scan": ("reading", "B", True),
    "count": ("counting pairs", " lists", False),
    "merge": ("merging", " merges", False),
    "encode": ("encoding corpus", "B", True),
}


class Stages:
    """The trainer's reports in, the contract above out to ``report``: an instance is what
    the trainer reports to; ``finish()``, once the run is through, ends the last stage and
    reports those that never started."""

    def __init__(self, report: ProgressFn) -> None:
        self._report = report
        self._next = 0  # the index in STAGES of the next stage to start
        self._stage: str | None = None  # the stage under way
        self._done = 0
        self._total: int | None = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage not in STAGES[self._next :] and stage != self._stage:
            return  # a stage that has ended (or one this contract does not know) says nothing more
        if stage != self._stage:
            self._start(stage, self._known(stage, total))
        known = self._known(stage, total)
        done = max(self._done, done if known is None else min(done, known))
        if (done, known) != (self._done, self._total):
            self._done, self._total = done, known
            self._report(stage, done, known)

    def finish(self) -> None:
        """End the stage under way and report every stage that never started, in order."""
        self._end()
        for stage in STAGES[self._next :]:
            self._start(stage, 0)
        self._end()

    def _start(self, stage: str, total: int | None) -> None:
        """End the stage under way, report the stages before ``stage`` that never started
        as empty, and start ``stage``."""
        self._end()
        for skipped in STAGES[self._next : STAGES.index(stage)]:
            self._report(skipped, 0, 0)
            self._report(skipped, 0, 0)
        self._next = STAGES.index(stage) + 1
        self._stage, self._done, self._total = stage, 0, total
        self._report(stage, 0, total)

    def _end(self) -> None:
        """The last report of the stage under way: all its bytes or lists are done; the
        merges' total becomes what was added (it was a limit, or unknown)."""
        if self._stage is None:
            return
        total = self._done if self._stage == "merge" or self._total is None else self._total
        self._report(self._stage, total, total)
        self._stage = None

    @staticmethod
    def _known(stage: str, total: int) -> int | None:
        # the merges' total 0 means no limit: the merge stage only starts below the limit
        return None if stage == "merge" and not total else total


class ProgressBars:
    """A ProgressFn that draws one tqdm bar per stage; ``close()`` when done."""

    def __init__(self) -> None:
        from tqdm import tqdm  # only when bars are wanted

        self._tqdm = tqdm
        self._stage = ""
        self._bar = None

    def __call__(self, stage: str, done: int, total: int | None) -> None:
        if stage != self._stage:
            self.close()
            label, unit, scale = _LABELS.get(stage, (stage, "", False))
            self._bar = self._tqdm(total=total, desc=label, unit=unit, unit_scale=scale, leave=False,
                                   dynamic_ncols=True)
            self._stage = stage
        assert self._bar is not None
        if total != self._bar.total:  # known at the end (the merges without a limit), or lowered
            self._bar.total = total
            self._bar.refresh()
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        self._bar = None
        self._stage = ""


@contextmanager
def stages(progress: bool | ProgressFn | None) -> Iterator[Stages | None]:
    """The trainer's ProgressFn (None for none) for the ``progress=`` argument: bars for
    True, the caller's callable, or nothing. A run that goes through ends with ``finish()``
    (the stages that never started, the end of the last); the bars close whatever happens."""
    if progress is True:
        bars = ProgressBars()
        report, close = Stages(bars), bars.close
    elif callable(progress):
        report, close = Stages(progress), None
    else:
        report, close = None, None
    try:
        yield report
        if report is not None:
            report.finish()
    finally:
        if close is not None:
            close()
