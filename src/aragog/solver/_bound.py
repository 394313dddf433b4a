"""The integrator's callback object: a :class:`~aragog.solver._jitpair.JitPair` with one
``args`` bound (packed, on the device once per solve), calling the compiled executables
with the fewest Python operations and counting every call."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from aragog._jax import in_float64, jax
from aragog.solver._program_stats import ProgramStats

__all__ = ["BoundPair"]


class BoundPair:
    """A :class:`JitPair` with one ``args`` bound: the integrator's callback object.

    Attributes ``n``, ``ml``, ``mu``, ``jac_layout`` and the methods ``rhs_into``,
    ``jac_into`` make it an :class:`aragog.solver.backends.OdeProblem`.

    ``rhs_into(t, y, out)`` writes ``dy/dt`` into ``out`` (float64 ``(n,)``), ``jac_into(t, y,
    out)`` writes the Jacobian (band storage ``(ml + mu + 1, n)`` or dense ``(n, n)``, as
    ``jac_layout`` says). Both count calls and seconds in the pair's ``stats``. Exceptions of
    the compiled call propagate (the integrator adapters turn them into recoverable errors).
    """

    @in_float64
    def __init__(self, pair: Any, args: Any, call_stats: Mapping[str, ProgramStats] | None = None):
        # pair: the aragog.solver._jitpair.JitPair that owns the executables (the type is not
        # imported: jitpair imports this module)
        self.pair = pair
        self._call_stats = call_stats
        self.n = pair.n
        self.ml = pair.ml
        self.mu = pair.mu
        self.jac_layout = pair.jac_layout
        inputs = pair._layout.pack(pair.flatten_args(args))
        # Device-resident, packed inputs: no host->device transfer of args per call.
        self._inputs = tuple(jax.device_put(x) for x in inputs)
        self.rhs_into = self._make_into("rhs")
        self.jac_into = self._make_into("jac")

    def _make_into(self, key: str) -> Callable[[float, np.ndarray, np.ndarray], None]:
        prog = self.pair._program(key)
        compiled = prog.compiled
        stats = self._stats(key)
        inputs = self._inputs
        clock = time.perf_counter
        copyto = np.copyto

        def into(t, y, out):
            t0 = clock()
            copyto(out, compiled(float(t), y, *inputs))
            stats.calls += 1
            stats.call_seconds += clock() - t0

        into.__name__ = f"{key}_into"
        return into

    @in_float64
    def call(self, name: str, t: float, y: np.ndarray) -> Any:
        """Evaluate program ``name`` with the bound args; NumPy arrays (same pytree)."""
        prog = self.pair._program(name)
        t0 = time.perf_counter()
        out = prog.compiled(float(t), np.asarray(y, dtype=np.float64), *self._inputs)
        out = jax.tree_util.tree_map(np.array, out)
        stats = self._stats(name)
        stats.calls += 1
        stats.call_seconds += time.perf_counter() - t0
        return out

    def _stats(self, name: str) -> ProgramStats:
        if self._call_stats is None:
            return self.pair._programs[name].stats
        stats = self._call_stats.get(name)
        if stats is None:  # the solver's own counters of a program it had not called yet
            stats = self._call_stats[name] = ProgramStats()
        return stats

    @in_float64
    def rhs(self, t: float, y: np.ndarray) -> np.ndarray:
        out = np.empty(self.n)
        self.rhs_into(t, y, out)
        return out

    @in_float64
    def jac(self, t: float, y: np.ndarray) -> np.ndarray:
        shape = (self.ml + self.mu + 1, self.n) if self.jac_layout == "band" else (self.n, self.n)
        out = np.empty(shape)
        self.jac_into(t, y, out)
        return out

    @in_float64
    def scalar_fn(self, name: str) -> Callable[[float, np.ndarray], float]:
        """``g(t, y) -> float`` from a scalar-valued program (e.g. an event function)."""
        prog = self.pair._program(name)
        compiled = prog.compiled
        stats = self._stats(name)
        inputs = self._inputs
        clock = time.perf_counter

        def g(t, y):
            t0 = clock()
            value = float(compiled(float(t), y, *inputs))
            stats.calls += 1
            stats.call_seconds += clock() - t0
            return value

        g.__name__ = name
        return g

    def __repr__(self) -> str:
        return f"BoundPair({self.pair!r})"
