"""The commands and snippets of README.md and docs/ run as written (issue 38, item 5).

Every ```bash and ```python block of README.md and docs/*.md carries a marker on the line
above it: ``<!-- docs-test: run -->`` (this test runs it, unchanged) or ``<!-- docs-test:
skip: REASON -->`` (minutes of integration, a cluster, an install, or names that stand for
the reader's own files). A block without a marker fails the test, so a new example is run
or says why not; a marked block that stops working fails it too. The blocks run in a
scratch folder where ``input/`` and ``tests/`` are the repository's, and where
``earth.nc`` and ``out/earth.nc`` are a run of the toy planet to 1 Myr at 20 nodes (what
the reading snippets of docs/output.md open). Backticked names ``aragog.x.y`` in the docs
must resolve to an attribute of an importable aragog module.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```(bash|python)\n(.*?)^```", re.S | re.M)
MARKER = re.compile(r"<!-- docs-test: (run|skip: .+?) -->\n$")


def _blocks() -> list[tuple[str, int, str, str, str]]:
    """``(file, line, language, marker, body)`` of every bash and python block."""
    out = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for m in BLOCK.finditer(text):
            before = text[:m.start()]
            line = before.count("\n") + 1
            last = before[before.rstrip("\n").rfind("\n") + 1:]
            mark = MARKER.search(last)
            out.append((path.name if path.parent == ROOT else f"docs/{path.name}", line, m.group(1),
                        mark.group(1) if mark else "", m.group(2)))
    return out


BLOCKS = _blocks()
RUN = [b for b in BLOCKS if b[3] == "run"]


def test_every_example_is_run_or_says_why_not():
    unmarked = [f"{f}:{line}" for f, line, _, mark, _ in BLOCKS if not mark]
    assert not unmarked, f"blocks without a docs-test marker: {unmarked}"
    assert len(RUN) >= 8  # the number this test runs (the closing note of issue 38 names it)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """A folder with the repository's input/ and tests/ and a short run as earth.nc."""
    where = tmp_path_factory.mktemp("docs")
    for name in ("input", "tests"):
        (where / name).symlink_to(ROOT / name)
    done = subprocess.run([sys.executable, "-m", "aragog", "run", str(ROOT / "tests" / "earth_toy.toml"),
                           "--set", "mesh.number_of_nodes=20", "--out", "earth.nc", "--quiet"],
                          cwd=where, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    (where / "out").mkdir()
    shutil.copy(where / "earth.nc", where / "out" / "earth.nc")
    return where


def _env() -> dict:
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), "MPLBACKEND": "Agg"}


@pytest.mark.parametrize("block", RUN, ids=[f"{b[0]}:{b[1]}" for b in RUN])
def test_example_runs_as_written(block, scratch):
    file, line, language, _, body = block
    if language == "bash":
        cmd = ["bash", "-e", "-c", body]
    else:
        cmd = [sys.executable, "-c", body]
    done = subprocess.run(cmd, cwd=scratch, capture_output=True, text=True, timeout=300, env=_env())
    assert done.returncode == 0, f"{file}:{line} failed:\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr, f"{file}:{line}:\n{done.stderr[-3000:]}"


NAME = re.compile(r"`(aragog(?:\.[A-Za-z_][A-Za-z0-9_]*)+)`")
#: names the docs give as the upstream aragog's, which this package refuses by name
UPSTREAM_ONLY = {"aragog.core"}  # docs/compat.md: the upstream's core module


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def test_names_in_the_docs_resolve():
    """A backticked ``aragog.…`` name is a module or an attribute one can import (e.g. the
    docs once named ``aragog.eos.DEFAULT_SIZES``, which lived only in a private module)."""
    missing = []
    for path in DOCS:
        for name in sorted(set(NAME.findall(path.read_text(encoding="utf-8"))) - UPSTREAM_ONLY):
            if not name.endswith((".py", ".toml", ".md")) and not _resolves(name):
                missing.append(f"{path.name}: {name}")
    assert not missing, missing
