"""Import JAX configured for aragog: float64 everywhere, synchronous CPU dispatch.

Every aragog module that uses JAX imports ``jax``/``jnp`` from here so the x64 flag is
set before the first array is created.
"""

from __future__ import annotations

import jax

jax.config.update("jax_enable_x64", True)
# Run CPU programs in the calling thread: aragog calls small compiled programs from
# integrator callbacks thousands of times, and handing each to a worker thread costs more
# than the work (tools/bench_solver.py: RHS callback ~150 us sync vs ~260 us async at
# 100 cells). Read when the CPU backend starts, so it is set here, before any computation.
jax.config.update("jax_cpu_enable_async_dispatch", False)

import jax.numpy as jnp  # noqa: E402

__all__ = ["jax", "jnp"]
