"""Jacobians of JAX functions: banded (colored forward mode) and dense, in band storage
(:mod:`aragog.programs._band`, re-exported here).

Band storage follows LAPACK/SUNDIALS: a matrix ``J`` (n x n) with lower bandwidth ``ml``
and upper bandwidth ``mu`` is stored as ``band`` of shape ``(ml + mu + 1, n)`` with

    band[mu + i - j, j] = J[i, j]        for  -mu <= i - j <= ml,

entries of ``band`` that fall outside the matrix (``i < 0`` or ``i >= n``) are zero. The
CVODE back end copies it column by column into a SUNDIALS band matrix, and it is the data
of a :class:`scipy.sparse.dia_matrix` with offsets ``mu - d`` for band row ``d``.

:func:`banded_jacobian` computes the band with ``c = ml + mu + 1`` Jacobian-vector
products instead of ``n``: columns ``j`` with the same colour ``j mod c`` never share a
row inside the band, so one product with the seed ``sum_{j = k mod c} e_j`` recovers all of
them at once (Curtis-Powell-Reid compression). The products are batched with ``jax.vmap``
over one ``jax.linearize``, and the compressed columns are scattered into band storage
with static index arrays, all inside the traced function.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from aragog._jax import jax, jnp
# Band storage itself is NumPy-only (the integrator back ends import it without loading
# JAX); re-exported here for the Jacobian's users.
from aragog.programs._band import BandConverter, band_indices, band_to_dense, dense_to_band

__all__ = [
    "banded_jacobian",
    "dense_jacobian",
    "band_to_dense",
    "dense_to_band",
    "band_indices",
    "BandConverter",
]


def banded_jacobian(f: Callable, ml: int, mu: int) -> Callable:
    """Band storage of the Jacobian of ``f`` with respect to its first argument.

    Args:
        f: pure JAX function ``f(y, *rest) -> (n,)`` with ``y`` of shape ``(n,)``.
        ml, mu: lower and upper bandwidths of ``df/dy`` (static Python ints). Entries
            outside the band are assumed to be zero; if they are not, they are folded into
            the band entries of the same colour (wrong results), so pass true widths.

    Returns:
        ``jac(y, *rest) -> (ml + mu + 1, n)`` with ``band[mu + i - j, j] = df_i/dy_j``.
        ``jac`` is traceable (use it inside ``jax.jit``); the colouring and the scatter
        indices are computed from the static shape of ``y`` at trace time.
    """
    ml = int(ml)
    mu = int(mu)
    if ml < 0 or mu < 0:
        raise ValueError(f"band widths must be >= 0, got ml={ml}, mu={mu}")

    def jac(y, *rest):
        y = jnp.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"banded_jacobian: y must be 1-D, got shape {y.shape}")
        n = y.shape[0]
        c = min(ml + mu + 1, n)  # number of colours (n < c: every column its own colour)
        # Seeds: seeds[k, j] = 1 where j mod c == k.
        seeds_np = (np.arange(n)[None, :] % c == np.arange(c)[:, None]).astype(np.float64)
        seeds = jnp.asarray(seeds_np, dtype=y.dtype)
        _, f_lin = jax.linearize(lambda yy: f(yy, *rest), y)
        compressed = jax.vmap(f_lin)(seeds)  # (c, n): compressed[k, i] = sum_{j=k mod c} J[i, j]
        rows, cols, valid = band_indices(n, ml, mu)
        # band[d, j] = J[rows, j] = compressed[j mod c, rows]
        gathered = compressed[cols % c, rows]
        return jnp.where(jnp.asarray(valid), gathered, jnp.zeros((), dtype=gathered.dtype))

    jac.__doc__ = f"Band storage (ml={ml}, mu={mu}) of the Jacobian of {getattr(f, '__name__', f)!r}."
    return jac


def dense_jacobian(f: Callable, mode: str = "fwd") -> Callable:
    """Dense Jacobian ``(n, n)`` of ``f(y, *rest)`` with respect to ``y``.

    ``mode="fwd"`` uses ``jax.jacfwd`` (n JVPs; right for square Jacobians),
    ``mode="rev"`` uses ``jax.jacrev``.
    """
    if mode == "fwd":
        return jax.jacfwd(f, argnums=0)
    if mode == "rev":
        return jax.jacrev(f, argnums=0)
    raise ValueError(f"dense_jacobian: mode must be 'fwd' or 'rev', got {mode!r}")
