"""What ``aragog run`` shows while it integrates (docs/solver.md, "Command line").

On a terminal one line, rewritten in place: a bar of the model time on a logarithmic scale
(the evolution of a magma ocean spans decades: a linear bar would sit at zero for most of
the wall time), the model time, T_magma, Φ, the right-hand-side calls so far and the wall
time. Elsewhere (a log file, a pipe) a plain line per report, every few seconds.
"""

from __future__ import annotations

import math
import sys
from typing import TextIO

__all__ = ["RunProgress", "log_fraction"]

BAR = 24


def log_fraction(t: float, t_start: float, t_end: float) -> float:
    """Where ``t`` lies in [t_start, t_end] on the scale log(1 + (t - t_start)/1 yr), in [0, 1]."""
    span = math.log1p(max(t_end - t_start, 0.0))
    if span <= 0.0:
        return 1.0
    return min(max(math.log1p(max(t - t_start, 0.0)) / span, 0.0), 1.0)


class RunProgress:
    """Callable for ``EntropySolver.solve(progress=...)``; ``interval`` is the wall time [s]
    between reports the CLI asks for (:attr:`interval`: 0.5 on a terminal, 10 otherwise)."""

    def __init__(self, stream: TextIO | None = None, live: bool | None = None):
        self.stream = sys.stderr if stream is None else stream
        self.live = bool(getattr(self.stream, "isatty", lambda: False)()) if live is None else live
        self.interval = 0.5 if self.live else 10.0
        self._width = 0

    def __call__(self, p) -> None:
        frac = log_fraction(p.t, p.t_start, p.t_end)
        text = (f"t = {p.t:.3e} of {p.t_end:.3g} yr | T_magma {p.T_magma:.1f} K | Phi {p.Phi_global:.4f} | "
                f"{p.rhs_calls:,} RHS calls | {p.wall:.0f} s")
        if self.live:
            filled = int(round(frac * BAR))
            line = f"[{'#' * filled}{'.' * (BAR - filled)}] {text}"
            pad = " " * max(self._width - len(line), 0)
            self.stream.write("\r" + line + pad + ("\n" if p.done else ""))
            self._width = 0 if p.done else len(line)
        else:
            self.stream.write(f"aragog run: {100.0 * frac:5.1f} % (log time) {text}{' (done)' if p.done else ''}\n")
        self.stream.flush()
