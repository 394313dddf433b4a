"""The EOS table set as a JAX pytree, its identity, and loading/writing a SPIDER directory.

Layout (all SI, float64):

* :class:`PhaseTable` — one phase (melt or solid) on a rectangular (P, S) grid:
  ``P`` (NP,) [Pa] and ``S`` (NS,) [J kg-1 K-1], both strictly increasing, and the
  quantities ``T`` [K], ``rho`` [kg m-3], ``cp`` [J kg-1 K-1], ``dTdPs`` = (dT/dP)_S
  [K Pa-1] and optionally ``alpha`` [K-1] (``None`` when the set has no ``thermal_exp``
  file for that phase; the evaluator then uses alpha = (dT/dP)_S rho c_p / T), each of
  shape **(NS, NP)**: ``Q[j, i]`` is the value at (P[i], S[j]) — the row-major reshape of a
  SPIDER file, whose rows run P fastest and S slowest.
* :class:`PhaseBoundary` — solidus or liquidus: ``P`` (N,) [Pa] increasing, ``S`` (N,).
* :class:`EOSTables` — ``melt``, ``solid`` (PhaseTable), ``solidus``, ``liquidus``
  (PhaseBoundary). Melt and solid may have different grids (the RTmelt set has different
  S ranges), and the boundaries their own P axis.

The arrays are pytree *leaves*: pass an ``EOSTables`` as an ordinary argument of a jitted
function and the tables are traced inputs, not constants baked into the program. Static
(meta) data are only the per-axis flags ``P_uniform``/``S_uniform`` (they select the
index arithmetic in :mod:`aragog.eos._lookup`) and whether ``alpha`` exists. The column
scale factors read from the files are kept on the objects (for a bit-exact re-write) but
are not part of the pytree: they never cause a retrace, and a table set rebuilt by
``jax.tree`` operations simply writes with scale 1.0 (still bit-exact in SI).

Loaders return NumPy leaves (read-only). Call :meth:`EOSTables.to_jax` once before handing
the set to jitted code repeatedly: NumPy leaves are copied to the device at every call.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from aragog._jax import jax, jnp
from aragog.errors import EOSError
from aragog.eos import _spider_format as sf

__all__ = [
    "PhaseTable",
    "PhaseBoundary",
    "EOSTables",
    "TableIdentity",
    "describe_table_set",
    "load_table_set",
    "write_table_set",
    "QUANTITY_FILES",
    "SOLIDUS_FILE",
    "LIQUIDUS_FILE",
    "PHASES",
]

log = logging.getLogger("aragog.eos")

#: PhaseTable field -> SPIDER file stem (file name = f"{stem}_{phase}.dat").
QUANTITY_FILES: dict[str, str] = {
    "T": "temperature",
    "rho": "density",
    "cp": "heat_capacity",
    "alpha": "thermal_exp",
    "dTdPs": "adiabat_temp_grad",
}
_LABELS = {
    "T": "Temperature",
    "rho": "Density",
    "cp": "Heat capacity",
    "alpha": "Thermal expansivity",
    "dTdPs": "Adiabatic temperature gradient",
}
OPTIONAL_QUANTITIES = ("alpha",)
PHASES = ("melt", "solid")
SOLIDUS_FILE = "solidus_P-S.dat"
LIQUIDUS_FILE = "liquidus_P-S.dat"

# An axis is "uniform" for the lookup when every node lies within a quarter cell of the
# uniform grid with the same end points: then floor((x - x0)/h) is the true cell or a
# neighbour, and one comparison step corrects it exactly (lookup.cell_index).
_UNIFORM_TOL = 0.25


def is_uniform(axis) -> bool:
    """True when ``axis`` is uniform to within a quarter cell (see :mod:`aragog.eos._lookup`)."""
    a = np.asarray(axis, dtype=np.float64)
    n = a.size
    if n < 2:
        return False
    h = (a[-1] - a[0]) / (n - 1)
    if not h > 0:
        return False
    dev = np.max(np.abs(a - (a[0] + h * np.arange(n))))
    return bool(dev <= _UNIFORM_TOL * h)


def _with_scales(table, scales):
    """``table`` with its ``scales`` set: the column factors a table was read with are no
    pytree field but a field outside ``__init__`` set here (so the registration needs no
    ``drop_fields``, which JAX 0.9 mishandles: it drops the characters of each name); a
    tree_map'ed copy has None."""
    object.__setattr__(table, "scales", scales)
    return table


def _frozen(arr) -> np.ndarray:
    out = np.array(arr, dtype=np.float64, copy=True)
    out.flags.writeable = False
    return out


@partial(
    jax.tree_util.register_dataclass,
    data_fields=["P", "S", "T", "rho", "cp", "dTdPs", "alpha"],
    meta_fields=["P_uniform", "S_uniform"],
)
@dataclasses.dataclass(frozen=True, eq=False)
class PhaseTable:
    """One phase's property tables on a (P, S) grid. Arrays (NS, NP); see module docstring.

    Build with :meth:`from_arrays` (validates, sets the uniform-axis flags).
    ``scales`` maps a file stem to the (P, S, Q) column scale factors the file was read
    with (not a pytree field).
    """

    P: Any
    S: Any
    T: Any
    rho: Any
    cp: Any
    dTdPs: Any
    alpha: Any = None
    P_uniform: bool = False
    S_uniform: bool = False
    scales: tuple | None = dataclasses.field(default=None, init=False)  # not a leaf: _with_scales

    @classmethod
    def from_arrays(cls, P, S, T, rho, cp, dTdPs, alpha=None, scales=None, name="phase") -> "PhaseTable":
        """Validate and freeze NumPy copies; raise :class:`EOSError` on bad shapes/values."""
        P, S = _frozen(P), _frozen(S)
        if P.ndim != 1 or S.ndim != 1 or P.size < 2 or S.size < 2:
            raise EOSError(f"{name}: P and S axes must be 1-D with >= 2 points, got {P.shape}, {S.shape}")
        for ax_name, ax in (("P", P), ("S", S)):
            if not (np.isfinite(ax).all() and (np.diff(ax) > 0).all()):
                raise EOSError(f"{name}: {ax_name} axis must be finite and strictly increasing")
        fields = {}
        for key, val in (("T", T), ("rho", rho), ("cp", cp), ("dTdPs", dTdPs), ("alpha", alpha)):
            if val is None:
                if key != "alpha":
                    raise EOSError(f"{name}: table '{key}' is required")
                fields[key] = None
                continue
            arr = _frozen(val)
            if arr.shape != (S.size, P.size):
                raise EOSError(f"{name}: table '{key}' has shape {arr.shape}, "
                               f"expected (NS, NP) = ({S.size}, {P.size})")
            if not np.isfinite(arr).all():
                raise EOSError(f"{name}: table '{key}' has non-finite values")
            fields[key] = arr
        return _with_scales(cls(P=P, S=S, P_uniform=is_uniform(P), S_uniform=is_uniform(S), **fields), scales)

    @property
    def shape(self) -> tuple[int, int]:
        """(NS, NP)."""
        return (int(np.shape(self.S)[0]), int(np.shape(self.P)[0]))

    @property
    def has_alpha(self) -> bool:
        return self.alpha is not None

    def scale_for(self, field: str) -> tuple[float, float, float]:
        """Column scale factors to write ``field`` with (as read; 1.0 when unknown)."""
        return dict(self.scales or ()).get(QUANTITY_FILES[field], (1.0, 1.0, 1.0))

    def _map(self, fn) -> "PhaseTable":
        new = {k: (None if getattr(self, k) is None else fn(getattr(self, k)))
               for k in ("P", "S", "T", "rho", "cp", "dTdPs", "alpha")}
        return _with_scales(dataclasses.replace(self, **new), self.scales)


@partial(
    jax.tree_util.register_dataclass,
    data_fields=["P", "S"],
    meta_fields=["P_uniform"],
)
@dataclasses.dataclass(frozen=True, eq=False)
class PhaseBoundary:
    """Solidus or liquidus S(P): ``P`` (N,) [Pa] strictly increasing, ``S`` (N,) [J kg-1 K-1]."""

    P: Any
    S: Any
    P_uniform: bool = False
    scales: tuple | None = dataclasses.field(default=None, init=False)  # not a leaf: _with_scales

    @classmethod
    def from_arrays(cls, P, S, scales=None, name="boundary") -> "PhaseBoundary":
        P, S = _frozen(P), _frozen(S)
        if P.ndim != 1 or P.shape != S.shape or P.size < 2:
            raise EOSError(f"{name}: P and S must be 1-D of equal length >= 2, got {P.shape}, {S.shape}")
        if not (np.isfinite(P).all() and np.isfinite(S).all() and (np.diff(P) > 0).all()):
            raise EOSError(f"{name}: values must be finite with P strictly increasing")
        return _with_scales(cls(P=P, S=S, P_uniform=is_uniform(P)), scales)

    @property
    def size(self) -> int:
        return int(np.shape(self.P)[0])

    def _map(self, fn) -> "PhaseBoundary":
        return _with_scales(dataclasses.replace(self, P=fn(self.P), S=fn(self.S)), self.scales)


class TableIdentity(NamedTuple):
    """Hashable static key of a table set: what a compiled function may depend on.

    ``shapes``: ((NS, NP) melt, (NS, NP) solid, N solidus, N liquidus); ``has_alpha``:
    (melt, solid); ``uniform``: the static axis flags; ``digest``: sha256 (hex) of every
    array (shape, then float64 little-endian bytes, in a fixed order).
    """

    shapes: tuple
    has_alpha: tuple
    uniform: tuple
    digest: str

    def short(self) -> str:
        return f"{self.shapes[0]}/{self.shapes[1]} {self.digest[:12]}"


def span_of(*axes) -> tuple[float, float]:
    """(lowest, highest) value over the given table axes (host floats)."""
    arrays = [np.asarray(a, dtype=np.float64) for a in axes]
    return float(min(a.min() for a in arrays)), float(max(a.max() for a in arrays))


def common_span(*axes) -> tuple[float, float]:
    """(lowest, highest) value that every one of the given table axes covers (host floats)."""
    arrays = [np.asarray(a, dtype=np.float64) for a in axes]
    return float(max(a.min() for a in arrays)), float(min(a.max() for a in arrays))


@partial(jax.tree_util.register_dataclass, data_fields=["melt", "solid", "solidus", "liquidus"], meta_fields=[])
@dataclasses.dataclass(frozen=True, eq=False)
class EOSTables:
    """A complete two-phase table set (pytree). See the module docstring for the layout."""

    melt: PhaseTable
    solid: PhaseTable
    solidus: PhaseBoundary
    liquidus: PhaseBoundary

    def _arrays(self):
        for pname in PHASES:
            ph = getattr(self, pname)
            for k in ("P", "S", "T", "rho", "cp", "dTdPs", "alpha"):
                yield f"{pname}.{k}", getattr(ph, k)
        for bname in ("solidus", "liquidus"):
            b = getattr(self, bname)
            yield f"{bname}.P", b.P
            yield f"{bname}.S", b.S

    def entropy_range(self) -> tuple[float, float]:
        """(lowest, highest) tabulated entropy of the two phase tables [J/kg/K]: beyond it the
        evaluators hold every property at the table's edge (docs/physics.md, "Equation of
        state"), so a state there is outside the model."""
        return span_of(*(getattr(self, p).S for p in PHASES))

    def pressure_range(self) -> tuple[float, float]:
        """(lowest, highest) pressure [Pa] where every table of the set is read inside its
        axis: the two phase tables and the two melting curves
        (:func:`common_span`). Beyond it the evaluators hold the properties at the table's
        edge."""
        return common_span(*(getattr(self, p).P for p in PHASES), self.solidus.P, self.liquidus.P)

    def identity(self) -> TableIdentity:
        """Static, hashable key: shapes, optional tables present, axis flags, content hash.

        Must be called on concrete arrays (outside jit). Cached on the object.
        """
        cached = self.__dict__.get("_identity")
        if cached is not None:
            return cached
        h = hashlib.sha256()
        for name, arr in self._arrays():
            h.update(name.encode())
            if arr is None:
                h.update(b"<none>")
                continue
            a = np.ascontiguousarray(np.asarray(arr), dtype="<f8")
            h.update(repr(a.shape).encode())
            h.update(a.tobytes())
        ident = TableIdentity(
            shapes=(self.melt.shape, self.solid.shape, self.solidus.size, self.liquidus.size),
            has_alpha=(self.melt.has_alpha, self.solid.has_alpha),
            uniform=(self.melt.P_uniform, self.melt.S_uniform, self.solid.P_uniform,
                     self.solid.S_uniform, self.solidus.P_uniform, self.liquidus.P_uniform),
            digest=h.hexdigest(),
        )
        object.__setattr__(self, "_identity", ident)
        return ident

    def _map(self, fn) -> "EOSTables":
        new = EOSTables(self.melt._map(fn), self.solid._map(fn), self.solidus._map(fn), self.liquidus._map(fn))
        if "_identity" in self.__dict__:  # same content, same identity
            object.__setattr__(new, "_identity", self.__dict__["_identity"])
        return new

    def to_jax(self) -> "EOSTables":
        """Copy of the set with ``jax.Array`` leaves (do this once; keeps scales and identity)."""
        return self._map(lambda a: jax.device_put(jnp.asarray(a, dtype=jnp.float64)))

    def to_numpy(self) -> "EOSTables":
        """Copy of the set with read-only NumPy leaves (keeps scales and identity)."""
        return self._map(_frozen)

    def summary(self) -> str:
        """One line: grid sizes and the short content hash."""
        ident = self.identity()
        return (f"melt {ident.shapes[0][1]}x{ident.shapes[0][0]}, solid {ident.shapes[1][1]}x"
                f"{ident.shapes[1][0]} (NPxNS), solidus {ident.shapes[2]}, liquidus {ident.shapes[3]} "
                f"points, sha256 {ident.digest[:12]}")


def describe_table_set(tables: EOSTables) -> str:
    """One-line description: grid sizes and the short content hash."""
    return tables.summary()


# ----------------------------------------------------------------------------- load / write


def _resolve(directory: Path, name: str | os.PathLike) -> Path:
    p = Path(name)
    return p if p.is_absolute() else directory / p


def load_table_set(
    directory: str | os.PathLike,
    solidus: str | os.PathLike = SOLIDUS_FILE,
    liquidus: str | os.PathLike = LIQUIDUS_FILE,
) -> EOSTables:
    """Read a SPIDER table directory into an :class:`EOSTables` (NumPy leaves).

    Required files: ``{temperature,density,heat_capacity,adiabat_temp_grad}_{melt,solid}.dat``
    and the solidus/liquidus files (names relative to ``directory`` unless absolute;
    default ``solidus_P-S.dat``, ``liquidus_P-S.dat``); optional:
    ``thermal_exp_{melt,solid}.dat``. Within a phase every file must share the grid of its
    temperature file (to 1e-12 of the axis span; the temperature file's axis is kept).
    Raises :class:`EOSError` naming the directory or file at fault.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise EOSError(f"EOS table directory not found: {directory}")
    bnd_paths = {"solidus": _resolve(directory, solidus), "liquidus": _resolve(directory, liquidus)}
    missing = [
        f"{stem}_{phase}.dat"
        for phase in PHASES
        for field, stem in QUANTITY_FILES.items()
        if field not in OPTIONAL_QUANTITIES and not (directory / f"{stem}_{phase}.dat").is_file()
    ]
    missing += [str(p.name if p.parent == directory else p) for p in bnd_paths.values() if not p.is_file()]
    if missing:
        raise EOSError(f"EOS table set {directory} lacks required file(s): {', '.join(missing)}")

    phases = {phase: _load_phase(directory, phase) for phase in PHASES}
    bounds = {}
    for bname, path in bnd_paths.items():
        P, S, sc = sf.read_table_1d(path)
        bounds[bname] = PhaseBoundary.from_arrays(P, S, scales=tuple(float(s) for s in sc), name=str(path))
    return EOSTables(phases["melt"], phases["solid"], bounds["solidus"], bounds["liquidus"])


def _load_phase(directory: Path, phase: str) -> PhaseTable:
    """Read one phase's files; all must share the grid of its temperature file."""
    arrays: dict[str, np.ndarray | None] = {}
    scales = []
    P0 = S0 = None
    ref_name = None
    for field, stem in QUANTITY_FILES.items():
        path = directory / f"{stem}_{phase}.dat"
        if field in OPTIONAL_QUANTITIES and not path.is_file():
            arrays[field] = None
            continue
        P, S, Q, sc = sf.read_table_2d(path)
        if P0 is None:
            P0, S0, ref_name = P, S, path.name
        else:
            for ax_name, ax, ax0 in (("pressure", P, P0), ("entropy", S, S0)):
                if ax.shape != ax0.shape:
                    raise EOSError(f"{path}: {ax_name} axis has {ax.size} points, {ref_name} has {ax0.size}")
                tol = 1e-12 * (ax0[-1] - ax0[0])
                if not np.array_equal(ax, ax0) and np.max(np.abs(ax - ax0)) > tol:
                    k = int(np.argmax(np.abs(ax - ax0)))
                    raise EOSError(f"{path}: {ax_name} axis value {float(ax[k])!r} differs from "
                                   f"{float(ax0[k])!r} in {ref_name}")
        arrays[field] = Q
        scales.append((stem, tuple(float(s) for s in sc)))
    return PhaseTable.from_arrays(P0, S0, scales=tuple(scales), name=str(directory / f"*_{phase}.dat"),
                                  **arrays)


def write_table_set(tables: EOSTables, directory: str | os.PathLike) -> Path:
    """Write ``tables`` as a SPIDER directory (created if missing); returns its path.

    Files are written atomically with the scale factors the tables were read with (1.0 for
    generated sets), so reading the directory back is bit-exact. A ``thermal_exp`` file
    left over for a phase that has no alpha is removed, so the directory holds exactly this
    set.
    """
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EOSError(f"cannot create EOS table directory {directory}: {exc.strerror}") from None
    try:
        _write_files(tables, directory)
    except OSError as exc:
        raise EOSError(f"cannot write EOS tables to {directory}: {exc.strerror or exc}") from None
    return directory


def _write_files(np_tables: EOSTables, directory: Path) -> None:
    # np.asarray below works for NumPy and (concrete) JAX leaves.
    for phase in PHASES:
        ph: PhaseTable = getattr(np_tables, phase)
        for field, stem in QUANTITY_FILES.items():
            path = directory / f"{stem}_{phase}.dat"
            val = getattr(ph, field)
            if val is None:
                if path.exists():
                    log.info("removing %s: the table set written has no %s for the %s", path, field, phase)
                    path.unlink()
                continue
            sf.write_table_2d(path, np.asarray(ph.P), np.asarray(ph.S), np.asarray(val),
                              scales=ph.scale_for(field), quantity=_LABELS[field])
    for bname, fname in (("solidus", SOLIDUS_FILE), ("liquidus", LIQUIDUS_FILE)):
        b: PhaseBoundary = getattr(np_tables, bname)
        sf.write_table_1d(directory / fname, np.asarray(b.P), np.asarray(b.S), scales=b.scales or (1.0, 1.0))
