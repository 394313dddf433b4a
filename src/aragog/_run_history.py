"""The record of one run that gets written: :class:`RunHistory`, and :func:`select_snapshots`.

A run produces two kinds of output:

* **time series** of scalar diagnostics (``T_magma``, ``F_surface``, ...) at *every* output
  time, shape ``(n_t,)``;
* **profiles** (temperature, melt fraction, fluxes, ...) at a few *snapshot* times,
  shape ``(n_s, N)`` on the staggered nodes (cell centres) or ``(n_s, N+1)`` on the basic
  nodes (cell boundaries).

Names, units and long names come from :data:`aragog.fields.FIELD_META`; a
variable that is not listed there can be carried with its own
:class:`~aragog.fields.FieldMeta` in :attr:`RunHistory.extra_meta`.
Times are in years (Julian year, 31 557 600 s), radii in metres.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from typing import Any, Union

import numpy as np

from aragog.fields import DIMS, FIELD_META, FieldMeta

__all__ = ["RunHistory", "select_snapshots", "RESERVED_ATTRS", "COORDINATE_NAMES"]

#: Global attributes owned by the netCDF writer; they may not appear in ``RunHistory.attrs``.
RESERVED_ATTRS = ("Conventions", "title", "source", "history")

#: Names of the coordinate variables in the file; no data variable may use them.
COORDINATE_NAMES = ("time", "snapshot_time", "radius_staggered", "radius_basic")

# netCDF allows more, but these names are safe for every netCDF/xarray/NCO tool.
_VAR_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
# Attribute names starting with "_" are reserved by netCDF (_FillValue, _NCProperties, ...).
_ATTR_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.\-]*$")

AttrValue = Union[str, int, float]


def _float_array(value: Any, what: str, ndim: int) -> np.ndarray:
    """``value`` as a new float64 array of ``ndim`` dimensions, or a ValueError naming it."""
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"RunHistory.{what}: not convertible to a float array ({exc})") from None
    if arr.ndim != ndim:
        raise ValueError(f"RunHistory.{what}: expected a {ndim}-D array, got shape {arr.shape}")
    return arr


def _check_times(arr: np.ndarray, what: str) -> None:
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"RunHistory.{what}: times must be finite")
    if arr.size > 1 and np.any(np.diff(arr) < 0):
        i = int(np.argmax(np.diff(arr) < 0))
        raise ValueError(
            f"RunHistory.{what}: times must be non-decreasing "
            f"(index {i + 1}: {arr[i + 1]!r} yr after {arr[i]!r} yr)"
        )


def _normalize_attr(name: Any, value: Any) -> AttrValue:
    if not isinstance(name, str) or not _ATTR_NAME.match(name):
        raise ValueError(
            f"RunHistory.attrs: invalid attribute name {name!r} "
            "(letters, digits, '_', '.', '-'; starting with a letter)"
        )
    if name in RESERVED_ATTRS:
        raise ValueError(
            f"RunHistory.attrs: {name!r} is written by aragog itself and cannot be set "
            f"(reserved: {', '.join(RESERVED_ATTRS)})"
        )
    # bool is an int subclass but netCDF has no boolean attribute type: refuse it rather
    # than read back 1/0.
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"RunHistory.attrs[{name!r}]: booleans are not supported; use an int or a str")
    if isinstance(value, str):
        return value
    if isinstance(value, (int, np.integer)):
        value = int(value)
        if not -(2**63) <= value < 2**63:
            raise ValueError(f"RunHistory.attrs[{name!r}]: integer {value} does not fit in 64 bits")
        return value
    if isinstance(value, (float, np.floating)):
        return float(value)
    raise ValueError(
        f"RunHistory.attrs[{name!r}]: unsupported type {type(value).__name__} (use str, int or float)"
    )


@dataclasses.dataclass(kw_only=True, eq=False, repr=False)
class RunHistory:
    """Everything written for one run. Construct with keywords; validated on construction.

    Attributes
    ----------
    time : (n_t,) float64, yr
        Every output time, non-decreasing.
    scalars : dict name -> (n_t,) float64
        Scalar time series; names with dimension ``"scalar"`` in ``FIELD_META`` (any
        subset), or in ``extra_meta``.
    snapshot_time : (n_s,) float64, yr
        Times of the profile snapshots, non-decreasing (``n_s`` may be 0).
    profiles : dict name -> (n_s, N) or (n_s, N+1) float64
        Profiles at each snapshot: ``(n_s, N)`` for staggered fields (cell centres),
        ``(n_s, N+1)`` for basic fields (cell boundaries), as given by the field's meta.
    r_stag : (N,) float64, m
        Radius of the cell centres (staggered nodes), index 0 at the core-mantle boundary.
    r_basic : (N+1,) float64, m
        Radius of the cell boundaries (basic nodes).
    attrs : dict name -> str | int | float
        Global attributes, e.g. ``aragog_version``, ``integrator``, ``status``,
        ``message``, ``config`` (the resolved TOML text), ``created``. The names in
        :data:`RESERVED_ATTRS` are written by the netCDF writer and may not be set here.
    extra_meta : dict name -> FieldMeta
        Dimension, units and long name of variables not in ``FIELD_META`` (a plain
        ``(dim, units, long_name)`` tuple is accepted). Entries for names that are in
        neither ``scalars`` nor ``profiles`` are not written.

    Arrays are copied to float64 on construction. After changing a field in place, call
    :meth:`validate` (the writer does). ``==`` compares exactly (see :meth:`equals`).

    Raises
    ------
    ValueError
        On a shape, name or attribute that does not fit the description above; the
        message names the offending field.
    """

    time: np.ndarray
    scalars: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    snapshot_time: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    profiles: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    r_stag: np.ndarray
    r_basic: np.ndarray
    attrs: dict[str, AttrValue] = dataclasses.field(default_factory=dict)
    extra_meta: dict[str, FieldMeta] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        self.validate()

    # -- derived sizes --------------------------------------------------------------------
    @property
    def n_times(self) -> int:
        """Number of output times ``n_t``."""
        return int(self.time.shape[0])

    @property
    def n_snapshots(self) -> int:
        """Number of profile snapshots ``n_s``."""
        return int(self.snapshot_time.shape[0])

    @property
    def n_cells(self) -> int:
        """Number of cells (staggered nodes) ``N``."""
        return int(self.r_stag.shape[0])

    def meta(self, name: str) -> FieldMeta:
        """Dimension, units and long name of variable ``name`` (``extra_meta`` first)."""
        if name in self.extra_meta:
            return self.extra_meta[name]
        if name in FIELD_META:
            return FIELD_META[name]
        raise KeyError(f"no metadata for variable {name!r}: add it to RunHistory.extra_meta")

    # -- validation -----------------------------------------------------------------------
    def validate(self) -> None:
        """Check (and normalise to float64) every field; raise ValueError naming the problem."""
        self.time = _float_array(self.time, "time", 1)
        if self.time.size == 0:
            raise ValueError("RunHistory.time: at least one output time is required")
        _check_times(self.time, "time")
        self.snapshot_time = _float_array(self.snapshot_time, "snapshot_time", 1)
        _check_times(self.snapshot_time, "snapshot_time")

        self.r_stag = _float_array(self.r_stag, "r_stag", 1)
        self.r_basic = _float_array(self.r_basic, "r_basic", 1)
        n = self.r_stag.shape[0]
        if n < 1:
            raise ValueError("RunHistory.r_stag: the mesh needs at least one cell")
        if self.r_basic.shape[0] != n + 1:
            raise ValueError(
                f"RunHistory.r_basic: expected N+1 = {n + 1} basic nodes for N = {n} cells, "
                f"got {self.r_basic.shape[0]}"
            )
        for what, r in (("r_stag", self.r_stag), ("r_basic", self.r_basic)):
            if not np.all(np.isfinite(r)):
                raise ValueError(f"RunHistory.{what}: radii must be finite")

        if not isinstance(self.extra_meta, Mapping):
            raise ValueError("RunHistory.extra_meta: expected a dict name -> FieldMeta")
        extra: dict[str, FieldMeta] = {}
        for name, meta in self.extra_meta.items():
            if name in FIELD_META:
                raise ValueError(
                    f"RunHistory.extra_meta[{name!r}]: {name!r} is already described by FIELD_META"
                )
            try:
                meta = FieldMeta(*meta)
            except TypeError:
                raise ValueError(
                    f"RunHistory.extra_meta[{name!r}]: expected FieldMeta(dim, units, long_name)"
                ) from None
            if meta.dim not in DIMS:
                raise ValueError(
                    f"RunHistory.extra_meta[{name!r}]: dim must be one of {DIMS}, got {meta.dim!r}"
                )
            if not isinstance(meta.units, str) or not isinstance(meta.long_name, str) or not meta.long_name:
                raise ValueError(
                    f"RunHistory.extra_meta[{name!r}]: units and long_name must be strings "
                    "(long_name non-empty; units '1' for dimensionless)"
                )
            extra[name] = meta
        self.extra_meta = extra

        n_t, n_s = self.time.shape[0], self.snapshot_time.shape[0]
        scalars: dict[str, np.ndarray] = {}
        for name, values in dict(self.scalars).items():
            meta = self._checked_meta(name, "scalars")
            if meta.dim != "scalar":
                raise ValueError(
                    f"RunHistory.scalars[{name!r}]: {name!r} is a {meta.dim} profile, not a scalar"
                )
            arr = _float_array(values, f"scalars[{name!r}]", 1)
            if arr.shape != (n_t,):
                raise ValueError(
                    f"RunHistory.scalars[{name!r}]: expected shape ({n_t},) (one value per output "
                    f"time), got {arr.shape}"
                )
            scalars[name] = arr
        self.scalars = scalars

        profiles: dict[str, np.ndarray] = {}
        for name, values in dict(self.profiles).items():
            meta = self._checked_meta(name, "profiles")
            if meta.dim == "scalar":
                raise ValueError(
                    f"RunHistory.profiles[{name!r}]: {name!r} is a scalar; put it in RunHistory.scalars"
                )
            width = n if meta.dim == "staggered" else n + 1
            arr = _float_array(values, f"profiles[{name!r}]", 2)
            if arr.shape != (n_s, width):
                nodes = "N" if meta.dim == "staggered" else "N+1"
                raise ValueError(
                    f"RunHistory.profiles[{name!r}]: {meta.dim} field, expected shape "
                    f"(n_snapshots, {nodes}) = ({n_s}, {width}), got {arr.shape}"
                )
            profiles[name] = arr
        self.profiles = profiles
        both = set(scalars) & set(profiles)
        if both:
            raise ValueError(f"RunHistory: {sorted(both)} given both as scalars and as profiles")

        if not isinstance(self.attrs, Mapping):
            raise ValueError("RunHistory.attrs: expected a dict name -> str | int | float")
        self.attrs = {name: _normalize_attr(name, value) for name, value in self.attrs.items()}

    def _checked_meta(self, name: Any, where: str) -> FieldMeta:
        if not isinstance(name, str) or not _VAR_NAME.match(name):
            raise ValueError(
                f"RunHistory.{where}: invalid variable name {name!r} "
                "(letters, digits and '_', starting with a letter)"
            )
        if name in COORDINATE_NAMES:
            raise ValueError(f"RunHistory.{where}[{name!r}]: {name!r} is the name of a coordinate variable")
        try:
            return self.meta(name)
        except KeyError:
            raise ValueError(
                f"RunHistory.{where}[{name!r}]: unknown variable {name!r} "
                "(not in FIELD_META; describe it in RunHistory.extra_meta)"
            ) from None

    # -- comparison -----------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunHistory):
            return NotImplemented
        return self.equals(other)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        span = f"{self.time[0]:g}..{self.time[-1]:g} yr" if self.time.size else "empty"
        return (
            f"RunHistory(time={span}, n_times={self.n_times}, n_snapshots={self.n_snapshots}, "
            f"n_cells={self.n_cells}, scalars={list(self.scalars)}, profiles={list(self.profiles)}, "
            f"attrs={list(self.attrs)})"
        )

    def equals(self, other: RunHistory) -> bool:
        """True if ``other`` holds exactly the same arrays (bitwise, NaN == NaN), attrs and meta.

        ``extra_meta`` entries for variables that are not present are ignored (they are
        not written).
        """
        if not isinstance(other, RunHistory):
            return False

        def same(a: np.ndarray, b: np.ndarray) -> bool:
            return a.shape == b.shape and np.array_equal(a, b, equal_nan=True)

        def same_attr(a: AttrValue, b: AttrValue) -> bool:
            if type(a) is not type(b):
                return False
            if isinstance(a, float) and math.isnan(a):
                return math.isnan(b)  # type: ignore[arg-type]
            return a == b

        if not all(same(getattr(self, k), getattr(other, k)) for k in ("time", "snapshot_time", "r_stag", "r_basic")):
            return False
        for mine, theirs in ((self.scalars, other.scalars), (self.profiles, other.profiles)):
            if mine.keys() != theirs.keys() or not all(same(mine[k], theirs[k]) for k in mine):
                return False
        if self.attrs.keys() != other.attrs.keys():
            return False
        if not all(same_attr(self.attrs[k], other.attrs[k]) for k in self.attrs):
            return False
        names = set(self.scalars) | set(self.profiles)
        return all(self.meta(k) == other.meta(k) for k in names)


def select_snapshots(times: Any, n: int) -> np.ndarray:
    """Indices of ``n`` output times spread evenly (in index) over ``times``.

    The first and the last output time are always included (for ``n >= 2``); ``n == 1``
    selects the last. If ``n >= len(times)`` every index is returned.

    Parameters
    ----------
    times : (n_t,) array
        The output times (only their number is used).
    n : int
        How many snapshots to keep, ``n >= 1``.

    Returns
    -------
    (min(n, n_t),) int array of strictly increasing indices into ``times``.
    """
    if np.ndim(times) != 1:
        raise ValueError(f"select_snapshots: times must be 1-D, got shape {np.shape(times)}")
    n_t = int(np.shape(times)[0])
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"select_snapshots: n must be a positive integer, got {n!r}")
    if n >= n_t:
        return np.arange(n_t, dtype=np.intp)
    if n == 1:
        return np.array([n_t - 1], dtype=np.intp)
    # For n < n_t the spacing (n_t-1)/(n-1) exceeds 1, so the rounded indices are distinct.
    return np.rint(np.linspace(0, n_t - 1, n)).astype(np.intp)
