"""One copy of each rule (refactoring issue, part 5).

- ``energy.tidal_array``'s length and ``eos.model``'s name are checked in
  :meth:`aragog.config.Config.validate` only: a config file, ``aragog validate`` and
  :class:`~aragog.solver.EntropySolver` all report the same :class:`ConfigError` line.
- Atomic writes have one implementation, :mod:`aragog._atomic` (re-exported by
  :mod:`aragog.io._atomic`; the EOS writer and ``aragog show-config -o`` use it): a unique
  temporary file beside the target, ``os.replace``, nothing left behind on failure.
- ``config/_loader.py`` and ``config/_params.py`` import one way (loader -> params).
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import aragog._atomic as shared  # private: the shared atomic writer, checked to be the one copy
import aragog.io._atomic as io_atomic  # private: checked to re-export the shared writer
from aragog import eos, validation
from aragog.cli import main
from aragog.config import load_config
from aragog.config._params import BUNDLED_EOS_MODELS  # private: config's model names, checked against eos's
from aragog.errors import AragogError, ConfigError, EOSError
from aragog.eos import _spider_format as spider_format  # private: checked to write through the shared writer
from aragog.solver import EntropySolver
from aragog.solver import _from_config  # private: tidal_per_cell, checked alone

from _configs import TOY_EARTH

SRC = Path(__file__).resolve().parents[1] / "src" / "aragog"
EARTH = TOY_EARTH

TIDAL_TEXT = "`energy.tidal_array` has 3 values; give 1 (all cells) or 19 (mesh.number_of_nodes - 1, one per cell)"
MODEL_TEXT = "eos.model: unknown bundled model 'nope'; available: default, mgsio3"
#: (override, the one message) per rule; 20 nodes = 19 cells.
RULES = [
    (["mesh.number_of_nodes=20", "energy.tidal = true", "energy.tidal_array=[1e-9, 2e-9, 3e-9]"], TIDAL_TEXT),
    (["mesh.number_of_nodes=20", 'eos.model="nope"'], MODEL_TEXT),
]


def _files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# ---------------------------------------------------------------- one place per rule
@pytest.mark.parametrize("overrides, message", RULES)
def test_rule_raised_by_load_config(overrides, message):
    with pytest.raises(ConfigError) as info:
        load_config(EARTH, overrides=overrides)
    assert str(info.value) == f"{EARTH}: {message}"  # load_config names the file


@pytest.mark.parametrize("overrides, message", RULES)
def test_rule_raised_by_aragog_validate(overrides, message, capsys):
    args = ["validate", str(EARTH)]
    for item in overrides:
        args += ["--set", item]
    assert main(args) == 1
    assert capsys.readouterr().err.strip() == f"aragog: error: {EARTH}: {message}"


def _bad_tidal(params):
    params.energy.tidal = True
    params.energy.tidal_array = [1e-9, 2e-9, 3e-9]


def _bad_model(params):
    params.eos.model = "nope"


@pytest.mark.parametrize("spoil, message", [(_bad_tidal, TIDAL_TEXT), (_bad_model, MODEL_TEXT)])
def test_rule_raised_by_solver_and_check_inputs(spoil, message):
    # the same change made on the objects after loading (as a coupling framework does)
    params = load_config(EARTH, overrides=["mesh.number_of_nodes=20"])
    spoil(params)
    with pytest.raises(ConfigError) as info:
        EntropySolver(params).reset()  # validate() runs first: nothing is built or compiled
    assert str(info.value) == message
    with pytest.raises(ConfigError) as info:
        validation.check_inputs(params, rhs=False)
    assert str(info.value) == message


def test_tidal_length_checked_even_with_tidal_off():
    # validate() checks the length whatever energy.tidal says (validation.py's copy only
    # checked it with tidal on, and was never reached: validate() ran first).
    with pytest.raises(ConfigError, match=r"`energy\.tidal_array` has 2 values"):
        load_config(EARTH, overrides=["energy.tidal = false", "energy.tidal_array=[1e-9, 2e-9]"])


def test_the_rules_live_only_in_params():
    """config/_params.py states each rule once; validation.py and solver/_from_config.py (which
    run on validated parameters) no longer repeat them."""
    params = (SRC / "config" / "_params.py").read_text(encoding="utf-8")
    assert params.count("unknown bundled model") == 1 and params.count("tidal_array` has") == 1
    for rel in ("validation.py", "solver/_from_config.py"):
        text = (SRC / rel).read_text(encoding="utf-8")
        assert "BUNDLED_MODELS" not in text and "unknown bundled model" not in text, rel
        assert "values; give 1" not in text, rel


def test_config_and_eos_name_the_same_models():
    # config cannot import eos (eos sits above it); the two lists must agree.
    assert set(BUNDLED_EOS_MODELS) == set(eos.BUNDLED_MODELS)


def test_direct_eos_call_keeps_its_own_error():
    with pytest.raises(EOSError, match="unknown bundled EOS model 'nope'"):
        eos.default_table_set(model="nope")


def test_tidal_per_cell_broadcasts():
    params = load_config(EARTH, overrides=["mesh.number_of_nodes=5", "energy.tidal_array=[2e-9]"])
    assert _from_config.tidal_per_cell(params, 4).tolist() == [2e-9] * 4
    params.energy.tidal_array = [1e-9, 2e-9, 3e-9, 4e-9]
    assert _from_config.tidal_per_cell(params.validate(), 4).tolist() == [1e-9, 2e-9, 3e-9, 4e-9]


# ---------------------------------------------------------------- one atomic writer
def test_io_atomic_is_the_shared_helper():
    assert io_atomic.atomic_output is shared.atomic_output
    assert io_atomic.write_text_atomically is shared.write_text_atomically
    assert io_atomic.TEMP_SUFFIX == shared.TEMP_SUFFIX
    assert spider_format.write_text_atomically is shared.write_text_atomically


def test_no_other_atomic_writer():
    """Only aragog/_atomic.py (and the executable store, whose failed writes are warnings) call os.replace
    on a temporary file; the EOS cache's directory rename (eos/_bundled.py) is not a file write."""
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).as_posix()
        text = path.read_text(encoding="utf-8")
        if rel in ("_atomic.py", "_executable_store.py"):
            continue
        assert "os.replace(" not in text and ".replace(path)" not in text, rel


def test_failure_leaves_no_temporary_and_no_half_target(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old contents\n")

    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        with shared.atomic_output(target, "test file") as tmp:
            assert tmp.parent == tmp_path and tmp.name.startswith(".out.txt.") and tmp.name.endswith(".tmp")
            tmp.write_text("half of the new")
            raise Boom
    assert target.read_text() == "old contents\n"
    assert _files(tmp_path) == ["out.txt"]

    # an encoding failure mid-write: the same
    with pytest.raises(UnicodeEncodeError):
        shared.write_text_atomically(target, "ascii then \u00e9", "test file", encoding="ascii")
    assert target.read_text() == "old contents\n"
    assert _files(tmp_path) == ["out.txt"]


def test_failed_rename_leaves_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "out.txt"

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied", str(dst))

    monkeypatch.setattr(shared.os, "replace", refuse)
    with pytest.raises(AragogError, match=r"cannot write test file .*Permission denied"):
        shared.write_text_atomically(target, "new\n", "test file")
    assert _files(tmp_path) == []


def test_temporary_names_are_unique(tmp_path):
    target = tmp_path / "out.txt"
    with shared.atomic_output(target, "a") as first, shared.atomic_output(target, "b") as second:
        assert first != second and first.exists() and second.exists()
        first.write_text("first\n")
        second.write_text("second\n")
    # the inner one is renamed first, the outer one last
    assert target.read_text() == "first\n" and _files(tmp_path) == ["out.txt"]


def test_success_writes_whole_file(tmp_path):
    target = tmp_path / "out.txt"
    assert shared.write_text_atomically(target, "line\n" * 1000, "test file") == target
    assert target.read_text() == "line\n" * 1000 and _files(tmp_path) == ["out.txt"]


def test_eos_table_write_uses_helper_and_raises_eos_error(tmp_path):
    P, S = np.linspace(0.0, 1e9, 3), np.linspace(100.0, 300.0, 2)
    Q = np.ones((2, 3))
    spider_format.write_table_2d(tmp_path / "q.dat", P, S, Q)
    assert _files(tmp_path) == ["q.dat"]
    with pytest.raises(EOSError, match="does not exist"):
        spider_format.write_table_2d(tmp_path / "missing" / "q.dat", P, S, Q)


def test_show_config_output_uses_helper(tmp_path, monkeypatch, capsys):
    out = tmp_path / "resolved.toml"
    out.write_text("previous\n")
    calls = []
    real = shared.write_text_atomically

    def spy(path, text, what, **kwargs):
        calls.append(Path(path))
        return real(path, text, what, **kwargs)

    monkeypatch.setattr(shared, "write_text_atomically", spy)
    assert main(["show-config", str(EARTH), "-o", str(out)]) == 0
    assert calls == [out]
    assert "[mesh]" in out.read_text() and _files(tmp_path) == ["resolved.toml"]

    # a failure (the rename refused) leaves the old file whole and no temporary file
    # (the old copy in cli.py used a fixed name, .resolved.toml.tmp, and left it behind)
    out.write_text("previous\n")

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied", str(dst))

    monkeypatch.setattr(shared.os, "replace", refuse)
    assert main(["show-config", str(EARTH), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"aragog: error: cannot write config '{out}': Permission denied" in err and "Traceback" not in err
    assert out.read_text() == "previous\n"
    assert _files(tmp_path) == ["resolved.toml"]


# ---------------------------------------------------------------- config imports one way
def _imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, at any level (function bodies too), relative ones as
    ``.name``."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            names.add(base)
            if node.module is None:  # from . import x
                names.update(f".{alias.name}" for alias in node.names)
    return names


def test_config_loader_and_params_import_one_way():
    loader = _imported_modules(SRC / "config" / "_loader.py")
    params = _imported_modules(SRC / "config" / "_params.py")
    assert "._params" in loader or "aragog.config._params" in loader
    assert not {"._loader", "aragog.config._loader", "aragog.config"} & params, params
