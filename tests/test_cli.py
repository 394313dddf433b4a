"""The ``aragog`` command: exit codes, one-line errors without tracebacks, round trips."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from aragog.cli import main
from aragog.config import load_config

from conftest import INPUT
from _configs import TOY_EARTH


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """Run ``python -m aragog`` in a subprocess, as a user would."""
    return subprocess.run([sys.executable, "-m", "aragog", *args], capture_output=True, text=True, timeout=300)


def assert_one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("aragog: error:")]
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_version():
    proc = run_cli("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("aragog ")


@pytest.mark.parametrize("name", ["earth.toml", "constant_properties.toml"])
def test_validate_bundled_configs(name, capsys):
    assert main(["validate", str(INPUT / name)]) == 0
    out = capsys.readouterr().out
    assert "OK" in out and "mesh:" in out and "EOS:" in out


def test_validate_with_override(capsys):
    assert main(["validate", str(TOY_EARTH), "--set", "mesh.number_of_nodes=21"]) == 0
    assert "20 cells" in capsys.readouterr().out


def test_validate_missing_file_no_traceback(tmp_path):
    assert_one_line_error(run_cli("validate", str(tmp_path / "nope.toml")), "nope.toml")


def test_validate_bad_override_names_key():
    proc = run_cli("validate", str(TOY_EARTH), "--set", "mesh.inner_radius=7e6")
    assert_one_line_error(proc, "mesh.inner_radius", "mesh.outer_radius")


def test_validate_unknown_key_suggests(tmp_path):
    text = TOY_EARTH.read_text().replace("number_of_nodes", "number_of_node")
    cfg = tmp_path / "typo.toml"
    cfg.write_text(text)
    assert_one_line_error(run_cli("validate", str(cfg)), "number_of_node", "did you mean")


def test_validate_structure_file_not_covering_mesh(tmp_path):
    r = np.linspace(4.0e6, 6.371e6, 50)  # starts above the CMB radius of the demo (3.504e6 m)
    table = np.column_stack([r, 1e9 * (6.371e6 - r) / 1e5, np.full_like(r, 4500.0), np.full_like(r, 9.8)])
    np.savetxt(tmp_path / "structure.txt", table, header="r P rho g")
    proc = run_cli(
        "validate", str(TOY_EARTH), "--set", "mesh.eos_method=2",
        "--set", f"mesh.eos_file={tmp_path / 'structure.txt'}",
    )
    assert_one_line_error(proc, "structure.txt")


def test_validate_init_file(tmp_path, capsys):
    cfg = TOY_EARTH
    n_cells = load_config(cfg).mesh.number_of_nodes - 1
    good = tmp_path / "s_init.txt"
    np.savetxt(good, np.full(n_cells, 3000.0))
    overrides = ["--set", "initial_condition.initial_condition=2", "--set", f"initial_condition.init_file={good}"]
    assert main(["validate", str(cfg), *overrides]) == 0
    bad = tmp_path / "short.txt"
    np.savetxt(bad, np.full(n_cells - 1, 3000.0))
    overrides[-1] = f"initial_condition.init_file={bad}"
    assert_one_line_error(run_cli("validate", str(cfg), *overrides), "short.txt", f"{n_cells} cells")


def test_validate_real_table_dir(rtmelt_dir, capsys):
    assert main(["validate", str(TOY_EARTH), "--set", f"eos.dir={rtmelt_dir}"]) == 0
    assert "spider-RTmelt" in capsys.readouterr().out


def test_validate_missing_table_dir(tmp_path):
    proc = run_cli("validate", str(TOY_EARTH), "--set", f"eos.dir={tmp_path / 'no-tables'}")
    assert_one_line_error(proc, "no-tables")


def test_show_config_round_trip(tmp_path, capsys):
    cfg = INPUT / "earth.toml"
    out = tmp_path / "resolved.toml"
    assert main(["show-config", str(cfg), "-o", str(out)]) == 0
    first, second = load_config(cfg), load_config(out)
    first.config_path = second.config_path = None
    assert first == second
    # to stdout as well
    assert main(["show-config", str(cfg)]) == 0
    assert "[mesh]" in capsys.readouterr().out


def test_eos_generate_then_check(tmp_path, capsys):
    directory = tmp_path / "tables"
    assert main(["eos", "generate", str(directory), "--np", "40", "--ns", "30"]) == 0
    assert (directory / "temperature_melt.dat").read_text().splitlines()[0].split() == ["#", "5", "40", "30"]
    assert main(["eos", "check", str(directory)]) == 0


def test_eos_check_missing_dir_no_traceback(tmp_path):
    assert_one_line_error(run_cli("eos", "check", str(tmp_path / "missing")), "missing")


def test_eos_generate_rejects_tiny_grid(tmp_path):
    assert_one_line_error(run_cli("eos", "generate", str(tmp_path / "t"), "--np", "1"), "--np")


def test_no_command_prints_help():
    proc = run_cli()
    assert proc.returncode == 2 and "validate" in proc.stdout


def test_run_writes_netcdf_and_summary(tmp_path):
    out = tmp_path / "short.nc"
    proc = run_cli(
        "run", str(INPUT / "constant_properties.toml"), "--out", str(out),
        "--set", "mesh.number_of_nodes=10", "--set", "solver.end_time=100", "--plot",
    )
    assert proc.returncode == 0, proc.stderr
    assert "T_magma" in proc.stdout and "integrator cvode" in proc.stdout
    assert out.is_file() and out.with_suffix(".png").is_file()
    summary = run_cli("inspect", str(out))
    assert summary.returncode == 0 and "T_magma" in summary.stdout


def test_run_bad_config_no_traceback(tmp_path):
    proc = run_cli("run", str(TOY_EARTH), "--set", "mesh.number_of_nodes=0", "--out", str(tmp_path / "x.nc"))
    assert_one_line_error(proc, "mesh.number_of_nodes")


# --------------------------------------------------------------------------- aragog info
@pytest.mark.cold_compiles
def test_info_json_names_what_is_installed(capsys):
    """`aragog info --json`: this package and where it came from, JAX's devices, the CVODE
    library the solver would load (the same dict as the backends report) and both caches."""
    import json

    import aragog
    from aragog.solver.backends import cvode_library_info

    assert main(["info", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["aragog"]["version"] == aragog.__version__
    assert Path(report["aragog"]["location"]) == Path(aragog.__file__).resolve().parent
    assert report["jax"]["devices"], report["jax"]
    assert report["sundials"] == cvode_library_info()
    assert report["compile_cache"]["directory"] is None  # the suite runs with the cache off
    assert report["eos_cache"]["directory"].endswith(str(Path("aragog") / "eos"))


def test_info_text_warns_of_another_distribution(capsys, monkeypatch):
    """The text report: one line per part; another distribution of the import package
    `aragog` is named as a warning under the first line."""
    import aragog._environment as environment  # private: other_distributions, patched where `aragog info` reads it

    monkeypatch.setattr(environment, "other_distributions", lambda: [("fwl-aragog", "26.10.22")])
    assert main(["info"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("aragog ")
    assert "fwl-aragog 26.10.22 also installs the import package 'aragog'" in lines[1]
    for part in ("python", "numpy", "jax", "sundials", "compile cache", "eos table cache"):
        assert any(line.startswith(part) for line in lines), part
