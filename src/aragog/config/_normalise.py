"""From a config-shaped dict to complete, checked sections (no dataclasses yet).

The steps :meth:`aragog.config.Config.from_dict` runs before it builds the section
objects, for a dict read from either file syntax (:mod:`._loader`) or made by a caller:

1. :func:`normalise`: unknown sections and keys are rejected with the nearest valid name;
   legacy keys are mapped to their current names (``energy.solver_method`` →
   ``solver.method``, ...) or, if they have no effect, logged once each and dropped;
2. :func:`resolve_paths`: relative paths (``mesh.eos_file``,
   ``initial_condition.init_file``, ``eos.dir``) against the config file's folder;
3. :func:`apply_overrides`: ``"section.key=value"`` overrides, relative paths in them
   against the working directory;
4. :func:`check_required`: every required section and key is present.

And the checks of single values, which :mod:`._params` runs on every field of a section
object (:func:`coerce_and_check`: type coercion, allowed values and ranges, by the key's
:class:`~._schema.Key`). Every failure is a one-line :class:`~aragog.errors.ConfigError`
naming the key path (``section.key``) and the offending value, e.g.
"`mesh.number_of_nodes` must be an integer, got '80.5'". Checks that involve several
keys live in :mod:`._params` (``Config.validate``).

This module depends on :mod:`._schema` only, so that both :mod:`._params` and
:mod:`._loader` can import it (imports run one way: schema → normalise → params →
loader).
"""

from __future__ import annotations

import difflib
import logging
import math
import numbers
import os
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from aragog.errors import ConfigError

from ._schema import (
    LEGACY_IGNORED,
    LEGACY_IGNORED_AT,
    LEGACY_MAPPED,
    LEGACY_SECTIONS,
    PATH_KEYS,
    RADIONUCLIDE_KEYS,
    RADIONUCLIDE_PREFIX,
    SCHEMA,
    Key,
    keys_of,
)

__all__ = [
    "fmt",
    "coerce",
    "check_range",
    "coerce_and_check",
    "Overrides",
    "normalise",
    "resolve_path",
    "resolve_paths",
    "parse_overrides",
    "apply_overrides",
    "check_required",
    "is_known_section",
]

logger = logging.getLogger("aragog.config")

#: Overrides: ``{"mesh.number_of_nodes": 80}`` or strings ``"mesh.number_of_nodes=80"``.
Overrides = Mapping[str, Any] | Iterable[str] | None


# ---------------------------------------------------------------------- single values
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


# ---------------------------------------------------------------------- paths
def resolve_path(value: str, base_dir: Path) -> str:
    """A relative path against ``base_dir`` (``~`` expanded); ``""`` stays ``""``. When
    nothing is there but the path exists relative to the working directory (the upstream
    aragog's convention: its test configs name ``data/test/...`` from the repository
    root), that one, with a log line saying so."""
    if not value:
        return value
    path = os.path.expanduser(value)
    if os.path.isabs(path):
        return path
    resolved = os.path.normpath(os.path.join(base_dir, path))
    if not os.path.exists(resolved) and os.path.exists(path):
        cwd = os.path.abspath(path)
        logger.info("%r is not in the config file's folder %s; using %s (relative to the working directory)",
                    value, base_dir, cwd)
        return cwd
    return resolved


def resolve_paths(data: dict[str, dict[str, Any]], base_dir: Path) -> None:
    """Resolve the path keys of ``data`` (in place) against ``base_dir``."""
    for section, key in PATH_KEYS:
        value = data.get(section, {}).get(key)
        if isinstance(value, str):
            data[section][key] = resolve_path(value, base_dir)


# ---------------------------------------------------------------------- sections and keys
def _section_names() -> list[str]:
    return [*SCHEMA, f"{RADIONUCLIDE_PREFIX}NAME"]


def _unknown_section(name: str, where: str = "") -> ConfigError:
    close = difflib.get_close_matches(name, _section_names(), n=1, cutoff=0.6)
    hint = f"; did you mean `[{close[0]}]`?" if close else f"; valid sections: {', '.join(_section_names())}"
    return ConfigError(f"unknown section `[{name}]`{where}{hint}")


def _unknown_key(section: str, key: str, where: str = "") -> ConfigError:
    valid = list(keys_of(section))
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    hint = f"; did you mean `{close[0]}`?" if close else f"; valid keys: {', '.join(valid)}"
    return ConfigError(f"unknown key `{section}.{key}`{where}{hint}")


def _ignore_at(section: str, key: str, value: Any, where: str = "") -> None:
    """A :data:`LEGACY_IGNORED_AT` key: one warning at its no-effect value, else the error."""
    ignored, error = LEGACY_IGNORED_AT[(section, key)]
    if isinstance(value, str):  # an override's or an untyped file's text
        same = value.strip().lower() == str(ignored).lower()
    else:
        same = type(value) is type(ignored) and value == ignored
    if not same:
        raise ConfigError(f"{error}{where} (got '{fmt(value)}')")
    shown = str(ignored).lower() if isinstance(ignored, bool) else fmt(value)
    logger.warning("`%s.%s = %s` has no effect in this version and is ignored", section, key, shown)


def is_known_section(name: str) -> bool:
    """A fixed section of the schema, or ``radionuclide_NAME`` with a non-empty NAME."""
    return name in SCHEMA or (name.startswith(RADIONUCLIDE_PREFIX) and len(name) > len(RADIONUCLIDE_PREFIX))


def normalise(raw: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Check names, drop/map legacy keys; returns a new ``{section: {key: value}}``."""
    data: dict[str, dict[str, Any]] = {}
    if "base" in raw and "axes" in raw and not is_known_section("base"):
        raise ConfigError("this is a grid file (top-level `base` and `axes`), not a planet config: run it "
                          "with `aragog grid run`, or load it with aragog.grid.load_grid")
    for section, table in raw.items():
        if section in LEGACY_SECTIONS:
            logger.warning("`[%s]` has no effect in this version and is ignored", section)
            continue
        if not is_known_section(section):
            if not isinstance(table, Mapping):
                raise ConfigError(f"unknown top-level key `{section}`: keys belong in a section such as [solver]")
            raise _unknown_section(section)
        if not isinstance(table, Mapping):
            raise ConfigError(f"`{section}` must be a section ([{section}]), got '{fmt(table)}'")
        data[section] = {}
        for key, value in table.items():
            if (section, key) in LEGACY_IGNORED:
                logger.warning("`%s.%s` has no effect in this version and is ignored", section, key)
            elif (section, key) in LEGACY_IGNORED_AT:
                _ignore_at(section, key, value)
            elif (section, key) in LEGACY_MAPPED:
                continue  # below, once all current keys are in
            elif key in keys_of(section):
                data[section][key] = value
            else:
                raise _unknown_key(section, key)
    if "tsurf_poststep_change" in data.get("solver", {}):
        logger.debug("`solver.tsurf_poststep_change` is accepted for compatibility and unused")
    for section, key in LEGACY_MAPPED:
        table = raw.get(section, {})
        if isinstance(table, Mapping) and key in table:
            _map_legacy(data, section, key, table[key], from_override=False)
    return data


def _legacy_value(section: str, key: str, value: Any) -> tuple[str, str, Any]:
    """(new section, new key, converted value) for a mapped legacy key."""
    new_section, new_key = LEGACY_MAPPED[(section, key)]
    target = SCHEMA[new_section][new_key]
    old = f"{section}.{key}"
    if key == "use_jax_jacobian":
        if not isinstance(value, bool):
            raise ConfigError(f"`{old}` must be true or false, got '{fmt(value)}'")
        return new_section, new_key, "jax" if value else "fd"
    if key == "solver_method" and isinstance(value, str):
        value = value.strip().lower()
    return new_section, new_key, coerce_and_check(old, target, value)


def _map_legacy(data: dict, section: str, key: str, value: Any, from_override: bool) -> None:
    new_section, new_key, converted = _legacy_value(section, key, value)
    logger.info("`%s.%s` is a legacy name; read as `%s.%s` = %s", section, key, new_section, new_key,
                fmt(converted))
    current = data.setdefault(new_section, {})
    if new_key in current and not from_override:
        existing = coerce_and_check(f"{new_section}.{new_key}", SCHEMA[new_section][new_key], current[new_key])
        if existing != converted:
            raise ConfigError(
                f"`{section}.{key}` = '{fmt(value)}' conflicts with `{new_section}.{new_key}` = "
                f"'{fmt(current[new_key])}'; remove the legacy key"
            )
    current[new_key] = converted


# ---------------------------------------------------------------------- overrides
def parse_overrides(items: Iterable[str]) -> dict[str, Any]:
    """Parse ``"section.key=value"`` strings into ``{"section.key": value}``.

    The value is read as a TOML value (``80`` int, ``1e9`` float, ``true`` bool,
    ``"x"`` string, ``[1, 2]`` array); a bare word that is not TOML (``constant``,
    ``a/b.txt``) is taken as a string. A later override of the same key wins.

    Raises:
        ConfigError: an item without ``=``, a key that is not ``section.key``, or a value
            that starts like a TOML string/array/table but does not parse.
    """
    if isinstance(items, str):
        items = [items]
    out: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, str) or "=" not in item:
            raise ConfigError(f"bad override '{item}': expected SECTION.KEY=VALUE")
        key, _, text = item.partition("=")
        key, text = key.strip(), text.strip()
        _split_key(key, item)
        out[key] = _parse_value(text, item)
    return out


def _split_key(key: str, item: str) -> tuple[str, str]:
    parts = key.split(".")
    if len(parts) != 2 or not all(p.strip() for p in parts):
        raise ConfigError(f"bad override '{item}': the key must be SECTION.KEY, e.g. mesh.number_of_nodes")
    return parts[0].strip(), parts[1].strip()


def _parse_value(text: str, item: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError as exc:
        if text[:1] in ("[", "{", '"', "'"):
            raise ConfigError(f"bad override '{item}': the value is not valid TOML ({exc})") from None
        return text


def apply_overrides(data: dict[str, dict[str, Any]], overrides: Overrides) -> None:
    """Apply ``overrides`` to ``data`` in place (names checked like a file's)."""
    if overrides is None:
        return
    if isinstance(overrides, Mapping):
        items = dict(overrides)
    else:
        items = parse_overrides(overrides)
    for dotted, value in items.items():
        where = f" (override '{dotted}')"
        if not isinstance(dotted, str):
            raise ConfigError(f"bad override key {dotted!r}: expected 'SECTION.KEY'")
        section, key = _split_key(dotted, dotted)
        if section in LEGACY_SECTIONS or (section, key) in LEGACY_IGNORED:
            logger.warning("`%s.%s` has no effect in this version and is ignored", section, key)
            continue
        if (section, key) in LEGACY_IGNORED_AT:
            _ignore_at(section, key, value, where)
            continue
        if (section, key) in LEGACY_MAPPED:
            _map_legacy(data, section, key, value, from_override=True)
            continue
        if not is_known_section(section):
            raise _unknown_section(section, where)
        if key not in keys_of(section):
            raise _unknown_key(section, key, where)
        if section in SCHEMA and SCHEMA[section][key].kind == "path" and isinstance(value, str):
            value = resolve_path(value, Path.cwd())
        data.setdefault(section, {})[key] = value
        logger.debug("override %s.%s = %s", section, key, fmt(value))


# ---------------------------------------------------------------------- required keys
def check_required(data: dict[str, dict[str, Any]]) -> None:
    """Raise :class:`ConfigError` naming every missing required section, else key."""
    missing_sections = [s for s, keys in SCHEMA.items()
                        if s not in data and any(k.required for k in keys.values())]
    if missing_sections:
        names = ", ".join(f"`[{s}]`" for s in missing_sections)
        raise ConfigError(f"missing required section{'s' if len(missing_sections) > 1 else ''} {names}")
    missing = []
    for section, values in data.items():
        keys = RADIONUCLIDE_KEYS if section.startswith(RADIONUCLIDE_PREFIX) else SCHEMA[section]
        missing += [f"`{section}.{k}`" for k, key in keys.items() if key.required and k not in values]
    if missing:
        raise ConfigError(f"missing required key{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
