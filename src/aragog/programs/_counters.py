"""The counters of the compiled programs: what each program cost, where it came from, how
often it ran.

:class:`ProgramStats` counts for one program (traces, compiles, loads, seconds, calls),
shared by the program's owner (:class:`~aragog.programs.JitPair`) and the integrator's
callback object (:class:`~aragog.programs.BoundPair`). :func:`compile_stats` reads them off
a fused pair or the blocks, :func:`solver_stats` makes a solver's ``jit_stats`` of them and
:func:`log_new_compiles` logs each new compilation. The programs themselves are shared
through :mod:`aragog.programs._shared`.
"""

from __future__ import annotations

__all__ = ["ProgramStats", "compile_stats", "solver_stats", "log_new_compiles"]


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


def compile_stats(programs) -> dict:
    """``{program: {traces, compiles, loads, trace_seconds, compile_seconds, source}}``
    of a JitPair or a BlockPrograms (no call counters: those are per solver)."""
    return programs.compile_stats()


def solver_stats(pair, baseline: dict | None, calls: dict, initial) -> dict:
    """``EntropySolver.jit_stats``: per program ("rhs", "jac", "diagnostics",
    "melt_fraction", "powers", "initial"; with compile_mode "blocks" also "block:structure",
    "block:thermal", "block:diagnostics", "block:vjp(structure)", "block:vjp(thermal)"):

    - ``traces``, ``compiles`` (XLA compilations), ``loads`` (executables loaded from the
      persistent compilation cache), ``trace_seconds`` (tracing + lowering) and
      ``compile_seconds`` (compiling or loading): what *this solver* caused (``baseline``:
      the shared programs' counters when this solver took them);
    - ``source``: where the program in use came from: ``"compiled"``, ``"disk"``
      (persistent cache), ``"memory"`` (compiled earlier in this process, by another solver
      with the same static key) or ``"none"`` (not built yet); "initial" (the EOS inversion
      of ``entropy_at``, counted in the :class:`~aragog.programs._jitpair.ProgramStats`
      ``initial``, so its keys are those of every entry) is computed in NumPy, never
      compiled: ``"numpy"`` once called;
    - ``calls``, ``call_seconds``: this solver's calls (``calls``: its ProgramStats per
      program; for blocks: direct calls of the block by every solver of the process).

    For "blocks", the four programs' counters cover their glue programs only; the blocks
    are reported on their own entries."""
    stats: dict = {}
    if pair is not None:
        base = baseline or {}
        for name, cs in compile_stats(pair).items():
            entry = dict(cs)
            b = base.get(name)
            if b is not None and b["compiles"] + b["loads"] + b["traces"] > 0:
                for k in ("traces", "compiles", "loads", "trace_seconds", "compile_seconds"):
                    entry[k] = cs[k] - b[k]
                if entry["compiles"] + entry["loads"] == 0:
                    entry["source"] = "memory"
            mine = calls.get(name)
            entry["calls"] = mine.calls if mine else 0
            entry["call_seconds"] = mine.call_seconds if mine else 0.0
            if name.startswith("block:"):
                entry["calls"] = pair.blocks()[name[6:]].direct_calls
            stats[name] = entry
    stats["initial"] = initial.as_dict()  # a ProgramStats: the keys of every other entry
    return stats


def log_new_compiles(stats: dict, logged: dict, logger) -> None:
    """Log each program of ``stats`` (:func:`solver_stats`) compiled or loaded since the
    counts in ``logged`` (updated), nothing for programs that were reused."""
    for name, s in stats.items():
        done = s["compiles"] + s["loads"]
        if done > logged.get(name, 0):
            how = "loaded from the persistent compilation cache" if s["source"] == "disk" else "compiled"
            logger.info("%s %s: trace+lower %.2f s, %s %.2f s", name, how, s["trace_seconds"],
                        "load" if s["source"] == "disk" else "compile", s["compile_seconds"])
            logged[name] = done
