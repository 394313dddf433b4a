"""Reading a config file: TOML or INI syntax, then the checks of :meth:`Config.from_dict`.

:func:`load_config` is the entry point. The syntax follows the file name:

* ``.toml`` (and any other or no extension): TOML (:mod:`tomllib`);
* ``.cfg``, ``.ini``: INI, as earlier aragog versions wrote them (:mod:`._ini`: Python's
  :mod:`configparser`, values typed by the schema).

Both give the same ``{section: {key: value}}`` dict (:func:`read_config_file`), which
:meth:`Config.from_dict` checks and completes (:mod:`._normalise`: names, legacy keys,
paths relative to the config file's folder, overrides, required keys; then types,
ranges and consistency). So both syntaxes have the same keys, defaults and errors; an
error about the content is prefixed with the file's name.

Imports run one way: schema → normalise → params → loader.
"""

from __future__ import annotations

import logging
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aragog.errors import ConfigError

from ._ini import read_ini
from ._normalise import Overrides, parse_overrides
from ._params import Config

__all__ = ["load_config", "read_config_file", "config_syntax", "parse_overrides", "build_parameters",
           "INI_SUFFIXES"]

logger = logging.getLogger("aragog.config")

#: File name endings read as INI (case-insensitive); everything else is TOML.
INI_SUFFIXES = (".cfg", ".ini")


def config_syntax(path: str | os.PathLike) -> str:
    """``"ini"`` for a ``.cfg`` / ``.ini`` file name, else ``"toml"``."""
    return "ini" if Path(path).suffix.lower() in INI_SUFFIXES else "toml"


def read_config_file(path: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """The sections of a config file as ``{section: {key: value}}``, either syntax.

    TOML values come as TOML types; INI values are converted by the schema's kinds (a
    value that does not convert, or an unknown key, is kept as text for the checks to
    report). Names are not checked and defaults not filled in: pass the result to
    :meth:`Config.from_dict` (with ``base_dir`` = the file's folder) for that — which
    is what :func:`load_config` does.

    Raises:
        ConfigError: a missing or unreadable file, or a syntax error (naming the file and
            the line).
    """
    path = Path(path).expanduser()
    syntax = config_syntax(path)
    try:
        if syntax == "ini":
            if path.is_dir():
                raise IsADirectoryError(path)
            if not path.exists():
                raise FileNotFoundError(path)
            return read_ini(path)
        with open(path, "rb") as stream:
            return tomllib.load(stream)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except IsADirectoryError:
        raise ConfigError(f"config file is a directory: {path}") from None
    except tomllib.TOMLDecodeError as exc:
        hint = "" if path.suffix.lower() == ".toml" else " (read as TOML; a .cfg or .ini file is read as INI)"
        raise ConfigError(f"{path}: TOML syntax error: {exc}{hint}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None


def load_config(path: str | os.PathLike, overrides: Overrides = None) -> Config:
    """Read, complete and validate an aragog config file (TOML, or INI for ``.cfg``/``.ini``).

    Args:
        path: the config file.
        overrides: ``{"mesh.number_of_nodes": 80}`` or strings ``"mesh.number_of_nodes=80"``
            (values parsed as TOML values; a bare word is a string).

    Returns:
        Validated :class:`Config` with every default filled in and ``config_path`` set.

    Raises:
        ConfigError: a missing or unreadable file, a syntax error (with the line), or any
            invalid key or value; one line naming the file and the key.
    """
    path = Path(path).expanduser()
    raw = read_config_file(path)
    config_path = path.resolve()
    try:
        params = Config.from_dict(raw, base_dir=config_path.parent, overrides=overrides,
                                      config_path=config_path)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    logger.debug("loaded %s (%s)", config_path, config_syntax(path))
    return params


def build_parameters(
    raw: Mapping[str, Any],
    base_dir: str | os.PathLike | None = None,
    overrides: Overrides = None,
    config_path: Path | None = None,
) -> Config:
    """Build validated :class:`Config` from a config-shaped dict
    (:meth:`Config.from_dict`; kept under this name for callers of earlier versions)."""
    return Config.from_dict(raw, base_dir=base_dir, overrides=overrides, config_path=config_path)
