"""Reading a TOML config: sections and keys, legacy names, overrides, paths.

:func:`load_config` is the entry point; :func:`build_parameters` does the work for a dict
(it also backs :meth:`Parameters.from_dict`). Order of operations:

1. unknown sections and keys are rejected with the nearest valid name;
2. legacy keys are mapped to their current names (``energy.solver_method`` →
   ``solver.method``, ...) or, if they have no effect, logged once each and dropped;
3. relative paths (``mesh.eos_file``, ``initial_condition.init_file``, ``eos.dir``) are
   resolved against the config file's folder;
4. overrides (``"section.key=value"``) are applied — relative paths in them against the
   working directory;
5. required keys are checked, the dataclasses built and :meth:`Parameters.validate` run.
"""

from __future__ import annotations

import difflib
import logging
import os
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from aragog.errors import ConfigError

from .checks import coerce_and_check, fmt
from .params import SECTION_CLASSES, Parameters, RadionuclideParams, _resolve_path, validate_section
from .schema import (
    LEGACY_IGNORED,
    LEGACY_MAPPED,
    LEGACY_SECTIONS,
    PATH_KEYS,
    RADIONUCLIDE_KEYS,
    RADIONUCLIDE_PREFIX,
    SCHEMA,
    keys_of,
)

__all__ = ["load_config", "parse_overrides", "build_parameters"]

logger = logging.getLogger("aragog.config")

Overrides = Mapping[str, Any] | Iterable[str] | None


def load_config(path: str | os.PathLike, overrides: Overrides = None) -> Parameters:
    """Read, complete and validate an aragog TOML config file.

    Args:
        path: the TOML file.
        overrides: ``{"mesh.number_of_nodes": 80}`` or strings ``"mesh.number_of_nodes=80"``
            (values parsed as TOML values; a bare word is a string).

    Returns:
        Validated :class:`Parameters` with every default filled in and ``config_path`` set.

    Raises:
        ConfigError: a missing or unreadable file, a TOML syntax error (with line and
            column), or any invalid key or value; one line naming the file or key.
    """
    path = Path(path).expanduser()
    try:
        with open(path, "rb") as stream:
            raw = tomllib.load(stream)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except IsADirectoryError:
        raise ConfigError(f"config file is a directory: {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: TOML syntax error: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    config_path = path.resolve()
    params = build_parameters(raw, base_dir=config_path.parent, overrides=overrides, config_path=config_path)
    logger.debug("loaded %s", config_path)
    return params


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


def build_parameters(
    raw: Mapping[str, Any],
    base_dir: str | os.PathLike | None = None,
    overrides: Overrides = None,
    config_path: Path | None = None,
) -> Parameters:
    """Build validated :class:`Parameters` from a TOML-shaped dict.

    Args:
        raw: ``{section: {key: value}}`` as read from a file (not modified).
        base_dir: folder for relative paths in ``raw`` (default: the working directory).
        overrides: see :func:`load_config`.
        config_path: recorded in the result.
    """
    base = Path(base_dir).expanduser().absolute() if base_dir is not None else Path.cwd()
    if not isinstance(raw, Mapping):
        raise ConfigError(f"a config must be a table of sections, got {type(raw).__name__}")
    data = _normalise(raw)
    for section, key in PATH_KEYS:
        value = data.get(section, {}).get(key)
        if isinstance(value, str):
            data[section][key] = _resolve_path(value, base)
    _apply_overrides(data, overrides)
    _check_required(data)

    sections = {}
    for name, cls in SECTION_CLASSES.items():
        sections[name] = cls(**data.get(name, {}))
    nuclides = []
    for section, values in data.items():
        if section.startswith(RADIONUCLIDE_PREFIX):
            nuclide = RadionuclideParams(**values)
            validate_section(section, nuclide)  # messages name the section as written
            if nuclide.name != section[len(RADIONUCLIDE_PREFIX):]:
                logger.warning("`[%s]` has name = '%s'; the radionuclide is known (and written) as "
                               "[%s%s]", section, nuclide.name, RADIONUCLIDE_PREFIX, nuclide.name)
            nuclides.append(nuclide)
    params = Parameters(**sections, radionuclides=nuclides, config_path=config_path)
    params.validate()
    if params.energy.radionuclides and not params.radionuclides:
        logger.warning("`energy.radionuclides` = true but there is no [radionuclide_NAME] section: "
                       "no radiogenic heating")
    return params


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


def _is_known_section(name: str) -> bool:
    return name in SCHEMA or (name.startswith(RADIONUCLIDE_PREFIX) and len(name) > len(RADIONUCLIDE_PREFIX))


def _normalise(raw: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Check names, drop/map legacy keys; returns a new ``{section: {key: value}}``."""
    data: dict[str, dict[str, Any]] = {}
    for section, table in raw.items():
        if section in LEGACY_SECTIONS:
            logger.warning("`[%s]` has no effect in this version and is ignored", section)
            continue
        if not _is_known_section(section):
            if not isinstance(table, Mapping):
                raise ConfigError(f"unknown top-level key `{section}`: keys belong in a section such as [solver]")
            raise _unknown_section(section)
        if not isinstance(table, Mapping):
            raise ConfigError(f"`{section}` must be a section ([{section}]), got '{fmt(table)}'")
        data[section] = {}
        for key, value in table.items():
            if (section, key) in LEGACY_IGNORED:
                logger.warning("`%s.%s` has no effect in this version and is ignored", section, key)
            elif (section, key) in LEGACY_MAPPED:
                continue  # below, once all current keys are in
            elif key in keys_of(section):
                data[section][key] = value
            else:
                raise _unknown_key(section, key)
    if "tsurf_poststep_change" in data.get("solver", {}):
        logger.debug("`solver.tsurf_poststep_change` is accepted for compatibility and unused")
    for (section, key), (new_section, new_key) in LEGACY_MAPPED.items():
        if key in raw.get(section, {}):
            _map_legacy(data, section, key, raw[section][key], from_override=False)
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
def _apply_overrides(data: dict[str, dict[str, Any]], overrides: Overrides) -> None:
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
        if (section, key) in LEGACY_MAPPED:
            _map_legacy(data, section, key, value, from_override=True)
            continue
        if not _is_known_section(section):
            raise _unknown_section(section, where)
        if key not in keys_of(section):
            raise _unknown_key(section, key, where)
        if section in SCHEMA and SCHEMA[section][key].kind == "path" and isinstance(value, str):
            value = _resolve_path(value, Path.cwd())
        data.setdefault(section, {})[key] = value
        logger.debug("override %s.%s = %s", section, key, fmt(value))


# ---------------------------------------------------------------------- required keys
def _check_required(data: dict[str, dict[str, Any]]) -> None:
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
