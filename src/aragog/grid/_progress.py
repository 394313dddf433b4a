"""Progress of a running grid: a live bar on a terminal (tqdm), plain lines otherwise.

:class:`GridProgress` counts points done, failed and running; on a terminal it draws a
tqdm bar with those counts and tqdm's ETA, elsewhere (a batch job's log, a pipe) it prints
one plain line every ``every`` seconds and at the end. :func:`summary_table` is the
closing table of ``aragog grid run`` and ``aragog grid status``.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

__all__ = ["GridProgress", "summary_table"]


class GridProgress:
    """Counts and shows the points of one run.

    Args:
        total: points to run in this invocation (finished ones of a resumed grid excluded).
        stream: where to write (default ``sys.stderr``).
        live: draw a live bar (default: when ``stream`` is a terminal).
        every: seconds between plain lines when not live.
        enabled: ``False``: count only, show nothing (the Python API's ``progress=False``).
    """

    def __init__(self, total: int, *, stream: TextIO | None = None, live: bool | None = None,
                 every: float = 10.0, enabled: bool = True):
        self.total = int(total)
        self.stream = sys.stderr if stream is None else stream
        self.live = (hasattr(self.stream, "isatty") and self.stream.isatty()) if live is None else live
        self.every = float(every)
        self.enabled = enabled
        self.done = self.failed = self.running = 0
        self._t0 = time.perf_counter()
        self._last_line = self._t0
        self._bar = None
        if enabled and self.live:
            from tqdm import tqdm

            self._bar = tqdm(total=self.total, file=self.stream, unit="pt", dynamic_ncols=True,
                             desc="grid", smoothing=0.1)
            self._refresh()

    @property
    def finished(self) -> int:
        return self.done + self.failed

    def set_running(self, n: int) -> None:
        self.running = int(n)
        self._refresh()

    def point_finished(self, ok: bool, running: int | None = None) -> None:
        """Count one point (``ok``: done, else failed); ``running``: points running now."""
        if running is not None:
            self.running = int(running)
        if ok:
            self.done += 1
        else:
            self.failed += 1
        if self._bar is not None:
            self._bar.update(1)
        self._refresh()

    def _eta(self) -> str:
        elapsed = time.perf_counter() - self._t0
        if not self.finished:
            return "?"
        left = elapsed / self.finished * (self.total - self.finished)
        return _duration(left)

    def line(self) -> str:
        """``12/32 points: 11 done, 1 failed, 2 running; 40 s elapsed, ETA 1 min 6 s``."""
        return (f"{self.finished}/{self.total} points: {self.done} done, {self.failed} failed, "
                f"{self.running} running; {_duration(time.perf_counter() - self._t0)} elapsed, "
                f"ETA {self._eta()}")

    def _refresh(self) -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.set_postfix_str(f"{self.done} done, {self.failed} failed, {self.running} running",
                                      refresh=True)
            return
        now = time.perf_counter()
        if now - self._last_line >= self.every or self.finished == self.total:
            self._last_line = now
            print(self.line(), file=self.stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def summary_table(summary: dict[str, Any], wall: float | None = None) -> str:
    """The closing table of a grid (``GridFolder.summary()``), plus failures (first 10)."""
    p = summary["programs"]
    rows = [("points", summary["points"]), ("done", summary["done"]), ("failed", summary["failed"]),
            ("pending", summary["pending"]),
            ("programs", f"{p['compiled']} compiled, {p['loaded']} loaded, {p['reused']} reused")]
    if wall is not None:
        rows.append(("wall", _duration(wall)))
    width = max(len(k) for k, _ in rows)
    lines = [f"{k:<{width}}  {v}" for k, v in rows]
    failures = summary.get("failures", [])
    for f in failures[:10]:
        values = ", ".join(f"{k}={v}" for k, v in f["values"].items())
        lines.append(f"  failed {f['id']} ({values}): {f['message']}")
    if len(failures) > 10:
        lines.append(f"  ... and {len(failures) - 10} more (aragog grid status DIR --json)")
    return "\n".join(lines)


def _duration(seconds: float) -> str:
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, s = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {s} s"
    hours, m = divmod(minutes, 60)
    return f"{hours} h {m} min"
