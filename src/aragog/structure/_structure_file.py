"""Mantle structure read from a file (radius, pressure, density, gravity).

This is how a structure solver hands a self-consistent mantle to aragog (docs/physics.md,
"Static structure"). File format: whitespace-separated text, ``#`` starts a comment,
at least four columns per row, the first four being

    r [m]   P [Pa]   ρ [kg/m³]   g [m/s²]

in either radial order, r strictly monotone. Further columns (Zalmoxis writes a fifth)
are ignored, as earlier aragog versions did; every row must have the same number of
columns. P, ρ and g are interpolated to the mesh
nodes with monotone piecewise-cubic Hermite interpolation (PCHIP, Fritsch & Carlson
1980, SIAM J. Numer. Anal. 17, 238; scipy.interpolate.PchipInterpolator). The enclosed
mass is the exact integral of 4π r² ρ̃(r), ρ̃ the PCHIP density: on each interval ρ̃ is a
cubic in t = r − r_k, so 4π (r_k + t)² ρ̃ is a quintic and its antiderivative is a
piecewise polynomial of degree 6 (scipy PPoly). Hence dM/dr = 4π r² ρ̃(r) holds exactly
on the nodes, consistent with the density the mesh reports.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from aragog.errors import StructureError

if TYPE_CHECKING:  # scipy.interpolate is imported where a structure file is used: it
    # costs ~0.8 s, which every aragog process (a CLI run, a grid worker) would pay
    from scipy.interpolate import PchipInterpolator, PPoly

__all__ = ["StructureProfile", "read_structure_file", "write_structure_file"]

logger = logging.getLogger("aragog.structure")

#: Relative tolerance (of the mesh's outer radius) allowed where the file's ends meet
#: the mesh's ends, so a file written with the mesh radii in %.15g still covers it.
COVERAGE_RTOL = 1e-9


def _on_line(end: np.ndarray, inner: np.ndarray, r: float) -> np.ndarray:
    """The row (r, P, ρ, g) at radius ``r`` on the straight line through the rows ``end``
    and ``inner`` (its neighbour)."""
    t = (r - end[0]) / (end[0] - inner[0])
    row = end + t * (end - inner)
    row[0] = r
    return row


def read_structure_file(path: str | os.PathLike) -> np.ndarray:
    """Read and validate a structure file; return its rows as (n, 4), r increasing.

    Only the first four columns are read (and must be numbers); columns after them are
    ignored.

    Raises:
        StructureError: missing/unreadable file, fewer than four columns or a column
            count that changes between rows, fewer than two rows, non-finite values, r
            not strictly monotone, non-positive density.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise StructureError(f"structure file {path!r} does not exist (mesh.eos_file)")
    rows: list[list[float]] = []
    n_columns: int | None = None
    try:
        with open(path, encoding="utf-8") as fh:
            for lineno, raw in enumerate(fh, start=1):
                line = raw.split("#", 1)[0].strip()
                if not line:
                    continue
                fields = line.split()
                if len(fields) < 4:
                    raise StructureError(
                        f"structure file {path!r} line {lineno}: expected at least 4 columns "
                        f"(r P rho g; further columns are ignored), found {len(fields)}"
                    )
                if n_columns is not None and len(fields) != n_columns:
                    raise StructureError(
                        f"structure file {path!r} line {lineno}: found {len(fields)} columns, "
                        f"the rows before have {n_columns}"
                    )
                n_columns = len(fields)
                try:
                    rows.append([float(x) for x in fields[:4]])
                except ValueError:
                    raise StructureError(
                        f"structure file {path!r} line {lineno}: not a number in "
                        f"{line!r}"
                    ) from None
    except OSError as exc:
        raise StructureError(f"structure file {path!r} cannot be read: {exc}") from None
    except UnicodeDecodeError:
        raise StructureError(f"structure file {path!r} is not a text file") from None
    if len(rows) < 2:
        raise StructureError(
            f"structure file {path!r} has {len(rows)} data row(s); at least 2 are needed"
        )
    data = np.asarray(rows, dtype=np.float64)
    bad = ~np.isfinite(data)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise StructureError(
            f"structure file {path!r}: non-finite {('r', 'P', 'rho', 'g')[j]} = {float(data[i, j])!r} "
            f"in data row {i + 1} ({int(bad.sum())} non-finite value(s))"
        )
    r = data[:, 0]
    dr = np.diff(r)
    if not (np.all(dr > 0) or np.all(dr < 0)):
        k = int(np.argmax(dr <= 0)) if dr[0] > 0 else int(np.argmax(dr >= 0))
        raise StructureError(
            f"structure file {path!r}: r must be strictly monotone, but data rows "
            f"{k + 1} and {k + 2} have r = {float(r[k])!r} and {float(r[k + 1])!r}"
        )
    if dr[0] < 0:
        data = data[::-1].copy()
    rho = data[:, 2]
    if np.any(rho <= 0):
        k = int(np.argmax(rho <= 0))
        raise StructureError(
            f"structure file {path!r}: density must be > 0, got rho = {float(rho[k])!r} "
            f"at r = {float(data[k, 0])!r}"
        )
    return data


def write_structure_file(path: str | os.PathLike, r, pressure, density, gravity) -> None:
    """Write a structure file (r, P, ρ, g; one row per radius) in the format above."""
    data = np.column_stack([np.asarray(x, dtype=np.float64) for x in (r, pressure, density, gravity)])
    header = "r [m]  P [Pa]  rho [kg/m^3]  g [m/s^2]"
    np.savetxt(os.fspath(path), data, fmt="%.17e", header=header, comments="# ")


def _mass_antiderivative(rho: PchipInterpolator) -> PPoly:
    """Antiderivative of 4π r² ρ̃(r) as a PPoly (zero at the first breakpoint)."""
    from scipy.interpolate import PPoly

    x = rho.x[:-1]  # left end of each interval
    c = rho.c  # (4, m): descending powers of t = r - x_k
    # (x_k + t)² = t² + 2 x_k t + x_k² -> descending coefficients (1, 2x_k, x_k²).
    q = np.stack([np.ones_like(x), 2.0 * x, x * x])
    out = np.zeros((6, c.shape[1]))
    for i in range(4):
        for j in range(3):
            out[i + j] += c[i] * q[j]
    return PPoly(4.0 * np.pi * out, rho.x, extrapolate=True).antiderivative()


@dataclass(frozen=True, eq=False)
class StructureProfile:
    """A tabulated mantle structure with PCHIP interpolants.

    Build it with :meth:`from_file` (or :meth:`from_arrays`). It offers the same methods
    as :class:`~aragog.structure.AdamsWilliamson`; the ``outer_radius`` arguments are
    accepted for that shared interface and unused (the table carries the structure).

    Attributes:
        radius, pressure_table, density_table, gravity_table: the table rows, r
            increasing [m, Pa, kg/m³, m/s²].
        source: file name (or a label) used in error messages.
    """

    radius: np.ndarray
    pressure_table: np.ndarray
    density_table: np.ndarray
    gravity_table: np.ndarray
    source: str = "<arrays>"
    _p: PchipInterpolator = field(init=False, repr=False)
    _rho: PchipInterpolator = field(init=False, repr=False)
    _g: PchipInterpolator = field(init=False, repr=False)
    _mass: PPoly = field(init=False, repr=False)

    def __post_init__(self) -> None:
        from scipy.interpolate import PchipInterpolator

        r = np.asarray(self.radius, dtype=np.float64)
        object.__setattr__(self, "_p", PchipInterpolator(r, self.pressure_table))
        object.__setattr__(self, "_rho", PchipInterpolator(r, self.density_table))
        object.__setattr__(self, "_g", PchipInterpolator(r, self.gravity_table))
        object.__setattr__(self, "_mass", _mass_antiderivative(self._rho))

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "StructureProfile":
        """Read ``path`` (see module docstring); raises :class:`StructureError`."""
        data = read_structure_file(path)
        return cls(data[:, 0], data[:, 1], data[:, 2], data[:, 3], source=os.fspath(path))

    @classmethod
    def from_arrays(cls, r, pressure, density, gravity, source: str = "<arrays>"):
        """Build from arrays (validated like a file; rows in either radial order)."""
        data = np.column_stack(
            [np.asarray(x, dtype=np.float64).ravel() for x in (r, pressure, density, gravity)]
        )
        if data.shape[0] < 2 or not np.all(np.isfinite(data)):
            raise StructureError(f"structure {source}: need >= 2 rows of finite values")
        dr = np.diff(data[:, 0])
        if not (np.all(dr > 0) or np.all(dr < 0)):
            raise StructureError(f"structure {source}: r must be strictly monotone")
        if dr[0] < 0:
            data = data[::-1].copy()
        if np.any(data[:, 2] <= 0):
            raise StructureError(
                f"structure {source}: density must be > 0, min is {float(data[:, 2].min())!r}"
            )
        return cls(data[:, 0], data[:, 1], data[:, 2], data[:, 3], source=source)

    # --- the structure interface shared with AdamsWilliamson --------------------------
    def covering(self, inner_radius: float, outer_radius: float) -> "StructureProfile":
        """This profile, or one extended to span [inner, outer] radius [m]; raises
        :class:`StructureError` when the table falls short by more than it may.

        The ends may miss by ``COVERAGE_RTOL`` × outer_radius (PCHIP extrapolates that
        sliver with the end cubic), or by up to half the spacing of the table's two end
        rows: a table of cell centres, such as the upstream aragog 0.2.8's test structure,
        stops half a cell inside the mesh. Such an end gets one more row on the straight
        line through the two end rows (r, P, ρ, g each), so PCHIP is linear across the
        extrapolated span (both its end slopes are that line's); the span is logged.
        Further short than that, the error names both ranges.
        """
        r = np.asarray(self.radius, dtype=np.float64)
        lo, hi = float(r[0]), float(r[-1])
        tol = COVERAGE_RTOL * abs(outer_radius)
        short_lo, short_hi = lo - (inner_radius + tol), (outer_radius - tol) - hi
        allow_lo, allow_hi = 0.5 * (r[1] - r[0]), 0.5 * (r[-1] - r[-2])
        if short_lo > allow_lo or short_hi > allow_hi:
            raise StructureError(
                f"structure file {self.source!r} covers r = [{lo!r}, {hi!r}] m but the "
                f"mesh needs [{inner_radius!r}, {outer_radius!r}] m "
                f"(mesh.inner_radius, mesh.outer_radius; up to half a row spacing at either "
                f"end is extrapolated)"
            )
        if short_lo <= 0.0 and short_hi <= 0.0:
            return self
        table = np.column_stack([r, self.pressure_table, self.density_table, self.gravity_table])
        if short_lo > 0.0:
            table = np.vstack([_on_line(table[0], table[1], float(inner_radius)), table])
            logger.info("structure file %r: extrapolated linearly from r = %.9g m down to %.9g m (%.4g m)",
                        self.source, lo, inner_radius, lo - inner_radius)
        if short_hi > 0.0:
            table = np.vstack([table, _on_line(table[-1], table[-2], float(outer_radius))])
            logger.info("structure file %r: extrapolated linearly from r = %.9g m up to %.9g m (%.4g m)",
                        self.source, hi, outer_radius, outer_radius - hi)
        if np.any(table[:, 2] <= 0.0):
            raise StructureError(f"structure file {self.source!r}: the extrapolated density is not > 0")
        return StructureProfile(table[:, 0], table[:, 1], table[:, 2], table[:, 3], source=self.source)

    def density(self, r, outer_radius: float | None = None):
        """ρ [kg/m³] at radii ``r`` [m] (PCHIP)."""
        return self._rho(np.asarray(r, dtype=np.float64))

    def pressure(self, r, outer_radius: float | None = None):
        """P [Pa] at radii ``r`` [m] (PCHIP)."""
        return self._p(np.asarray(r, dtype=np.float64))

    def gravity_at(self, r, outer_radius: float | None = None):
        """g [m/s²] at radii ``r`` [m] (PCHIP)."""
        return self._g(np.asarray(r, dtype=np.float64))

    def enclosed_mass(self, r, inner_radius: float, outer_radius: float | None = None):
        """Mass between ``inner_radius`` and ``r`` [kg]: ∫ 4π r² ρ̃ dr (exact for ρ̃)."""
        r = np.asarray(r, dtype=np.float64)
        return self._mass(r) - self._mass(float(inner_radius))
