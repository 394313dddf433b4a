"""docs/config.md's key tables are what tools/gen_config_doc.py renders from the schema."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "config.md"
TOOL = REPO / "tools" / "gen_config_doc.py"


def _tool():
    spec = importlib.util.spec_from_file_location("gen_config_doc", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_config_doc_matches_schema() -> None:
    if not DOC.exists() or not TOOL.exists():
        pytest.skip("docs/config.md or tools/gen_config_doc.py not present")
    text = DOC.read_text(encoding="utf-8")
    assert text == _tool().render(text), (
        "docs/config.md differs from the schema: run python tools/gen_config_doc.py")


def test_every_section_has_a_generated_table() -> None:
    gen = _tool()
    from aragog.config import SCHEMA

    text = DOC.read_text(encoding="utf-8")
    blocks = [m for line in text.splitlines() if (m := gen.BEGIN.match(line))]
    named = {n.strip() for m in blocks for n in m["names"].split(",")}
    assert named == {*SCHEMA, gen.RADIONUCLIDE_BLOCK, gen.INERT_BLOCK}  # and the keys acting only under a setting
    assert text.count(gen.END) == len(blocks)


def test_generator_rewrites_a_stale_table_and_keeps_prose() -> None:
    gen = _tool()
    text = DOC.read_text(encoding="utf-8")
    stale = text.replace("| `max_steps` | int | `100000` |", "| `max_steps` | int | `5` |")
    assert stale != text
    assert gen.render(stale) == text
    # A block without its end marker, or an unknown section, is an error, not a silent skip.
    with pytest.raises(SystemExit):
        gen.render("<!-- BEGIN GENERATED: solver -->\n| old |\n")
    with pytest.raises(SystemExit):
        gen.render(text.replace("BEGIN GENERATED: output", "BEGIN GENERATED: outptu"))


def test_float_text_reads_back() -> None:
    gen = _tool()
    for x in (1e-8, 4078.95095544, 260e9, 9.81, 0.0, 1e7, 1.147):
        assert float(gen._float_text(x)) == x
    assert gen._float_text(260e9) == "2.6e11"
