"""Checks of single values: type coercion, allowed values and ranges.

Every failure is a one-line :class:`~aragog.errors.ConfigError` naming the key path
(``section.key``) and the offending value, e.g.
"`mesh.number_of_nodes` must be an integer, got '80.5'". Checks that involve several
keys live in :mod:`._params` (``Config.validate``).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from aragog.errors import ConfigError

from ._schema import Key

__all__ = ["fmt", "coerce", "check_range", "coerce_and_check"]

#: Extra words for a range failure, per key path.
_RANGE_HINTS = {
    "mesh.number_of_nodes": "the physics needs two cells, bounded by three nodes",
}

#: Values that were supported by older aragog versions and are not any more.
_UNSUPPORTED: dict = {}


def fmt(value: Any) -> str:
    """A value as a user would write it in TOML (compact numbers, ``true``/``false``).

    Large and small floats use a short scientific form (``7e6``, ``6.371e6``, ``1e-9``).
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _fmt_float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        items = [fmt(v) for v in value[:6]]
        if len(value) > 6:
            items.append(f"... ({len(value)} values)")
        return "[" + ", ".join(items) + "]"
    return repr(value)


def _fmt_float(x: float) -> str:
    if not math.isfinite(x):
        return repr(x)
    if x == 0.0 or 1e-3 <= abs(x) < 1e5:
        text = repr(x)
        return text[:-2] if text.endswith(".0") else text
    for digits in range(17):  # the shortest scientific form that reads back exactly
        text = f"{x:.{digits}e}"
        if float(text) == x:
            break
    mantissa, exponent = text.split("e")
    return f"{mantissa}e{int(exponent)}"


def _is_bool(value: Any) -> bool:
    """True for Python and NumPy booleans (NumPy ones are not ``bool`` subclasses)."""
    if isinstance(value, bool):
        return True
    dtype = getattr(value, "dtype", None)
    return dtype is not None and getattr(dtype, "kind", "") == "b" and getattr(value, "ndim", 1) == 0


#: Phase properties the EOS tables supply (the [phase_*] number is used only with
#: phase_mixed.const_properties); the others are used as given.
_TABLE_PROPERTIES = {"density": "density", "heat_capacity": "heat capacity",
                     "thermal_expansivity": "thermal expansivity"}


def _phase_file_message(path: str, value: str) -> str:
    """The error for a file name given as a ``[phase_liquid]``/``[phase_solid]`` property
    (earlier aragog versions read P-T lookup tables there; this one does not)."""
    section, key = path.split(".", 1)
    head = f"`{path}` = '{value}': a lookup-table file is not read for a phase property in this version"
    if key in _TABLE_PROPERTIES:
        return (f"{head}; the {_TABLE_PROPERTIES[key]} comes from the P-S EOS tables (`[eos] dir`, or the "
                f"bundled model; docs/eos_tables.md), so put the P-dependent values there and give a number "
                f"here (used only with `phase_mixed.const_properties`)")
    return f"{head}; give a constant number"


def _as_float(path: str, value: Any) -> float:
    if isinstance(value, str) and path.startswith(("phase_liquid.", "phase_solid.")) and value.strip():
        try:
            float(value)
        except ValueError:
            raise ConfigError(_phase_file_message(path, value)) from None
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise ConfigError(f"`{path}` must be a number, got '{fmt(value)}'")
    result = float(value)
    if not math.isfinite(result):
        raise ConfigError(f"`{path}` must be a finite number, got '{fmt(result)}'")
    return result


def _as_int(path: str, value: Any) -> int:
    if _is_bool(value):
        raise ConfigError(f"`{path}` must be an integer, got '{fmt(value)}'")
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(float(value)) and float(value).is_integer():
        return int(value)  # e.g. 1e2 written in a file: an integral float is accepted
    raise ConfigError(f"`{path}` must be an integer, got '{fmt(value)}'")


def _as_bool(path: str, value: Any) -> bool:
    if not _is_bool(value):
        raise ConfigError(f"`{path}` must be true or false, got '{fmt(value)}'")
    return bool(value)


def _as_str(path: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"`{path}` must be a string, got '{fmt(value)}'")
    return str(value)


def _as_floatlist(path: str, value: Any) -> list[float]:
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()  # NumPy / JAX arrays from a coupling framework
    if isinstance(value, numbers.Real) and not _is_bool(value):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"`{path}` must be a number or a list of numbers, got '{fmt(value)}'")
    if len(value) == 0:
        raise ConfigError(f"`{path}` must have at least one value, got '[]'")
    out = []
    for i, item in enumerate(value):
        if _is_bool(item) or not isinstance(item, numbers.Real):
            raise ConfigError(f"`{path}` must be a list of numbers, got '{fmt(item)}' at index {i}")
        x = float(item)
        if not math.isfinite(x):
            raise ConfigError(f"`{path}` values must be finite, got '{fmt(x)}' at index {i}")
        out.append(x)
    return out


_CONVERTERS = {
    "float": _as_float,
    "int": _as_int,
    "bool": _as_bool,
    "str": _as_str,
    "path": _as_str,
    "floatlist": _as_floatlist,
}


def coerce(path: str, key: Key, value: Any) -> Any:
    """Convert ``value`` to the key's type (int → float where a float is expected).

    Returns plain Python objects (``float``, ``int``, ``bool``, ``str``, ``list[float]``),
    so NumPy scalars and arrays set by a caller become TOML-writable values.
    ``None`` is accepted only for optional keys without default (``const_*``).
    """
    if value is None:
        if key.default is None:
            return None
        raise ConfigError(f"`{path}` must be set, got 'None'")
    return _CONVERTERS[key.kind](path, value)


def check_range(path: str, key: Key, value: Any) -> None:
    """Check a coerced value against the key's allowed values and bounds."""
    if value is None:
        return
    if key.nonempty and not value.strip():
        raise ConfigError(f"`{path}` must be a non-empty string, got '{value}'")
    if key.choices is not None and value not in key.choices:
        special = _UNSUPPORTED.get((path, value))
        if special:
            raise ConfigError(special)
        raise ConfigError(f"`{path}` must be one of {key.choices_text()}, got '{fmt(value)}'")
    if key.lo is None and key.hi is None:
        return
    low_bad = key.lo is not None and (value <= key.lo if key.lo_open else value < key.lo)
    high_bad = key.hi is not None and (value >= key.hi if key.hi_open else value > key.hi)
    if low_bad or high_bad:
        hint = _RANGE_HINTS.get(path)
        hint = f" ({hint})" if hint else ""
        raise ConfigError(f"`{path}` must be {key.range_text()}{hint}, got '{fmt(value)}'")


def coerce_and_check(path: str, key: Key, value: Any) -> Any:
    """:func:`coerce` then :func:`check_range`; returns the normalised value."""
    value = coerce(path, key, value)
    check_range(path, key, value)
    return value
