"""Jacobians of JAX functions: banded (colored forward mode) and dense, plus band storage.

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

__all__ = [
    "banded_jacobian",
    "dense_jacobian",
    "band_to_dense",
    "dense_to_band",
    "band_indices",
    "BandConverter",
]


def band_indices(n: int, ml: int, mu: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Static index arrays of the band storage.

    Returns ``(rows, cols, valid)``, each of shape ``(ml + mu + 1, n)``: for band position
    ``(d, j)`` the matrix entry is ``J[rows[d, j], cols[d, j]]`` (with ``rows = j + d - mu``
    clipped into ``[0, n)``), and ``valid[d, j]`` says whether that row lies inside the
    matrix.
    """
    _check_widths(n, ml, mu)
    d = np.arange(ml + mu + 1)[:, None]
    j = np.arange(n)[None, :]
    rows = j + d - mu
    valid = (rows >= 0) & (rows < n)
    rows = np.clip(rows, 0, n - 1)
    cols = np.broadcast_to(j, rows.shape).copy()
    return rows, cols, valid


def _check_widths(n: int, ml: int, mu: int) -> None:
    if int(n) < 1:
        raise ValueError(f"state size n must be >= 1, got {n}")
    if int(ml) < 0 or int(mu) < 0:
        raise ValueError(f"band widths must be >= 0, got ml={ml}, mu={mu}")


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


def band_to_dense(band: np.ndarray, ml: int, mu: int) -> np.ndarray:
    """Dense ``(n, n)`` matrix from band storage ``(ml + mu + 1, n)`` (NumPy)."""
    band = np.asarray(band)
    if band.ndim != 2 or band.shape[0] != ml + mu + 1:
        raise ValueError(
            f"band_to_dense: expected shape ({ml + mu + 1}, n) for ml={ml}, mu={mu}, got {band.shape}"
        )
    n = band.shape[1]
    rows, cols, valid = band_indices(n, ml, mu)
    dense = np.zeros((n, n), dtype=band.dtype)
    dense[rows[valid], cols[valid]] = band[valid]
    return dense


def dense_to_band(J: np.ndarray, ml: int, mu: int) -> np.ndarray:
    """Band storage ``(ml + mu + 1, n)`` of a dense ``(n, n)`` matrix (NumPy).

    Entries of ``J`` outside the band are dropped; positions outside the matrix are zero.
    """
    J = np.asarray(J)
    if J.ndim != 2 or J.shape[0] != J.shape[1]:
        raise ValueError(f"dense_to_band: expected a square matrix, got shape {J.shape}")
    n = J.shape[0]
    rows, cols, valid = band_indices(n, ml, mu)
    band = np.zeros((ml + mu + 1, n), dtype=J.dtype)
    band[valid] = J[rows[valid], cols[valid]]
    return band


class BandConverter:
    """Preallocated band <-> dense conversion for integrator callbacks (no allocation per call).

    ``to_dense_into(band, dense)`` overwrites the band entries of ``dense`` (entries outside the
    band must already be zero: allocate ``dense`` once with :meth:`new_dense`);
    ``to_band_into(dense, band)`` fills ``band`` from ``dense`` (zero outside the matrix).
    Both arrays must be C-contiguous.
    """

    __slots__ = ("n", "ml", "mu", "_flat_band", "_flat_dense", "_flat_outside")

    def __init__(self, n: int, ml: int, mu: int):
        self.n, self.ml, self.mu = int(n), int(ml), int(mu)
        rows, cols, valid = band_indices(self.n, self.ml, self.mu)
        self._flat_band = np.flatnonzero(valid.ravel())
        self._flat_dense = (rows * self.n + cols).ravel()[self._flat_band]
        self._flat_outside = np.flatnonzero(~valid.ravel())

    def new_dense(self) -> np.ndarray:
        return np.zeros((self.n, self.n))

    def new_band(self) -> np.ndarray:
        return np.zeros((self.ml + self.mu + 1, self.n))

    def to_dense_into(self, band: np.ndarray, dense: np.ndarray) -> None:
        dense.reshape(-1)[self._flat_dense] = band.reshape(-1)[self._flat_band]

    def to_band_into(self, dense: np.ndarray, band: np.ndarray) -> None:
        flat = band.reshape(-1)
        flat[self._flat_band] = dense.reshape(-1)[self._flat_dense]
        flat[self._flat_outside] = 0.0
