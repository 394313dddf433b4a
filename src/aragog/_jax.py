"""JAX for aragog, in float64, without touching the caller's JAX configuration.

aragog computes in float64. It does not switch ``jax_enable_x64`` on for the process:
every entry point that traces, compiles or calls JAX code runs inside :func:`float64`
(``jax.enable_x64(True)``, a thread-local setting restored on exit), so the caller's own
JAX code keeps its dtypes (docs/design.md, "No global side effects"). Arrays aragog
returns are NumPy float64 or Python floats.

The setting is per thread: a thread that aragog starts (a background compile) enters
:func:`float64` itself. :func:`float64` and :func:`in_float64` live in :mod:`aragog._float64`
(which sets nothing, so that csdl can use them too) and are re-exported here.

One process setting remains: CPU programs run in the calling thread
(``jax_cpu_enable_async_dispatch = False``). aragog calls small compiled programs from the
integrator's callbacks tens of thousands of times per solve, and handing each call to
JAX's dispatch thread costs more than the work: 80-110 us more per right-hand side at 100
cells (about 110 us sync against 200-230 us async; a 100-node solve takes 1.2-1.7 times
as long; ``tools/profile_solves.py`` stage callbacks, docs/solver.md "Speed"). XLA reads the
setting once, when the CPU backend starts, so there is no per-call form: aragog sets it
at import only when the process has not started JAX's backends yet and the user has not
set it (the environment variable ``JAX_CPU_ENABLE_ASYNC_DISPATCH``); otherwise it leaves
it alone. It changes when a program runs, never what it computes.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
from jax._src import xla_bridge as _xla_bridge  # private: whether the backends have started

from aragog._float64 import float64, in_float64

if "JAX_CPU_ENABLE_ASYNC_DISPATCH" not in os.environ and not _xla_bridge.backends_are_initialized():
    jax.config.update("jax_cpu_enable_async_dispatch", False)

__all__ = ["jax", "jnp", "float64", "in_float64"]

