"""Ahead-of-time compilation with counters.

:func:`compile_lowered` compiles a ``jax.stages.Lowered`` and reports how long it took
and where the executable came from: ``"compiled"`` (XLA compiled it) or ``"disk"`` (JAX
loaded it from its persistent compilation cache). The source is read from JAX's own
monitoring event ``/jax/compilation_cache/cache_hits``, so it is what JAX did, not a
guess. (Compilations running concurrently in several threads may be attributed to each
other; aragog compiles on one thread.)
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import jax

_CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"
_hits = [0]


def _on_event(event: str, **_kwargs) -> None:
    if event == _CACHE_HIT_EVENT:
        _hits[0] += 1


jax.monitoring.register_event_listener(_on_event)


def persistent_cache_hits() -> int:
    """Programs loaded from JAX's persistent compilation cache since import."""
    return _hits[0]


@dataclass
class CompileRecord:
    """One compilation: ``label``, seconds tracing + lowering, seconds compiling (or
    loading), and ``source``: ``"compiled"`` or ``"disk"``."""

    label: str
    lower_seconds: float
    compile_seconds: float
    source: str


def compile_lowered(lowered, label: str = "", lower_seconds: float = 0.0):
    """``(executable, CompileRecord)`` for ``lowered`` (a ``jax.stages.Lowered``)."""
    before = _hits[0]
    t0 = time.perf_counter()
    compiled = lowered.compile()
    seconds = time.perf_counter() - t0
    source = "disk" if _hits[0] > before else "compiled"
    return compiled, CompileRecord(label, float(lower_seconds), seconds, source)


def aot_compile(fn, specs, label: str = "", jit_kwargs=None):
    """Trace, lower and compile ``jax.jit(fn, **jit_kwargs)`` for ``specs`` (a list of
    ``jax.ShapeDtypeStruct``): ``(executable, CompileRecord)``."""
    t0 = time.perf_counter()
    lowered = jax.jit(fn, **(jit_kwargs or {})).lower(*specs)
    return compile_lowered(lowered, label, time.perf_counter() - t0)
