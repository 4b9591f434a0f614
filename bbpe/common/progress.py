"""Progress of a training run: tqdm bars on stderr, or the caller's own callback.

The trainer reports ``(stage, done, total)``: "scan" and "encode" in corpus bytes,
"count" in distinct lists, "merge" in merges (total 0 when there is no limit).
"""

from __future__ import annotations

from collections.abc import Callable

ProgressFn = Callable[[str, int, int], None]

_LABELS = {
    "scan": ("reading", "B", True),
    "count": ("counting pairs", " lists", False),
    "merge": ("merging", " merges", False),
    "encode": ("encoding corpus", "B", True),
}


class ProgressBars:
    """A ProgressFn that draws one tqdm bar per stage; ``close()`` when done."""

    def __init__(self) -> None:
        from tqdm import tqdm  # only when bars are wanted

        self._tqdm = tqdm
        self._stage = ""
        self._bar = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage != self._stage:
            self.close()
            label, unit, scale = _LABELS.get(stage, (stage, "", False))
            self._bar = self._tqdm(total=total or None, desc=label, unit=unit, unit_scale=scale, leave=False,
                                   dynamic_ncols=True)
            self._stage = stage
        assert self._bar is not None
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        self._bar = None
        self._stage = ""


def progress_callback(progress: bool | ProgressFn | None) -> tuple[ProgressFn | None, Callable[[], None]]:
    """(callback or None, a function to call at the end) for the ``progress=`` argument."""
    if progress is True:
        bars = ProgressBars()
        return bars, bars.close
    if callable(progress):
        return progress, lambda: None
    return None, lambda: None
