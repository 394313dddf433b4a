"""One home for field metadata (aragog.fields) and for the version (aragog._version).

* ``aragog.fields`` is light: importing it starts neither JAX nor the solver;
* ``aragog.io`` takes its field metadata from there: no io module imports the solver at
  module level, and none imports ``aragog.solver._output`` at all;
* the structure's and the solver's metadata are the very objects of ``aragog.fields``;
* the version written into a netCDF file is ``aragog._version.__version__``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import netCDF4
import pytest

import aragog
import aragog._version  # private: RELEASE and _installed_version, the version's one home
import aragog.fields as fields
import aragog.io
from aragog.io import RunHistory, write_netcdf

SRC = Path(aragog.__file__).parent

# Modules of aragog.io allowed a module-level import of the solver, with the names they may
# import: none (the solver builds its RunHistory itself, aragog.solver._history).
ALLOWED_SOLVER_IMPORTS: dict[str, set[str]] = {}


def _run(code: str) -> None:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("module", ["aragog.fields", "aragog.io"])
def test_import_loads_neither_jax_nor_the_solver(module):
    _run(
        f"import sys, {module}\n"
        "loaded = sorted(m for m in sys.modules if m == 'jax' or m.startswith(('jax.', 'aragog.solver')))\n"
        f"assert not loaded, '{module} loaded ' + ', '.join(loaded)\n"
    )


def _module_level(tree: ast.Module):
    """Every statement run when the module is imported (not function bodies)."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        yield node
        todo.extend(ast.iter_child_nodes(node))


def _imported(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0:
        return [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
    return []


def _is_solver(name: str) -> bool:
    return name == "aragog.solver" or name.startswith("aragog.solver.")


def test_io_never_imports_the_solver_at_module_level():
    for source in sorted((SRC / "io").glob("*.py")):
        tree = ast.parse(source.read_text())
        allowed = ALLOWED_SOLVER_IMPORTS.get(source.name, set())
        for node in _module_level(tree):
            for name in _imported(node):
                if _is_solver(name):
                    assert any(name == a or name.startswith(a + ".") for a in allowed), (
                        f"aragog/io/{source.name}:{node.lineno} imports {name} at module level")
        # Field metadata comes from aragog.fields, also inside functions.
        for node in ast.walk(tree):
            for name in _imported(node):
                if name.startswith("aragog.solver._output") and source.name not in ALLOWED_SOLVER_IMPORTS:
                    raise AssertionError(f"aragog/io/{source.name}:{node.lineno} imports {name}")


def test_fields_imports_only_the_standard_library():
    tree = ast.parse((SRC / "fields.py").read_text())
    for node in ast.walk(tree):
        for name in _imported(node):
            assert name.split(".")[0] in {"__future__", "typing"}, name


def test_structure_solver_and_io_share_the_fields_objects():
    import aragog._run_history  # private: checked to hold aragog.fields' objects
    import aragog.io._netcdf  # private: checked to hold aragog.fields' objects
    import aragog.solver
    import aragog.solver._output as output  # private: checked to hold aragog.fields' objects
    import aragog.structure
    import aragog.structure._geometry as geometry  # private: checked to hold aragog.fields' objects

    for name in ("FieldMeta", "FIELD_META", "STAGGERED_FIELDS", "BASIC_FIELDS", "SCALAR_FIELDS"):
        assert getattr(output, name) is getattr(fields, name), name
    assert aragog.solver.FIELD_META is fields.FIELD_META
    assert geometry.MESH_FIELDS is fields.MESH_FIELDS
    assert aragog.structure.MESH_FIELDS is fields.MESH_FIELDS
    assert geometry.FieldDoc is fields.FieldMeta and aragog.structure.FieldDoc is fields.FieldMeta
    for module in (aragog._run_history, aragog.io._netcdf):
        assert module.FIELD_META is fields.FIELD_META and module.FieldMeta is fields.FieldMeta, module.__name__


def test_one_record_type_with_dims_and_shapes():
    for table in (fields.FIELD_META, fields.MESH_FIELDS):
        for name, meta in table.items():
            assert type(meta) is fields.FieldMeta and meta.dim in fields.DIMS, name
            assert meta.units and meta.long_name, name
    assert fields.MESH_FIELDS["r_basic"].shape == "(N+1,)"
    assert fields.MESH_FIELDS["r_stag"].shape == "(N,)"
    assert fields.MESH_FIELDS["inner_radius"].shape == "()"
    assert fields.FIELD_META["T_stag"] == ("staggered", "K", "temperature of the cells")
    for dim, names in (("staggered", fields.STAGGERED_FIELDS), ("basic", fields.BASIC_FIELDS),
                       ("scalar", fields.SCALAR_FIELDS)):
        assert names == tuple(k for k, m in fields.FIELD_META.items() if m.dim == dim)


# --------------------------------------------------------------------------------------
# the version
# --------------------------------------------------------------------------------------


def test_the_version_has_one_home():
    import aragog.cli

    version = aragog._version.__version__
    assert aragog.__version__ is version and aragog.cli.__version__ is version
    assert aragog._version.RELEASE.count(".") == 2


def test_version_from_metadata_else_the_release(monkeypatch):
    monkeypatch.setattr(metadata, "version", lambda name: "26.12.1")
    assert aragog._version._installed_version("fallback") == "26.12.01"  # calendar form again

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    assert aragog._version._installed_version("26.01.02") == "26.01.02"


def test_the_build_reads_the_release_statically():
    expand = pytest.importorskip("setuptools.config.expand")
    root = SRC.parent.parent
    if not (root / "pyproject.toml").is_file():
        pytest.skip("not a source checkout")
    assert expand.read_attr("aragog._version.__version__", {"": "src"}, str(root)) == aragog._version.RELEASE


def test_written_file_carries_the_version(tmp_path):
    h = RunHistory(time=[0.0, 10.0], r_stag=[1.0, 2.0], r_basic=[0.5, 1.5, 2.5],
                   scalars={"T_magma": [3000.0, 2900.0]})
    path = write_netcdf(tmp_path / "run.nc", h)
    version = aragog._version.__version__
    with netCDF4.Dataset(path) as ds:
        assert ds.source == f"aragog {version}"
        assert ds.history.endswith(f": written by aragog {version} (aragog.io.write_netcdf)")
