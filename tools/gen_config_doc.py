#!/usr/bin/env python
"""Render the key tables of ``docs/config.md`` from ``aragog.config._schema``.

The doc keeps its hand-written prose; each table sits between two marker lines::

    <!-- BEGIN GENERATED: mesh -->
    ... (this tool writes what is here) ...
    <!-- END GENERATED -->

A marker may name several sections that share one key table
(``<!-- BEGIN GENERATED: phase_liquid, phase_solid -->``); ``radionuclide_NAME`` stands
for every ``[radionuclide_*]`` section. Every schema section must have a block.

    python tools/gen_config_doc.py            # rewrite docs/config.md in place
    python tools/gen_config_doc.py --check    # exit 1 (and say where) if it is out of date

``tests/test_config_doc.py`` runs the check, so the doc cannot drift from the schema:
change a key in ``src/aragog/config/_schema.py``, then run this tool.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "config.md"

try:
    from aragog import config
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(REPO / "src"))
    from aragog import config

BEGIN = re.compile(r"^<!-- BEGIN GENERATED: (?P<names>[A-Za-z0-9_, ]+) -->$")
END = "<!-- END GENERATED -->"
RADIONUCLIDE_BLOCK = "radionuclide_NAME"

_KIND_TEXT = {"float": "float", "int": "int", "bool": "bool", "str": "str", "path": "path",
              "floatlist": "float array"}


def _float_text(x: float) -> str:
    """Shortest text that reads back as ``x``: ``1e-08``, ``4078.95095544``, ``2.6e11``."""
    text = repr(float(x))
    if "e" in text or abs(x) < 1e6:
        return text
    for digits in range(17):
        sci = f"{x:.{digits}e}"
        if float(sci) == x:
            mantissa, exponent = sci.split("e")
            return f"{mantissa}e{int(exponent)}"
    return text


def _default_text(key: config.Key) -> str:
    d = key.default
    if key.required:
        return "**required**"
    if d is None:
        return "unset"
    if isinstance(d, bool):
        return f"`{'true' if d else 'false'}`"
    if isinstance(d, str):
        return f'`"{d}"`'
    if isinstance(d, (tuple, list)):
        return "`[" + ", ".join(_float_text(v) for v in d) + "]`"
    if isinstance(d, float):
        return f"`{_float_text(d)}`"
    return f"`{d}`"


def _allowed_text(key: config.Key) -> str:
    if key.choices:
        return key.choices_text()
    text = key.range_text().replace(">=", "≥").replace("<=", "≤")
    if text:
        return text
    if key.kind in ("float", "floatlist"):
        return "finite"
    if key.nonempty:
        return "non-empty"
    return ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_table(keys: dict[str, config.Key]) -> str:
    """The markdown table of one section's keys (no trailing newline)."""
    lines = ["| key | type | default | unit | allowed | meaning |",
             "|---|---|---|---|---|---|"]
    for name, key in keys.items():
        cells = [f"`{name}`", _KIND_TEXT[key.kind], _default_text(key), key.unit,
                 _allowed_text(key), key.doc]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


#: The marker name of the table of keys that act only under another setting
INERT_BLOCK = "used_only_with"


def render_inert_rules() -> str:
    """The markdown table of the schema's ``USED_ONLY_WITH`` (no trailing newline)."""
    from aragog.config._schema import USED_ONLY_WITH  # private: the schema's own rule table

    lines = ["| key | acts only with |", "|---|---|"]
    for name, (other, values) in USED_ONLY_WITH.items():
        wanted = " or ".join(f"`{_value_text(v)}`" for v in values)
        lines.append(f"| `{name}` | `{other}` = {wanted} |")
    return "\n".join(lines)


def _value_text(value) -> str:
    return str(value).lower() if isinstance(value, bool) else (f'"{value}"' if isinstance(value, str) else str(value))


def _keys_for(names: list[str]) -> dict[str, config.Key]:
    tables = []
    for name in names:
        if name == RADIONUCLIDE_BLOCK:
            tables.append(config.RADIONUCLIDE_KEYS)
        elif name in config.SCHEMA:
            tables.append(config.SCHEMA[name])
        else:
            raise SystemExit(f"docs/config.md: generated block names unknown section {name!r}")
    if any(t != tables[0] for t in tables[1:]):
        raise SystemExit(f"docs/config.md: the sections {names} of one block have different keys")
    return tables[0]


def render(text: str) -> str:
    """``text`` (the doc) with every generated block rewritten from the schema."""
    out: list[str] = []
    seen: set[str] = set()
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        match = BEGIN.match(line)
        if not match:
            continue
        names = [n.strip() for n in match["names"].split(",") if n.strip()]
        seen.update(names)
        while i < len(lines) and lines[i] != END:
            if BEGIN.match(lines[i]):
                raise SystemExit(f"docs/config.md: line {i + 1}: BEGIN GENERATED inside a block")
            i += 1
        if i == len(lines):
            raise SystemExit(f"docs/config.md: block {names} has no {END!r}")
        out.append(render_inert_rules() if names == [INERT_BLOCK] else render_table(_keys_for(names)))
        out.append(END)
        i += 1
    missing = [s for s in [*config.SCHEMA, RADIONUCLIDE_BLOCK] if s not in seen]
    if missing:
        raise SystemExit(f"docs/config.md: no generated table for {missing}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 if out of date")
    parser.add_argument("--doc", type=Path, default=DOC, help="the doc (default: docs/config.md)")
    args = parser.parse_args(argv)
    current = args.doc.read_text(encoding="utf-8")
    wanted = render(current)
    if current == wanted:
        print(f"{args.doc}: up to date")
        return 0
    if args.check:
        diff = difflib.unified_diff(current.splitlines(), wanted.splitlines(),
                                    "docs/config.md", "generated", lineterm="")
        print("\n".join(diff))
        print(f"{args.doc} is out of date: run python tools/gen_config_doc.py")
        return 1
    args.doc.write_text(wanted, encoding="utf-8")
    print(f"{args.doc}: rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
