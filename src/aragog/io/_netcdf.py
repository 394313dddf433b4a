"""Write and read a run's output as a CF-1.8-style netCDF-4 file.

Layout (see ``docs/output.md``)::

    dimensions:  time (unlimited), snapshot, staggered (N), basic (N+1)
    time(time)                       yr   output times                    axis = "T"
    snapshot_time(snapshot)          yr   times of the profile snapshots
    radius_staggered(staggered)      m    cell centres, positive = "up"
    radius_basic(basic)              m    cell boundaries, positive = "up"
    NAME(time)                            scalar time series (T_magma, F_surface, ...)
    NAME(snapshot, staggered|basic)       profiles (T_stag, phi_stag, heat_flux, ...)

Every variable has ``units`` and ``long_name``; global attributes are ``Conventions``,
``title``, ``source``, ``history`` and the run's own attributes (``RunHistory.attrs``).
Files are written atomically (temporary file beside the target, then rename).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import logging
import os
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np

from aragog._version import provenance_attrs
from aragog.errors import AragogError
from aragog.fields import FIELD_META, FieldMeta
from aragog.io._atomic import atomic_output
from aragog._run_history import _ATTR_NAME, COORDINATE_NAMES, RESERVED_ATTRS, RunHistory

__all__ = ["write_netcdf", "read_netcdf", "TITLE", "CONVENTIONS"]

logger = logging.getLogger("aragog.io")

CONVENTIONS = "CF-1.8"
TITLE = "aragog thermal evolution of a rocky-planet mantle"
_FORMAT = "NETCDF4"  # NETCDF4_CLASSIC has no 64-bit integer attributes
_DIM_OF = {"staggered": "staggered", "basic": "basic"}
_RADIUS_OF = {"staggered": "radius_staggered", "basic": "radius_basic"}
_COMPRESS = {"zlib": True, "complevel": 4, "shuffle": True}  # lossless


def _coordinate(ds: netCDF4.Dataset, name: str, dim: str, values: np.ndarray, **attrs: str) -> None:
    var = ds.createVariable(name, "f8", (dim,))
    var.setncatts(attrs)
    var[:] = values


def _data_variable(
    ds: netCDF4.Dataset, name: str, dims: tuple[str, ...], values: np.ndarray, meta: FieldMeta,
    coordinates: str | None,
) -> None:
    # NaN as _FillValue: missing values (a failed step) read as NaN in netCDF4 and xarray.
    compress = _COMPRESS if len(dims) > 1 and values.size else {}
    var = ds.createVariable(name, "f8", dims, fill_value=np.nan, **compress)
    attrs = {"units": meta.units, "long_name": meta.long_name}
    if coordinates:  # auxiliary coordinates (CF 5.2); time(time) is a coordinate variable already
        attrs["coordinates"] = coordinates
    var.setncatts(attrs)
    var[:] = values


def _write(ds: netCDF4.Dataset, history: RunHistory, created: str) -> None:
    ds.setncatts(
        {"Conventions": CONVENTIONS, "title": TITLE, **provenance_attrs(created, "written", "aragog.io.write_netcdf")}
    )
    ds.setncatts(history.attrs)

    ds.createDimension("time", None)
    ds.createDimension("snapshot", history.n_snapshots)
    ds.createDimension("staggered", history.n_cells)
    ds.createDimension("basic", history.n_cells + 1)

    _coordinate(
        ds, "time", "time", history.time, units="yr", long_name="time", axis="T",
        comment="model time in Julian years (1 yr = 31557600 s)",
    )
    _coordinate(
        ds, "snapshot_time", "snapshot", history.snapshot_time, units="yr",
        long_name="time of the profile snapshots",
        comment="model time in Julian years (1 yr = 31557600 s)",
    )
    _coordinate(
        ds, "radius_staggered", "staggered", history.r_stag, units="m",
        long_name="radius of the cell centres (staggered nodes)", positive="up",
    )
    _coordinate(
        ds, "radius_basic", "basic", history.r_basic, units="m",
        long_name="radius of the cell boundaries (basic nodes)", positive="up",
    )

    for name, values in history.scalars.items():
        _data_variable(ds, name, ("time",), values, history.meta(name), None)
    for name, values in history.profiles.items():
        meta = history.meta(name)
        _data_variable(
            ds, name, ("snapshot", _DIM_OF[meta.dim]), values, meta,
            f"snapshot_time {_RADIUS_OF[meta.dim]}",
        )


def write_netcdf(path: str | os.PathLike, history: RunHistory) -> Path:
    """Write ``history`` to the netCDF-4 file ``path``, atomically; return the path.

    The file is written to a temporary file in the same directory and renamed onto
    ``path`` only when complete: on any error the temporary file is removed and a file
    already at ``path`` is left untouched.

    Raises
    ------
    ValueError
        If ``history`` is inconsistent (see :class:`RunHistory`).
    AragogError
        If the file cannot be written (missing or unwritable directory, ``path`` is a
        directory, disk full, ...); one line naming ``path``.
    """
    if not isinstance(history, RunHistory):
        raise TypeError(f"write_netcdf: expected a RunHistory, got {type(history).__name__}")
    history.validate()
    target = Path(path)
    created = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
    with atomic_output(target, "netCDF output") as tmp:
        try:
            ds = netCDF4.Dataset(tmp, "w", format=_FORMAT, clobber=True)
            try:
                _write(ds, history, created)
            except BaseException:
                with contextlib.suppress(Exception):  # keep the original error
                    ds.close()
                raise
            ds.close()  # flushes: may fail too (disk full)
        except RuntimeError as exc:  # netCDF library errors (HDF error, disk full, ...)
            raise AragogError(f"cannot write netCDF output '{target}': {_one_line(exc)}") from exc
    logger.info("wrote %s (%d output times, %d snapshots, %d cells)",
                target, history.n_times, history.n_snapshots, history.n_cells)
    return target


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.split())


def _attr_value(value: Any) -> Any:
    """A netCDF attribute as str / int / float, or None if it is not a scalar of those."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    arr = np.asarray(value)
    if arr.size != 1:
        return None
    item = arr.reshape(()).item()
    if isinstance(item, bool):
        return int(item)
    if isinstance(item, (int, float, str)):
        return item
    return None


def read_netcdf(path: str | os.PathLike) -> RunHistory:
    """Read a file written by :func:`write_netcdf` back into a :class:`RunHistory`.

    The round trip is exact: arrays bitwise (NaN included), attributes with their types
    (``str``, ``int``, ``float``). Global attributes written by aragog itself
    (``Conventions``, ``title``, ``source``, ``history``) are not returned in ``attrs``;
    variables on other dimensions are ignored. Units and long names of variables not in
    ``FIELD_META`` come back in ``extra_meta``.

    Raises
    ------
    AragogError
        If ``path`` does not exist, is not a netCDF file, or is a netCDF file that aragog
        did not write; one line naming ``path``.
    """
    source = Path(path)
    if not source.exists():
        raise AragogError(f"netCDF file '{source}' does not exist")
    if source.is_dir():
        if (source / "grid.json").is_file():
            raise AragogError(f"'{source}' is a grid's folder, not a run's netCDF file: plot it with "
                              f"`aragog grid plot {source}`, or read it with aragog.grid.collect_grid")
        raise AragogError(f"netCDF file '{source}' is a directory")
    try:
        ds = netCDF4.Dataset(source, "r")
    except (OSError, RuntimeError) as exc:
        raise AragogError(f"'{source}' is not a readable netCDF file ({_one_line(exc)})") from None
    try:
        ds.set_auto_maskandscale(False)
        return _read(ds, source)
    finally:
        ds.close()


def _read(ds: netCDF4.Dataset, source: Path) -> RunHistory:
    src = ds.getncattr("source") if "source" in ds.ncattrs() else ""
    missing = [n for n in COORDINATE_NAMES if n not in ds.variables]
    if not (isinstance(src, str) and src.startswith("aragog")) or missing:
        why = f"missing {', '.join(missing)}" if missing else f"source attribute is {src!r}"
        raise AragogError(f"'{source}' is a netCDF file but not aragog output ({why})")

    def coord(name: str, dim: str) -> np.ndarray:
        var = ds.variables[name]
        if var.dimensions != (dim,):
            raise AragogError(
                f"'{source}' is not valid aragog output: {name} has dimensions {var.dimensions}, expected ({dim},)"
            )
        return np.array(var[:], dtype=np.float64)

    time = coord("time", "time")
    snapshot_time = coord("snapshot_time", "snapshot")
    r_stag = coord("radius_staggered", "staggered")
    r_basic = coord("radius_basic", "basic")

    scalars: dict[str, np.ndarray] = {}
    profiles: dict[str, np.ndarray] = {}
    extra_meta: dict[str, FieldMeta] = {}
    for name, var in ds.variables.items():
        if name in COORDINATE_NAMES:
            continue
        dims = var.dimensions
        if dims == ("time",):
            dim, target = "scalar", scalars
        elif dims in (("snapshot", "staggered"), ("snapshot", "basic")):
            dim, target = dims[1], profiles
        else:
            logger.debug("%s: ignoring variable %s%s (not an aragog field)", source, name, dims)
            continue
        target[name] = np.array(var[:], dtype=np.float64)
        if name not in FIELD_META:
            attrs = var.ncattrs()
            units = var.getncattr("units") if "units" in attrs else ""
            long_name = var.getncattr("long_name") if "long_name" in attrs else name
            extra_meta[name] = FieldMeta(dim, str(units), str(long_name))

    attrs: dict[str, Any] = {}
    for key in ds.ncattrs():
        if key in RESERVED_ATTRS:
            continue
        if not _ATTR_NAME.match(key):
            logger.debug("%s: ignoring global attribute %r (not a valid aragog attribute name)", source, key)
            continue
        value = _attr_value(ds.getncattr(key))
        if value is None:
            logger.debug("%s: ignoring non-scalar global attribute %s", source, key)
            continue
        attrs[key] = value

    try:
        return RunHistory(
            time=time, scalars=scalars, snapshot_time=snapshot_time, profiles=profiles,
            r_stag=r_stag, r_basic=r_basic, attrs=attrs, extra_meta=extra_meta,
        )
    except ValueError as exc:
        raise AragogError(f"'{source}' is not valid aragog output: {_one_line(exc)}") from None
