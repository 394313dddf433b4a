"""Ahead-of-time compilation with counters.

:func:`compile_lowered` compiles a ``jax.stages.Lowered`` and reports how long it took
and where the executable came from: ``"compiled"`` (XLA compiled it) or ``"disk"`` (JAX
loaded it from its persistent compilation cache). The source is read from JAX's own
monitoring event ``/jax/compilation_cache/cache_hits``, so it is what JAX did, not a
guess. The event is counted per thread (JAX records it in the thread that compiles), so
compilations running concurrently in several threads are attributed correctly.

``compiler_options`` (per program, e.g. ``{"xla_backend_optimization_level": 0}``) are
passed to ``jax.stages.Lowered.compile``; they never touch the user's ``XLA_FLAGS`` and
are part of the key of an :class:`~aragog._executable_store.ExecutableStore` entry
(JAX's own cache key includes them too). :func:`compile_keyed` looks a caller's key up in
the active store (:mod:`aragog._executable_store`) before tracing, and saves a fresh
compilation there.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

import jax

from aragog._executable_store import full_key, executable_store, options_key

logger = logging.getLogger("aragog")

_CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"
_hits = threading.local()  # per thread: JAX records the event in the compiling thread


def _thread_hits() -> int:
    return getattr(_hits, "n", 0)


def _on_event(event: str, **_kwargs) -> None:
    if event == _CACHE_HIT_EVENT:
        _hits.n = _thread_hits() + 1


jax.monitoring.register_event_listener(_on_event)


@dataclass
class CompileRecord:
    """One compilation: ``label``, seconds tracing + lowering, seconds compiling (or
    loading), and ``source``: ``"compiled"`` or ``"disk"``."""

    label: str
    lower_seconds: float
    compile_seconds: float
    source: str


def compile_lowered(lowered, label: str = "", lower_seconds: float = 0.0, compiler_options=None):
    """``(executable, CompileRecord)`` for ``lowered`` (a ``jax.stages.Lowered``), compiled
    with ``compiler_options`` (a mapping of XLA debug options; ``None`` or empty: XLA's
    defaults)."""
    before = _thread_hits()
    t0 = time.perf_counter()
    if compiler_options:
        try:
            compiled = lowered.compile(compiler_options=dict(compiler_options))
        except Exception as exc:  # noqa: BLE001 - only an option this XLA does not know
            if "No such compile option" not in str(exc):
                raise
            logger.warning("%s: XLA does not know the compiler options %s (%s); compiling with "
                           "its defaults", label or "program", options_key(compiler_options),
                           str(exc).splitlines()[0])
            compiled = lowered.compile()
    else:
        compiled = lowered.compile()
    seconds = time.perf_counter() - t0
    source = "disk" if _thread_hits() > before else "compiled"
    return compiled, CompileRecord(label, float(lower_seconds), seconds, source)


def lower(fn, specs, jit_kwargs=None):
    """``(lowered, seconds)``: ``jax.jit(fn, **jit_kwargs)`` traced and lowered for
    ``specs`` (Python work: it holds the GIL, unlike XLA's compile)."""
    t0 = time.perf_counter()
    lowered = jax.jit(fn, **(jit_kwargs or {})).lower(*specs)
    return lowered, time.perf_counter() - t0


def aot_compile(fn, specs, label: str = "", jit_kwargs=None, compiler_options=None):
    """Trace, lower and compile ``jax.jit(fn, **jit_kwargs)`` for ``specs`` (a list of
    ``jax.ShapeDtypeStruct``): ``(executable, CompileRecord)``."""
    lowered, seconds = lower(fn, specs, jit_kwargs)
    return compile_lowered(lowered, label, seconds, compiler_options)


def store_lookup(key: str | None, label: str = "", compiler_options=None):
    """``(executable, CompileRecord)`` from the active store for ``key`` (with
    ``compiler_options`` and the
    :func:`~aragog._executable_store.environment_key`), or ``None`` (no store, no key,
    or no usable entry)."""
    store = executable_store()
    if store is None or key is None:
        return None
    t0 = time.perf_counter()
    compiled = store.load(full_key(key, compiler_options))
    if compiled is None:
        return None
    return compiled, CompileRecord(label, 0.0, time.perf_counter() - t0, "disk")



def store_save(key: str | None, compiled, record: CompileRecord, compiler_options=None) -> None:
    """Save a fresh compilation in the active store under ``key`` (as :func:`store_lookup`
    finds it); nothing without a store or a key, or for an executable JAX loaded from its
    own cache (re-serializing it can lose its object code)."""
    store = executable_store()
    if store is None or key is None or record.source != "compiled":
        return
    store.save(full_key(key, compiler_options), compiled)


def compile_keyed(fn, specs, label: str = "", jit_kwargs=None, key: str | None = None, compiler_options=None):
    """:func:`aot_compile`, but first look ``key`` (with ``compiler_options`` and the
    :func:`~aragog._executable_store.environment_key`) up in the active store (no tracing at all on a hit: the
    record says ``"disk"``), and save a fresh compilation there."""
    hit = store_lookup(key, label, compiler_options)
    if hit is not None:
        return hit
    compiled, record = aot_compile(fn, specs, label, jit_kwargs, compiler_options)
    store_save(key, compiled, record, compiler_options)
    return compiled, record
