"""The counters of one compiled program (:class:`ProgramStats`), shared by the program
owner (:mod:`aragog.solver._jitpair`) and the integrator's callback object
(:class:`aragog.solver._jitpair.BoundPair`)."""

from __future__ import annotations

__all__ = ["ProgramStats"]


class ProgramStats:
    """Counters of one compiled program (mutable; ``as_dict()`` for a snapshot).

    ``compiles`` counts XLA compilations, ``loads`` executables loaded from JAX's
    persistent compilation cache instead (``compile_seconds`` includes both); ``source``
    is where the current executable came from: ``"compiled"``, ``"disk"`` or ``"none"``
    (not built yet)."""

    __slots__ = ("traces", "compiles", "loads", "trace_seconds", "compile_seconds", "calls",
                 "call_seconds", "source")

    def __init__(self) -> None:
        self.traces = 0
        self.compiles = 0
        self.loads = 0
        self.trace_seconds = 0.0
        self.compile_seconds = 0.0
        self.calls = 0
        self.call_seconds = 0.0
        self.source = "none"

    def as_dict(self) -> dict[str, int | float]:
        return {name: getattr(self, name) for name in self.__slots__}

    def __repr__(self) -> str:
        return f"ProgramStats({self.as_dict()})"
