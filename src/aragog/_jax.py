"""Import JAX with 64-bit floats switched on (aragog computes in float64 everywhere).

Every aragog module that uses JAX imports ``jax``/``jnp`` from here so the x64 flag is
set before the first array is created.
"""

from __future__ import annotations

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

__all__ = ["jax", "jnp"]
