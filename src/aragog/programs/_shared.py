"""Compiled programs shared by all solvers of one process.

A solver's compiled programs (a fused :class:`~aragog.programs._jitpair.JitPair`, or the
:class:`~aragog.programs._blocks.BlockPrograms` of compile_mode "blocks") depend only on its
static key (:func:`aragog.solver._from_config.static_key` and the compile mode): every value is
a traced argument. So a second solver with the same key — another planet of a grid, a
fresh solver in a coupling script — takes the first one's programs instead of tracing
and compiling again. The 16 most recently used entries are kept.

This is the in-process cache (programs in memory). The persistent cache directory on
disk, which a later process loads from, is :mod:`aragog.programs._disk_cache`;
aragog's layer of it, keyed on :func:`store_key`, is
:class:`aragog._executable_store.ExecutableStore`. Counters of what each program
cost are in :mod:`aragog.programs._counters`.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

__all__ = ["shared_programs", "clear_shared_programs", "clear_caches", "store_key", "code_identity", "block_programs",
           "compiled_program"]

_CACHE: "OrderedDict[tuple, object]" = OrderedDict()
_SIZE = 16

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


def clear_caches() -> None:
    """Empty every in-memory cache of compiled programs and derived data in this process:
    the shared programs (solvers' and :mod:`aragog.probe`'s), JAX's own caches of traced and
    compiled functions (``jax.clear_caches()``: ``EntropyEOS``'s evaluator, the EOS
    generator's solver) and the bundled EOS table sets. Solvers keep the programs they hold
    until their next :meth:`~aragog.solver.EntropySolver.initialize`. The persistent cache on
    disk stays (``aragog cache clear`` empties it)."""
    import jax

    from aragog.eos import clear_table_cache

    clear_shared_programs()
    clear_table_cache()
    jax.clear_caches()


def block_programs(options, inputs, store: str | None = None):
    """compile_mode "blocks": a :class:`~aragog.programs._blocks.BlockPrograms` (the right-hand
    side recorded with aragog.csdl; structure, thermal and diagnostics submodels compiled as
    separate blocks at first use) for ``options`` and ``inputs``; ``store``: its
    :func:`store_key`."""
    from aragog import physics
    from aragog.programs._blocks import BlockPrograms

    n_state = physics.state_size(inputs.mesh.number_of_cells, options)
    ml, mu = physics.band_widths(options)
    return BlockPrograms(options, inputs, n_state, ml, mu, store_key=store)


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
    key of :class:`aragog._executable_store.ExecutableStore` entries (the store adds the
    JAX installation and device)."""
    return hashlib.sha256(repr(key).encode()).hexdigest() + "-" + code_identity()


def compiled_program(programs, name: str):
    """``(executable, XLA options)`` of program ``name`` as compiled so far (compiles
    nothing), or ``None``: not compiled yet, no such program, or compile_mode "blocks"
    (whose programs are regions). For benchmarks and profiles (kernel counts of the
    executable)."""
    return programs.compiled_program(name)
