"""The grid stack (distributed, dask-jobqueue, xarray, tqdm) is an extra,
``pip install ".[grid]"``: the default install has none of it, nothing outside
``aragog grid`` imports it, and without it ``aragog grid`` says in one line what to
install (aragog/grid/_extra.py)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tomllib

import pytest

from aragog.cli import main
from conftest import REPO

GRID_STACK = ("distributed", "dask-jobqueue", "xarray", "tqdm")


def _name(requirement: str) -> str:
    for sep in "<>=!~[; ":
        requirement = requirement.split(sep)[0]
    return requirement.strip().lower()


def test_default_dependencies_leave_out_the_grid_stack():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    default = {_name(r) for r in project["dependencies"]}
    assert not default & set(GRID_STACK), default & set(GRID_STACK)
    assert {_name(r) for r in project["optional-dependencies"]["grid"]} == set(GRID_STACK)


def test_importing_aragog_imports_none_of_it():
    code = ("import sys, aragog, aragog.cli, aragog.grid, aragog.solver; "
            "print(sorted(m for m in ('distributed', 'dask', 'dask_jobqueue', 'xarray', 'tqdm') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.fixture
def without_xarray(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a, **k: None if name == "xarray" else real(name, *a, **k))


@pytest.mark.parametrize("argv", [["grid", "collect", "somewhere"], ["grid", "plot", "somewhere"],
                                  ["grid", "run", "grid.toml"]])
def test_grid_commands_say_what_to_install(argv, without_xarray, capsys):
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("aragog: error: aragog grid "), err
    assert "xarray" in err[0] and 'pip install ".[grid]" (in a clone of aragog)' in err[0]


def test_the_python_api_says_it_too(without_xarray):
    import aragog.grid
    from aragog.errors import AragogError

    with pytest.raises(AragogError, match=r'aragog\.grid\.collect_grid needs xarray.*pip install "\.\[grid\]"'):
        aragog.grid.collect_grid  # noqa: B018 - the attribute access is what is tested
