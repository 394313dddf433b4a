"""float64 for aragog's entry points, whatever the caller's JAX setting (a base module).

aragog computes in float64 without switching ``jax_enable_x64`` on for the process: every
entry point that traces, compiles or runs JAX code runs inside ``jax.enable_x64(True)``, a
thread-local setting restored on exit, so the caller's own JAX code keeps its dtypes
(docs/design.md, "No global side effects"). Being per thread, it is entered again where
JAX calls back in another thread (a csdl region's ``pure_callback``) and where a compile
runs in one.

This module imports JAX and nothing else, and sets nothing: :mod:`aragog._jax` re-exports
it beside the one process setting the solver makes (synchronous CPU dispatch), and
:mod:`aragog.csdl`, which imports nothing from aragog but this and the compile service,
uses it directly, so that a csdl-only user's process keeps JAX's dispatch too.
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
    """Decorate an entry point: ``fn`` runs inside :func:`float64`."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        with jax.enable_x64(True):
            return fn(*args, **kwargs)

    return run  # type: ignore[return-value]
