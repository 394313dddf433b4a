"""Compiled programs shared by all solvers of one process.

A solver's compiled programs (a fused :class:`~aragog.solver.jitpair.JitPair`, or the
:class:`~aragog.solver.blocks.BlockPrograms` of compile_mode "blocks") depend only on its
static key (:func:`aragog.solver.inputs.static_key` and the compile mode): every value is
a traced argument. So a second solver with the same key — another planet of a grid, a
fresh solver in a coupling script — takes the first one's programs instead of tracing
and compiling again. The 16 most recently used entries are kept.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

__all__ = ["shared_programs", "compile_stats", "clear_shared_programs", "store_key"]

_CACHE: "OrderedDict[tuple, object]" = OrderedDict()
_SIZE = 16

_COMPILE_KEYS = ("traces", "compiles", "loads", "trace_seconds", "compile_seconds", "source")


def shared_programs(key: tuple, build: Callable[[], object]) -> tuple[object, bool]:
    """``(programs, reused)``: the programs cached under ``key``, or ``build()`` (then
    cached). ``reused`` says whether they already existed in this process."""
    hit = _CACHE.get(key)
    if hit is not None:
        _CACHE.move_to_end(key)
        return hit, True
    programs = build()
    _CACHE[key] = programs
    while len(_CACHE) > _SIZE:
        _CACHE.popitem(last=False)
    return programs, False


def clear_shared_programs() -> None:
    """Forget every shared program (the next solver of each key compiles again)."""
    _CACHE.clear()


def compile_stats(programs) -> dict:
    """``{program: {traces, compiles, loads, trace_seconds, compile_seconds, source}}``
    of a JitPair or a BlockPrograms (no call counters: those are per solver)."""
    if hasattr(programs, "compile_stats"):
        return programs.compile_stats()
    return {name: {k: s[k] for k in _COMPILE_KEYS} for name, s in programs.stats.items()}


_code: list[str] = []


def code_identity() -> str:
    """SHA-256 of every source file of the installed aragog package (computed once)."""
    if not _code:
        root = Path(__file__).resolve().parents[1]
        digest = hashlib.sha256()
        for path in sorted(root.rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
        _code.append(digest.hexdigest())
    return _code[0]


def store_key(key: tuple) -> str:
    """A string that determines every program compiled for the static ``key`` (compile
    mode, options, table identity, input signature) with this version of the code; the
    key of :class:`aragog.csdl.compiling.ExecutableStore` entries (the store adds the
    JAX installation and device)."""
    return hashlib.sha256(repr(key).encode()).hexdigest() + "-" + code_identity()
