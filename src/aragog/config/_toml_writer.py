"""Writing parameters back as TOML: :func:`to_toml`.

The output is the resolved config — every key, defaults filled in, paths absolute — in
docs/config.md section order. Floats are written with ``repr`` so they read back bit for bit;
legacy keys are never written (they were mapped to current names or ignored).
"""

from __future__ import annotations

import copy
import math
import re
from typing import Any

from aragog.errors import ConfigError

from ._params import Config
from ._schema import keys_of

__all__ = ["to_toml", "toml_value"]

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_ESCAPES = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def _toml_string(text: str) -> str:
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _toml_string(key)


def toml_value(value: Any) -> str:
    """One value as TOML: ``true``, ``80``, ``1e-09``, ``"text"``, ``[0.0, 1.5]``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return float.__repr__(value)  # shortest text that reads back exactly; has '.' or 'e'
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise ConfigError(f"cannot write a {type(value).__name__} value as TOML: {value!r}")


def to_toml(params: Config) -> str:
    """The parameters as a TOML document (every key, defaults included).

    ``load_config`` of the written text gives parameters equal (``==``) to ``params``.
    Unset optional keys (the ``const_*`` keys outside constant-property mode) are omitted.
    A validated copy is written (``params`` itself is not changed), so values a caller
    set (NumPy numbers, ints for floats) are written normalised.

    Raises:
        ConfigError: ``params`` does not validate.
    """
    params = copy.deepcopy(params).validate()
    lines = ["# aragog configuration, resolved: every key, defaults filled in, paths absolute."]
    if params.config_path is not None:
        lines.append(f"# read from {params.config_path}")
    for section, values in params.to_dict().items():
        lines.append("")
        lines.append(f"[{_toml_key(section)}]")
        units = keys_of(section)
        for key, value in values.items():
            line = f"{_toml_key(key)} = {toml_value(value)}"
            unit = units[key].unit
            lines.append(f"{line}  # {unit}" if unit and unit != "-" else line)
    return "\n".join(lines) + "\n"
