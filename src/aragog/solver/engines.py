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

__all__ = ["shared_programs", "compile_stats", "clear_shared_programs", "store_key", "block_programs",
           "compiled_program", "bare_executables"]

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


def block_programs(options, inputs, store: str | None = None):
    """compile_mode "blocks": a :class:`~aragog.solver.blocks.BlockPrograms` (the right-hand
    side recorded with aragog.csdl; structure, thermal and diagnostics submodels compiled as
    separate blocks at first use) for ``options`` and ``inputs``; ``store``: its
    :func:`store_key`."""
    from aragog import physics
    from aragog.solver.blocks import BlockPrograms

    n_state = physics.state_size(inputs.mesh.number_of_cells, options)
    ml, mu = physics.band_widths(options)
    return BlockPrograms(options, inputs, n_state, ml, mu, store_key=store)


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
      of ``entropy_at``, counted in the :class:`~aragog.solver.jitpair.ProgramStats`
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


def programs_in_cache(pair, names, configured_dir) -> bool:
    """Whether every program ``names`` of the (lazy, untraced) ``pair`` has an entry in
    aragog's store of the cache directory that ``configured_dir`` (``solver.jax_cache_dir``)
    resolves to; reads no entry and activates nothing. ``False`` with the cache off or
    remote."""
    from aragog._jax import jax
    from aragog.csdl.compiling import ExecutableStore
    from aragog.solver.cache import EXECUTABLES, resolve_cache_dir

    directory = resolve_cache_dir(configured_dir, jax_dir=jax.config.jax_compilation_cache_dir).directory
    if directory is None or "://" in directory:
        return False
    store = ExecutableStore(Path(directory) / EXECUTABLES)
    return all(pair.stored(name, store) for name in names)


def compiled_program(programs, name: str):
    """``(executable, XLA options)`` of program ``name`` of a fused JitPair as compiled so
    far (compiles nothing), or ``None``: not compiled yet, no such program, or
    ``programs`` is not a JitPair (compile_mode "blocks"). For benchmarks and profiles
    (kernel counts of the executable)."""
    prog = getattr(programs, "_programs", {}).get(name)
    if prog is None or prog.compiled is None:
        return None
    return prog.compiled, dict(prog.options)


def bare_executables(bound, names) -> tuple[dict, tuple]:
    """``(executables, inputs)`` of a JitPair's bound programs (``pair.bind(...)``):
    ``executables[name](t, y, *inputs)`` calls program ``name`` (compiled now if needed)
    with the bound, packed device inputs and no checks or counters (benchmarks' "bare" call
    costs, against the callbacks ``bound.rhs_into`` / ``jac_into``)."""
    return {name: bound.pair._program(name).compiled for name in names}, bound._inputs
