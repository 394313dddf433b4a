"""The grid file: a base config, axes of values, overrides for every point (docs/grid.md).

A grid file is TOML::

    base = "earth.toml"          # the base config, relative to this file
    mode = "product"             # or "zip"
    timeout = 600.0              # optional: wall-clock limit of one point [s]
    [axes]                       # dotted keys as in --set
    "boundary_conditions.emissivity" = [0.5, 1.0]
    "initial_condition.surface_temperature" = { linspace = [3000.0, 4000.0, 3] }
    [set]                        # overrides for every point
    "solver.end_time" = 2000.0

An axis is a list of values or one generator table: ``{ linspace = [start, stop, n] }``,
``{ geomspace = [start, stop, n] }`` (both ends included, as NumPy's), ``{ logspace =
[start_exponent, stop_exponent, n] }`` (``10**x``), or ``{ values = [...] }``. Keys may also be
written as TOML sub-tables (``[axes.mesh] number_of_nodes = [60, 80]``). ``mode = "product"``
runs every combination (the first axis varies slowest); ``"zip"`` pairs the i-th values of
axes of equal length.

:func:`load_grid` reads and checks a grid file; :meth:`GridSpec.points` lists its points;
:func:`point_parameters` builds and validates every point's config before anything runs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from aragog.config import load_config
from aragog.errors import ConfigError

__all__ = ["GridSpec", "GridPoint", "load_grid", "grid_from_dict", "point_parameters", "spec_differences"]

_TOP_KEYS = ("base", "mode", "timeout", "axes", "set")
_GENERATORS = ("linspace", "logspace", "geomspace", "values")


@dataclasses.dataclass(frozen=True)
class GridPoint:
    """One point of a grid: its index, its id (the file stem of its outputs, ``p00012``),
    its axis values ``{dotted key: value}`` and every override it runs with (the grid's
    ``[set]`` then its axis values)."""

    index: int
    id: str
    values: dict[str, Any]
    overrides: dict[str, Any]

    def label(self) -> str:
        """``point 3 (boundary_conditions.emissivity=0.5, ...)``: for messages."""
        inner = ", ".join(f"{k}={_short(v)}" for k, v in self.values.items())
        return f"point {self.index} ({inner})"


@dataclasses.dataclass(frozen=True)
class GridSpec:
    """A checked grid: ``base`` (absolute path of the base config), ``mode``, ``axes``
    (``{dotted key: tuple of values}``, in file order), ``set`` (overrides for every point),
    ``timeout`` (seconds per point, ``None``: no limit) and ``source`` (the grid file, or
    ``None`` for a grid built from a dict)."""

    base: Path
    mode: str
    axes: dict[str, tuple]
    set: dict[str, Any]
    timeout: float | None = None
    source: Path | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        """``(n_1, n_2, ...)`` for a product grid, ``(n,)`` for a zip grid."""
        sizes = tuple(len(v) for v in self.axes.values())
        return sizes if self.mode == "product" else sizes[:1]

    @property
    def size(self) -> int:
        """The number of points."""
        return math.prod(self.shape) if self.axes else 1

    def points(self) -> list[GridPoint]:
        """Every point, in order (product: the first axis varies slowest)."""
        names = list(self.axes)
        if self.mode == "product" or not names:  # no axes: the one point of [set]
            combos = itertools.product(*self.axes.values())
        else:
            combos = zip(*self.axes.values())
        width = max(5, len(str(max(self.size - 1, 0))))
        points = []
        for i, combo in enumerate(combos):
            values = dict(zip(names, combo))
            points.append(GridPoint(i, f"p{i:0{width}d}", values, {**self.set, **values}))
        return points

    def base_digest(self) -> str:
        """SHA-256 of the base config file's bytes (part of :meth:`hash`)."""
        try:
            return hashlib.sha256(self.base.read_bytes()).hexdigest()
        except OSError as exc:
            raise ConfigError(f"grid base config {self.base}: cannot read it ({exc.strerror or exc})") from None

    def identity(self) -> dict[str, Any]:
        """What defines the grid's results (the base config's content, mode, axes, set), as
        JSON-ready data; the timeout is left out (it does not change a finished point)."""
        return {"base": str(self.base), "base_sha256": self.base_digest(), "mode": self.mode,
                "axes": {k: list(v) for k, v in self.axes.items()}, "set": dict(self.set)}

    def hash(self) -> str:
        """A short stable hash of :meth:`identity` (the output folder records it)."""
        text = json.dumps(self.identity(), sort_keys=True, default=_json_default)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def load_grid(path: str | os.PathLike) -> GridSpec:
    """Read and check the grid file ``path`` (see the module docstring).

    Raises:
        ConfigError: a missing file, a TOML syntax error, an unknown top-level key, a bad
            mode, axis or generator, axes of unequal length in a zip grid, or a missing base
            config; one line naming the file and the key.
    """
    path = Path(path).expanduser()
    try:
        with open(path, "rb") as stream:
            raw = tomllib.load(stream)
    except FileNotFoundError:
        raise ConfigError(f"grid file not found: {path}") from None
    except IsADirectoryError:
        raise ConfigError(f"grid file is a directory: {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: TOML syntax error: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read grid file {path}: {exc.strerror or exc}") from None
    try:
        return grid_from_dict(raw, base_dir=path.resolve().parent, source=path.resolve())
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def grid_from_dict(raw: Mapping[str, Any], base_dir: str | os.PathLike | None = None,
                   source: Path | None = None) -> GridSpec:
    """A :class:`GridSpec` from the grid file's content as a dict (``base`` relative to
    ``base_dir``, default the working directory)."""
    unknown = [k for k in raw if k not in _TOP_KEYS]
    if unknown:
        raise ConfigError(f"unknown grid key `{unknown[0]}`{_did_you_mean(unknown[0], _TOP_KEYS)} "
                          f"(grid keys: {', '.join(_TOP_KEYS)})")
    if "base" not in raw or not isinstance(raw["base"], str) or not raw["base"].strip():
        raise ConfigError("`base` (the base config file, relative to the grid file) is required")
    base = Path(raw["base"]).expanduser()
    if not base.is_absolute():
        base = Path(base_dir or Path.cwd()) / base
    base = base.resolve()
    if not base.is_file():
        raise ConfigError(f"`base`: config file not found: {base}")
    mode = raw.get("mode", "product")
    if mode not in ("product", "zip"):
        raise ConfigError(f"`mode` must be \"product\" or \"zip\", got {mode!r}")
    timeout = raw.get("timeout")
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ConfigError(f"`timeout` must be a number of seconds > 0, got {timeout!r}")
        timeout = float(timeout)
    axes = {key: _axis_values(key, spec, unique=mode != "zip")
            for key, spec in _flatten(raw.get("axes", {}), "axes").items()}
    overrides = _flatten(raw.get("set", {}), "set")
    both = sorted(set(axes) & set(overrides))
    if both:
        raise ConfigError(f"`{both[0]}` is both an axis and in [set]: keep one")
    if mode == "zip" and len({len(v) for v in axes.values()}) > 1:
        sizes = ", ".join(f"{k}: {len(v)}" for k, v in axes.items())
        raise ConfigError(f"mode = \"zip\" needs axes of equal length, got {sizes}")
    if mode == "zip":  # an axis may repeat values, a point may not
        seen: dict[str, int] = {}
        for i, combo in enumerate(zip(*axes.values())):
            j = seen.setdefault(_canonical(combo), i)
            if j != i:
                raise ConfigError(f"zip points {j} and {i} are the same ({_short(list(combo))})")
    return GridSpec(base, mode, axes, overrides, timeout, source)


def point_parameters(spec: GridSpec, points: list[GridPoint] | None = None) -> list:
    """Build and validate every point's :class:`aragog.config.Config` (in order).

    Raises:
        ConfigError: the first invalid point, naming the point (index and axis values), the
            key and the value (unknown keys with did-you-mean, as ``--set`` does).
    """
    params = []
    for point in spec.points() if points is None else points:
        try:
            params.append(load_config(spec.base, overrides=point.overrides))
        except ConfigError as exc:
            raise ConfigError(f"{point.label()}: {exc}") from None
    return params


def spec_differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What differs between two :meth:`GridSpec.identity` records, one phrase each (empty:
    the same grid)."""
    out = []
    if old.get("base") != new.get("base"):
        out.append(f"base config {old.get('base')} -> {new.get('base')}")
    elif old.get("base_sha256") != new.get("base_sha256"):
        out.append(f"the base config {new.get('base')} changed since the grid was started")
    if old.get("mode") != new.get("mode"):
        out.append(f"mode {old.get('mode')!r} -> {new.get('mode')!r}")
    for name in ("axes", "set"):
        a, b = old.get(name, {}), new.get(name, {})
        for key in a.keys() - b.keys():
            out.append(f"{name} `{key}` removed")
        for key in b.keys() - a.keys():
            out.append(f"{name} `{key}` added")
        for key in sorted(a.keys() & b.keys()):
            if _canonical(a[key]) != _canonical(b[key]):
                out.append(f"{name} `{key}`: {_short(a[key])} -> {_short(b[key])}")
    return out


# ---------------------------------------------------------------------------- helpers
def _flatten(table: Any, where: str) -> dict[str, Any]:
    """``{"a.b": v}`` from a table whose keys are dotted strings or sub-tables (one level)."""
    if not isinstance(table, Mapping):
        raise ConfigError(f"[{where}] must be a table of dotted keys, got {type(table).__name__}")
    out: dict[str, Any] = {}
    for key, value in table.items():
        if "." in key:
            out[key] = value
        elif isinstance(value, Mapping) and not _is_generator(value):
            for sub, v in value.items():
                out[f"{key}.{sub}"] = v
        else:
            raise ConfigError(f"[{where}] `{key}`: keys are SECTION.KEY, e.g. \"mesh.number_of_nodes\"")
    return out


def _is_generator(value: Mapping) -> bool:
    return len(value) == 1 and next(iter(value)) in _GENERATORS


def _axis_values(key: str, spec: Any, unique: bool = True) -> tuple:
    """The values of axis ``key``: a list, or a generator table (``unique``: refuse
    repeated values, which would repeat points of a product grid)."""
    where = f"[axes] `{key}`"
    if isinstance(spec, list):
        values = spec
    elif isinstance(spec, Mapping) and _is_generator(spec):
        kind, args = next(iter(spec.items()))
        if kind == "values":
            if not isinstance(args, list):
                raise ConfigError(f"{where}: values must be a list, got {args!r}")
            values = args
        else:
            values = _generated(where, kind, args)
    elif isinstance(spec, Mapping):
        raise ConfigError(f"{where}: a generator table has one key of {', '.join(_GENERATORS)}, "
                          f"got {', '.join(spec) or 'none'}")
    else:
        raise ConfigError(f"{where}: expected a list of values or a generator table "
                          f"({{ linspace = [start, stop, n] }}), got {spec!r}")
    if not values:
        raise ConfigError(f"{where}: an axis needs at least one value")
    if unique and len({_canonical(v) for v in values}) != len(values):
        raise ConfigError(f"{where}: repeated values in {_short(values)}")
    return tuple(values)


def _generated(where: str, kind: str, args: Any) -> list[float]:
    if (not isinstance(args, list) or len(args) != 3
            or not all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in args)
            or not isinstance(args[2], int) or args[2] < 1):
        raise ConfigError(f"{where}: {kind} = [start, stop, n] with numbers and an integer n >= 1, got {args!r}")
    start, stop, n = float(args[0]), float(args[1]), int(args[2])
    if kind == "geomspace" and (start == 0 or stop == 0 or (start < 0) != (stop < 0)):
        raise ConfigError(f"{where}: geomspace needs non-zero ends of one sign, got {args!r}")
    fn = {"linspace": np.linspace, "logspace": np.logspace, "geomspace": np.geomspace}[kind]
    values = [float(v) for v in fn(start, stop, n)]
    if not all(math.isfinite(v) for v in values):
        raise ConfigError(f"{where}: {kind}{args} gives non-finite values")
    return values


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=_json_default)


def _json_default(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"not JSON-serialisable: {value!r}")


def _short(value: Any) -> str:
    text = _canonical(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _did_you_mean(name: str, choices) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(choices), n=1)
    return f"; did you mean `{close[0]}`?" if close else ""
