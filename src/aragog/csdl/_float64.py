"""float64 for csdl's entry points, whatever the caller's JAX setting.

csdl computes in float64 (Variables hold float64 values; regions, glue programs and host
callbacks are traced and compiled on float64 arguments). It does not switch
``jax_enable_x64`` on for the process: every public call that traces, compiles or runs JAX
code (the simulators' ``run``/``compute_totals``/``call``/``jaxpr``, inline recording,
``jax_function``'s shape evaluation, a region's compile and its host callback) runs inside
``jax.enable_x64(True)``, a thread-local setting restored on exit, so the caller's own JAX
code keeps its dtypes. Being per thread, it is entered again where JAX calls back in
another thread (a region's ``pure_callback``) and where a compile may run in one (a
region's or glue program's compile). The pure functions a graph becomes
(:func:`~aragog.csdl.graph_function`, ``Region.fn``) follow the caller's setting like any
JAX function.

The same rule as :mod:`aragog._jax` (``float64`` / ``in_float64``), kept here because csdl
imports nothing from aragog but the compile service: importing :mod:`aragog._jax` would
also switch the process to synchronous CPU dispatch, which a csdl user has not asked for.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

import jax

__all__ = ["float64", "in_float64"]

F = TypeVar("F", bound=Callable)


def float64():
    """A context manager: JAX's x64 mode on in this thread while it is open (restored after)."""
    return jax.enable_x64(True)


def in_float64(fn: F) -> F:
    """Decorate an entry point of csdl: ``fn`` runs inside :func:`float64`."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        with jax.enable_x64(True):
            return fn(*args, **kwargs)

    return run  # type: ignore[return-value]
