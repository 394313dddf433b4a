"""The table set packed for few XLA kernels: every quantity of both phases in one array.

:class:`PackedEOS` holds the same data as an :class:`~aragog.eos._tables.EOSTables`, laid
out so that the two-phase evaluator reads all it needs with two gathers (XLA:CPU runs each
gather as a kernel of its own, and at a few hundred points a kernel's fixed cost is larger
than its arithmetic):

* ``values`` (R, 5) [SI]: the rows ``(T, rho, cp, dTdPs, alpha)`` of every grid point of
  the melt table (row ``j NP_melt + i`` is the point (P[i], S[j])) followed by those of the
  solid table (offset ``NS_melt NP_melt``). A phase without an ``alpha`` table has zeros
  in that column (the evaluator computes alpha = (dT/dP)_S rho c_p / T pointwise, as
  from an :class:`EOSTables`). One gather with slices of 2 rows reads the two P-neighbours
  of a grid point; a second start ``NP`` rows on reads the next S row.
* ``boundary_S`` (N_sol + N_liq,) [J kg-1 K-1]: solidus entropies then liquidus entropies.
* the axes ``melt_P, melt_S, solid_P, solid_S, solidus_P, liquidus_P`` and ``inv_step`` (6,)
  = (n - 1)/(axis[-1] - axis[0]) of each, in that order (derived; set by :func:`pack_tables`).

Static (metadata, part of the tree structure): the grid shapes, which phases have alpha,
and how each axis is searched (``modes``): ``"exact"`` (uniform to 1e-12 of a cell: the
index and the fraction are plain arithmetic, no memory access — the SPIDER and bundled
tables), ``"near"`` (within a quarter cell of uniform: an arithmetic estimate corrected by
one comparison, :func:`~aragog.eos._lookup.cell_bounds`) or ``"search"`` (binary search).

Build with :func:`packed_tables` (cached on the set; NumPy leaves;
``to_jax()`` once before repeated jitted calls). ``melt``, ``solid``, ``solidus`` and
``liquidus`` give the familiar per-phase views (slices of the packed arrays, NumPy or JAX),
so code that reads ``eos.melt.S`` works with either form.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any

import numpy as np

from aragog._jax import jax, jnp
from aragog.eos._tables import PhaseBoundary, PhaseTable, common_span, is_uniform, span_of

__all__ = ["PackedEOS", "pack_tables", "packed_tables", "axis_mode", "FIELDS", "EXACT_UNIFORM_TOL", "NODE_SNAP"]

#: column order of ``PackedEOS.values``
FIELDS = ("T", "rho", "cp", "dTdPs", "alpha")
#: largest deviation from the uniform grid, in cells, for the pure-arithmetic ("exact") index:
#: the fraction t is then off by at most this much, so an interpolated value moves by at most
#: 1e-12 of its change across one cell.
EXACT_UNIFORM_TOL = 1.0e-12
#: a query within this many cells of a node of an "exact" axis is put on the node (cell k,
#: t = 0, as a search finds it): the axis's own deviation from uniform plus the rounding
#: of (x - x0)/h
NODE_SNAP = 2.0e-12
_AXES = ("melt_P", "melt_S", "solid_P", "solid_S", "solidus_P", "liquidus_P")


def axis_mode(axis) -> str:
    """How an axis (concrete, strictly increasing) is searched: "exact", "near" or "search"."""
    a = np.asarray(axis, dtype=np.float64)
    n = a.size
    h = (a[-1] - a[0]) / (n - 1)
    if n >= 2 and h > 0 and np.max(np.abs(a - (a[0] + h * np.arange(n)))) <= EXACT_UNIFORM_TOL * h:
        return "exact"
    return "near" if is_uniform(a) else "search"


@partial(
    jax.tree_util.register_dataclass,
    data_fields=["values", "boundary_S", *_AXES, "inv_step"],
    meta_fields=["melt_shape", "solid_shape", "has_alpha", "modes"],
)
@dataclasses.dataclass(frozen=True, eq=False)
class PackedEOS:
    """A two-phase table set packed for the evaluator (pytree). See the module docstring.

    ``melt_shape``/``solid_shape``: (NS, NP); ``has_alpha``: (melt, solid); ``modes``: the
    search mode of each axis, in the order of ``inv_step``.
    """

    values: Any
    boundary_S: Any
    melt_P: Any
    melt_S: Any
    solid_P: Any
    solid_S: Any
    solidus_P: Any
    liquidus_P: Any
    inv_step: Any
    melt_shape: tuple
    solid_shape: tuple
    has_alpha: tuple
    modes: tuple

    # ------------------------------------------------------------------ views
    @property
    def solid_offset(self) -> int:
        """Row of ``values`` where the solid table starts."""
        return self.melt_shape[0] * self.melt_shape[1]

    def entropy_range(self) -> tuple[float, float]:
        """(lowest, highest) tabulated entropy of the two phase tables [J/kg/K]
        (:meth:`aragog.eos.EOSTables.entropy_range`)."""
        return span_of(self.melt_S, self.solid_S)

    def pressure_range(self) -> tuple[float, float]:
        """(lowest, highest) pressure [Pa] that every table of the set covers
        (:meth:`aragog.eos.EOSTables.pressure_range`)."""
        return common_span(self.melt_P, self.solid_P, self.solidus_P, self.liquidus_P)

    @property
    def n_solidus(self) -> int:
        return int(np.shape(self.solidus_P)[0])

    def _phase(self, k: int) -> PhaseTable:
        shape = (self.melt_shape, self.solid_shape)[k]
        start = (0, self.solid_offset)[k]
        rows = self.values[start:start + shape[0] * shape[1]]
        col = {f: rows[:, c].reshape(shape) for c, f in enumerate(FIELDS)}
        if not self.has_alpha[k]:
            col["alpha"] = None
        P, S = (self.melt_P, self.melt_S) if k == 0 else (self.solid_P, self.solid_S)
        mP, mS = self.modes[2 * k], self.modes[2 * k + 1]
        return PhaseTable(P=P, S=S, P_uniform=mP != "search", S_uniform=mS != "search", **col)

    @property
    def melt(self) -> PhaseTable:
        """The melt table (views into ``values``)."""
        return self._phase(0)

    @property
    def solid(self) -> PhaseTable:
        """The solid table (views into ``values``)."""
        return self._phase(1)

    @property
    def solidus(self) -> PhaseBoundary:
        return PhaseBoundary(P=self.solidus_P, S=self.boundary_S[:self.n_solidus],
                             P_uniform=self.modes[4] != "search")

    @property
    def liquidus(self) -> PhaseBoundary:
        return PhaseBoundary(P=self.liquidus_P, S=self.boundary_S[self.n_solidus:],
                             P_uniform=self.modes[5] != "search")

    # ------------------------------------------------------------------ identity, devices
    def identity(self):
        """The source table set's :class:`~aragog.eos._tables.TableIdentity` plus the axis modes
        (static key of compiled functions; concrete packs from :func:`pack_tables` only)."""
        ident = self.__dict__.get("_identity")
        if ident is None:
            raise ValueError("PackedEOS.identity(): only a pack made by pack_tables() on concrete tables has one")
        return ident

    def _map(self, fn) -> "PackedEOS":
        new = dataclasses.replace(self, **{k: fn(getattr(self, k)) for k in ("values", "boundary_S", *_AXES, "inv_step")})
        if "_identity" in self.__dict__:
            object.__setattr__(new, "_identity", self.__dict__["_identity"])
        return new

    def to_jax(self) -> "PackedEOS":
        """Copy with float64 ``jax.Array`` leaves on the default device (keeps the identity)."""
        return self._map(lambda a: jax.device_put(jnp.asarray(a, dtype=jnp.float64)))

    def to_numpy(self) -> "PackedEOS":
        """Copy with NumPy float64 leaves (keeps the identity)."""
        return self._map(lambda a: np.asarray(a, dtype=np.float64))


def _concrete(x) -> bool:
    return not isinstance(x, jax.core.Tracer)


def packed_tables(tables) -> PackedEOS:
    """The concrete set ``tables`` (an :class:`~aragog.eos._tables.EOSTables`) packed for the
    evaluator, cached on the (frozen) set: :func:`pack_tables` once per set. (A function
    here, not a method of the set: _tables.py sits below this module.)"""
    cached = tables.__dict__.get("_packed")
    if cached is None:
        cached = pack_tables(tables)
        object.__setattr__(tables, "_packed", cached)
    return cached


def pack_tables(tables) -> PackedEOS:
    """Pack an :class:`~aragog.eos._tables.EOSTables` (NumPy or JAX leaves, or traced inside
    ``jax.jit``: then the axis modes come from the tables' ``P_uniform``/``S_uniform`` flags,
    "near" or "search", since exactness cannot be checked on traced values)."""
    xp = np if all(isinstance(a, np.ndarray) for a in (tables.melt.T, tables.solid.T)) else jnp
    melt, solid, sol, liq = tables.melt, tables.solid, tables.solidus, tables.liquidus

    def columns(ph):
        cols = [ph.T, ph.rho, ph.cp, ph.dTdPs, ph.alpha if ph.alpha is not None else xp.zeros_like(ph.T)]
        return xp.stack([xp.reshape(c, (-1,)) for c in cols], axis=1)

    axes = (melt.P, melt.S, solid.P, solid.S, sol.P, liq.P)
    flags = (melt.P_uniform, melt.S_uniform, solid.P_uniform, solid.S_uniform, sol.P_uniform, liq.P_uniform)
    modes = tuple(axis_mode(a) if _concrete(a) else ("near" if f else "search") for a, f in zip(axes, flags))
    inv_step = xp.stack([xp.asarray(a.shape[0] - 1, dtype=np.float64) / (a[-1] - a[0]) for a in axes])
    packed = PackedEOS(
        values=xp.concatenate([columns(melt), columns(solid)], axis=0),
        boundary_S=xp.concatenate([sol.S, liq.S]),
        melt_P=melt.P, melt_S=melt.S, solid_P=solid.P, solid_S=solid.S, solidus_P=sol.P, liquidus_P=liq.P,
        inv_step=inv_step,
        melt_shape=tuple(melt.shape), solid_shape=tuple(solid.shape),
        has_alpha=(melt.alpha is not None, solid.alpha is not None), modes=modes,
    )
    if all(_concrete(a) for a in axes) and hasattr(tables, "identity"):
        try:
            ident = tables.identity()
        except Exception:  # noqa: BLE001 - only concrete EOSTables have one
            ident = None
        if ident is not None:
            object.__setattr__(packed, "_identity", ident._replace(uniform=ident.uniform + modes))
    return packed
