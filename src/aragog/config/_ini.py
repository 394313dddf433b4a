"""INI (``.cfg`` / ``.ini``) config files: read with :mod:`configparser`, typed by the schema.

Earlier aragog versions read their configs as INI files (``[section]`` headers,
``key = value`` lines). They carry the same sections and keys as the TOML files, so an
INI file is read into the same ``{section: {key: value}}`` dict a TOML file gives and then
goes through exactly the same checks (:meth:`aragog.config.Config.from_dict`).

INI values are text. Each is converted by the kind of its key in :mod:`._schema`:

* bool: ``true/false``, ``yes/no``, ``on/off``, ``1/0`` in any case (as
  :meth:`configparser.ConfigParser.getboolean` reads them);
* int: ``80`` (an integral float such as ``1e2`` is accepted later, as in TOML);
* float: anything :class:`float` reads: ``1E21``, ``260E9``, ``4.55e9``;
* str and path: the text as written; one pair of enclosing quotes is removed;
* list of floats (``energy.tidal_array``): numbers separated by commas or blanks,
  optionally in ``[ ]``.

A value that does not convert is kept as text, so the check that follows reports it
exactly as it reports a wrong value in a TOML file ("`mesh.number_of_nodes` must be an
integer, got 'abc'"), and an override of that key still replaces it first. Keys are matched
case-insensitively (as configparser does); legacy keys are typed by the key they map to;
unknown keys keep their text and are rejected later with the nearest valid name.

Syntax: ``#`` and ``;`` start comment lines and, after a blank, inline comments; values
may continue on indented lines; no ``%`` interpolation; a ``[DEFAULT]`` section is not
special (it is reported as an unknown section). Duplicate sections or keys are errors.
"""

from __future__ import annotations

import ast
import configparser
import os
import re
from typing import Any

from aragog.errors import ConfigError

from ._schema import LEGACY_IGNORED_AT, LEGACY_MAPPED, RADIONUCLIDE_PREFIX, SCHEMA, Key, keys_of

__all__ = ["read_ini", "parse_ini_text", "coerce_ini_section"]

#: configparser's words for booleans (``ConfigParser.BOOLEAN_STATES``).
_BOOLEANS = configparser.ConfigParser.BOOLEAN_STATES
_NO_DEFAULT_SECTION = "\x00aragog: no default section"
_LIST_SPLIT = re.compile(r"[\s,]+")


def _parser() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(
        interpolation=None,
        strict=True,
        comment_prefixes=("#", ";"),
        inline_comment_prefixes=("#", ";"),
        default_section=_NO_DEFAULT_SECTION,
        empty_lines_in_values=False,
    )
    parser.optionxform = str  # keep the case; keys are matched case-insensitively below
    return parser


def parse_ini_text(text: str, source: str = "<string>") -> dict[str, dict[str, Any]]:
    """Parse INI ``text`` into ``{section: {key: typed value}}`` (see module docstring).

    Raises:
        ConfigError: an INI syntax error, a duplicate section or key (one line naming
            ``source`` and the line).
    """
    parser = _parser()
    try:
        parser.read_string(text, source=source)
    except configparser.MissingSectionHeaderError as exc:
        raise ConfigError(f"{source}: line {exc.lineno}: `{exc.line.strip()}` is outside any "
                          "[section]; the file must start with a section header such as [solver]") from None
    except configparser.DuplicateSectionError as exc:
        raise ConfigError(f"{source}: line {exc.lineno}: section `[{exc.section}]` appears twice") from None
    except configparser.DuplicateOptionError as exc:
        raise ConfigError(f"{source}: line {exc.lineno}: key `{exc.section}.{exc.option}` appears twice") from None
    except configparser.ParsingError as exc:
        lineno, line = exc.errors[0]
        if line[:1] in "'\"":  # configparser stores the line's repr
            try:
                line = ast.literal_eval(line)
            except (ValueError, SyntaxError):
                pass
        raise ConfigError(f"{source}: INI syntax error at line {lineno}: {line.strip()!r} "
                          "(expected `key = value` or a [section] header)") from None
    except configparser.Error as exc:
        raise ConfigError(f"{source}: INI syntax error: {' '.join(str(exc).split())}") from None
    try:
        return {name: coerce_ini_section(name, dict(parser.items(name))) for name in parser.sections()}
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def read_ini(path: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """Read an INI config file into ``{section: {key: typed value}}``.

    Raises:
        ConfigError: unreadable file, not UTF-8, or an INI syntax error (naming the file).
    """
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as stream:
            text = stream.read()
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return parse_ini_text(text, source=path)


def _key_table(section: str) -> dict[str, Key] | None:
    if section in SCHEMA or (section.startswith(RADIONUCLIDE_PREFIX) and len(section) > len(RADIONUCLIDE_PREFIX)):
        return keys_of(section)
    return None


def _legacy_kind(section: str, key: str) -> str | None:
    if (section, key) == ("energy", "use_jax_jacobian"):
        return "bool"
    if (section, key) in LEGACY_IGNORED_AT:  # typed like the value it is ignored at
        return "bool" if isinstance(LEGACY_IGNORED_AT[(section, key)][0], bool) else None
    target = LEGACY_MAPPED.get((section, key))
    return SCHEMA[target[0]][target[1]].kind if target else None


def coerce_ini_section(section: str, items: dict[str, str]) -> dict[str, Any]:
    """Type the text values of one INI section by the schema (unknown keys keep their text)."""
    keys = _key_table(section)
    legacy = {k for s, k in (*LEGACY_MAPPED, *LEGACY_IGNORED_AT) if s == section}
    known = {k.lower(): k for k in [*(keys or {}), *legacy]}
    out: dict[str, Any] = {}
    for name, text in items.items():
        key = name if keys is not None and name in keys else known.get(name.lower(), name)
        kind = keys[key].kind if keys is not None and key in keys else _legacy_kind(section, key)
        if key in out:
            raise ConfigError(f"key `{section}.{key}` appears twice (as `{key}` and `{name}`)")
        out[key] = convert(text, kind) if kind else text
    return out


def convert(text: str, kind: str) -> Any:
    """Convert INI ``text`` to the Python type of a schema ``kind``; the text if it does not
    convert (the schema check then reports it)."""
    text = text.strip()
    if kind == "bool":
        return _BOOLEANS.get(text.lower(), text)
    if kind == "int":
        try:
            return int(text)
        except ValueError:
            return _to_float(text)
    if kind == "float":
        return _to_float(text)
    if kind == "floatlist":
        inner = text[1:-1] if text.startswith("[") and text.endswith("]") else text
        parts = [p for p in _LIST_SPLIT.split(inner.strip()) if p]
        values = [_to_float(p) for p in parts]
        return values if parts and all(isinstance(v, float) for v in values) else text
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def _to_float(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text
