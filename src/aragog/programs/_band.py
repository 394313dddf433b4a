"""Band storage of banded matrices, NumPy only (no JAX): the layout of the Jacobian
programs' output and of the integrator back ends' band matrices.

A matrix ``J`` (n x n) with lower bandwidth ``ml`` and upper bandwidth ``mu`` is stored as
``band`` of shape ``(ml + mu + 1, n)`` with

    band[mu + i - j, j] = J[i, j]        for  -mu <= i - j <= ml,

entries of ``band`` that fall outside the matrix (``i < 0`` or ``i >= n``) are zero
(LAPACK/SUNDIALS layout). It lives with the compiled programs, below the solver, because
both sides use it: the Jacobian programs and the corrector index it
(:mod:`aragog.programs._jacobian`, which computes Jacobians with JAX, re-exports these
helpers), and the back ends (:mod:`aragog.solver.backends`, which re-exports them too)
convert between it and dense storage here, so that ``import aragog.solver.backends``
does not load JAX.
"""

from __future__ import annotations

import numpy as np

__all__ = ["band_indices", "band_to_dense", "dense_to_band", "BandConverter"]


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
