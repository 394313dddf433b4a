"""Config files in INI syntax (.cfg/.ini), upstream-compatibility rules, and the six
configs upstream aragog ships: they load, validate and run."""

from __future__ import annotations

import ast
import logging
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from aragog.cli import main
from aragog.config import Config, load_config, read_config_file, to_toml
from aragog.config._ini import convert  # private: the INI value converter itself, below the public loader
from aragog.errors import ConfigError
from aragog.probe import format_indices, probe_initial_state

from conftest import INPUT
from _configs import TOY_EARTH
from upstream_configs import NAMES, config_dict, render, upstream_dir, write_config

SRC = Path(__file__).resolve().parents[1] / "src" / "aragog" / "config"


def ini_of(params: Config) -> str:
    """INI text of resolved parameters (the way an upstream user writes values)."""
    lines = []
    for section, items in params.to_dict().items():
        lines.append(f"[{section}]")
        for key, value in items.items():
            if isinstance(value, list):
                value = ", ".join(repr(v) for v in value)
            lines.append(f"{key} = {value}")
    return "\n".join(lines) + "\n"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


# ---------------------------------------------------------------------- both syntaxes
def test_ini_equals_toml_for_the_example(tmp_path: Path) -> None:
    toml = load_config(INPUT / "earth.toml")
    cfg = load_config(write(tmp_path, "earth.cfg", ini_of(toml)))
    assert cfg == toml
    ini = load_config(write(tmp_path, "earth.INI", ini_of(toml)))  # suffix case does not matter
    assert ini == toml
    body = lambda text: text[text.index("[solver]"):]  # noqa: E731  (the header names the file read)
    assert body(to_toml(cfg)) == body(to_toml(toml))


def test_read_config_file_gives_the_same_dict_for_both_syntaxes(tmp_path: Path) -> None:
    d = config_dict("abe_mixed.cfg")
    from_ini = read_config_file(write(tmp_path, "x.cfg", render(d, "ini")))
    from_toml = read_config_file(write(tmp_path, "x.toml", render(d, "toml")))
    assert from_ini == from_toml
    assert from_ini["mesh"]["adiabatic_bulk_modulus"] == 260e9
    assert from_ini["energy"]["conduction"] is True and from_ini["mesh"]["number_of_nodes"] == 50
    assert Config.from_dict(from_ini, base_dir=tmp_path) == load_config(tmp_path / "x.cfg")


@pytest.mark.parametrize("text, kind, value", [
    ("True", "bool", True), ("false", "bool", False), ("yes", "bool", True), ("NO", "bool", False),
    ("1", "bool", True), ("0", "bool", False), ("on", "bool", True), ("Off", "bool", False),
    ("maybe", "bool", "maybe"), ("80", "int", 80), ("1e2", "int", 100.0), ("x", "int", "x"),
    ("1E21", "float", 1e21), ("260E9", "float", 260e9), ("0.031 ", "float", 0.031), ("-4", "float", -4.0),
    ("", "float", ""), ("a/b.dat", "float", "a/b.dat"), ("constant", "str", "constant"),
    ('"nearest_boundary"', "str", "nearest_boundary"), ("a b", "path", "a b"),
    ("0.5", "floatlist", [0.5]), ("[1, 2.5]", "floatlist", [1.0, 2.5]), ("1 2 3", "floatlist", [1.0, 2.0, 3.0]),
    ("[1, x]", "floatlist", "[1, x]"),
])
def test_ini_value_conversion(text: str, kind: str, value) -> None:
    assert convert(text, kind) == value


def test_ini_syntax_details(tmp_path: Path) -> None:
    d = config_dict("abe_liquid.cfg")
    text = render(d, "ini").replace("[mesh]\n", "[mesh]\n# a comment line\n; another\n")
    text = text.replace("core_heat_capacity = 880", "Core_Heat_Capacity = 880   # J/kg/K, inline comment")
    text = text.replace("[energy]\n", "[energy]\ntidal_array = [1e-12]\nuse_jax_jacobian = no\n"
                                      "solver_method = BDF\n")
    p = load_config(write(tmp_path, "c.cfg", text))
    assert p.boundary_conditions.core_heat_capacity == 880.0
    assert (p.solver.jacobian, p.solver.method) == ("fd", "bdf")
    assert p.energy.tidal_array == [1e-12]
    assert p.radionuclides[2].concentration == 0.031  # "0.031 " with a trailing blank
    assert p.phase_mixed.solidus == "data/test/solidus_1d_lookup.dat"  # not a path key: kept as written


def test_const_keys_case_insensitive(tmp_path: Path) -> None:
    d = config_dict("abe_liquid.cfg")
    d["phase_mixed"].update(const_properties="yes", const_t_ref="3500", CONST_S_REF="3000", const_cp="1200")
    p = load_config(write(tmp_path, "c.cfg", render(d, "ini")))
    pm = p.phase_mixed
    assert (pm.const_properties, pm.const_T_ref, pm.const_S_ref, pm.const_Cp) == (True, 3500.0, 3000.0, 1200.0)


# ---------------------------------------------------------------------- errors
def _error(path: Path, overrides=None) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(path, overrides=overrides)
    message = str(info.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("edit, expected", [
    (("number_of_nodes", "number_of_node"), "unknown key `mesh.number_of_node`; did you mean `number_of_nodes`?"),
    (("number_of_nodes = 100", "number_of_nodes = abc"), "`mesh.number_of_nodes` must be an integer, got 'abc'"),
    (("conduction = True", "conduction = maybe"), "`energy.conduction` must be true or false, got 'maybe'"),
    (("[solver]", "[solvr]"), "unknown section `[solvr]`; did you mean `[solver]`?"),
    (("emissivity = 1", "emissivity = 2"), "`boundary_conditions.emissivity` must be in [0, 1], got '2'"),
    (("core_density = 10738.332568062382\n", ""), "missing required key `mesh.core_density`"),
])
def test_same_errors_in_both_syntaxes(tmp_path: Path, edit, expected) -> None:
    d = config_dict("abe_liquid.cfg")
    for syntax in ("ini", "toml"):
        text = render(d, syntax)
        old, new = edit
        if syntax == "toml":
            old, new = old.replace("True", "true"), new.replace("True", "true").replace("maybe", '"maybe"')
            if "abc" in new:
                new = new.replace("abc", '"abc"')
        assert old in text, (syntax, old)
        path = write(tmp_path, f"c.{'cfg' if syntax == 'ini' else 'toml'}", text.replace(old, new, 1))
        assert _error(path) == f"{path}: {expected}", syntax


@pytest.mark.parametrize("text, pattern", [
    ("start_time = 0\n[solver]\n", r"line 1: `start_time = 0` is outside any \[section\]"),
    ("[solver]\nstart_time = 0\nstart_time = 1\n", r"line 3: key `solver.start_time` appears twice"),
    ("[solver]\n[mesh]\n[solver]\n", r"line 3: section `\[solver\]` appears twice"),
    ("[solver]\nthis is not a key\n", r"INI syntax error at line 2: 'this is not a key'"),
    ("[solver]\nstart_time = 0\nSTART_TIME = 1\n", r"key `solver.start_time` appears twice \(as `start_time` and "
                                                   r"`START_TIME`\)"),
])
def test_ini_syntax_errors(tmp_path: Path, text: str, pattern: str) -> None:
    path = write(tmp_path, "bad.cfg", text)
    message = _error(path)
    assert message.startswith(str(path)) and re.search(pattern, message), message


def test_ini_default_section_is_not_special(tmp_path: Path) -> None:
    text = "[DEFAULT]\nemissivity = 1\n" + render(config_dict("abe_liquid.cfg"), "ini")
    assert "unknown section `[DEFAULT]`" in _error(write(tmp_path, "c.cfg", text))


def test_missing_cfg_file_and_toml_hint(tmp_path: Path) -> None:
    assert _error(tmp_path / "nope.cfg") == f"config file not found: {tmp_path / 'nope.cfg'}"
    other = write(tmp_path, "c.conf", render(config_dict("abe_liquid.cfg"), "ini"))
    assert "read as TOML; a .cfg or .ini file is read as INI" in _error(other)


def test_phase_property_file_name_is_explained(tmp_path: Path) -> None:
    path = write_config(tmp_path, "abe_mixed_lookup.cfg")
    message = _error(path)
    assert "`phase_liquid.density` = 'data/test/density_2d_lookup.dat'" in message
    assert "`[eos] dir`" in message and "give a number" in message
    toml = write(tmp_path, "v.toml", render(config_dict("abe_liquid.cfg"), "toml").replace(
        'viscosity = 1E2\n', 'viscosity = "visc.dat"\n'))
    assert "`phase_liquid.viscosity` = 'visc.dat'" in _error(toml) and "give a constant number" in _error(toml)
    p = load_config(path, overrides={"phase_liquid.density": 4000})  # the equivalent: a number
    assert p.phase_liquid.density == 4000.0


# ---------------------------------------------------------------------- imports run one way
def _imports(module: str) -> set[str]:
    tree = ast.parse((SRC / f"{module}.py").read_text())
    return {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level}


def test_config_imports_run_one_way() -> None:
    assert "_loader" not in _imports("_params")
    assert not {"_loader", "_params"} & _imports("_normalise")
    assert not {"_loader", "_params", "_normalise"} & (_imports("_ini") | _imports("_schema"))


# ---------------------------------------------------------------------- radionuclides
def test_extinct_radionuclides_accepted(tmp_path: Path) -> None:
    p = load_config(write_config(tmp_path, "abe_mixed_lookup.cfg"), {"phase_liquid.density": 4000})
    al = next(n for n in p.radionuclides if n.name == "Al26")
    assert al.abundance == 0.0 and math.log(2) * al.t0_years / al.half_life_years > 709.8  # exp overflows


def test_overflowing_radionuclide_is_a_config_error(tmp_path: Path) -> None:
    path = write_config(tmp_path, "abe_mixed_lookup.cfg")
    bad = {"phase_liquid.density": 4000, "radionuclide_Al26.abundance": 5e-5, "radionuclide_Al26.concentration": 1e4}
    message = _error(path, bad)
    for needle in ("`[radionuclide_Al26]`", "`radionuclide_Al26.t0_years` = 4.55e9",
                   "`radionuclide_Al26.half_life_years` = 7.17e5", "solver.start_time = 0 yr", "abundance"):
        assert needle in message, needle
    # switched off, or given near the start time: fine
    load_config(path, {**bad, "energy.radionuclides": False})
    load_config(path, {**bad, "radionuclide_Al26.t0_years": 0.0})
    # a coupling framework moving the start time is checked by validate()
    p = load_config(path, {**bad, "radionuclide_Al26.t0_years": 1e6})
    p.solver.start_time = -5e9
    p.solver.end_time = -4e9
    with pytest.raises(ConfigError, match=r"radionuclide_Al26"):
        p.validate()


# ---------------------------------------------------------------------- the six upstream configs
#: What each config needs to run here (abe_mixed_lookup: a number for the P-T table file).
OVERRIDES = {"abe_mixed_lookup.cfg": ["phase_liquid.density=4000"]}



@pytest.mark.skipif(upstream_dir() is None, reason="no copy of the upstream configs here")
@pytest.mark.parametrize("name", NAMES)
def test_equivalent_text_matches_upstream(tmp_path: Path, name: str) -> None:
    theirs = load_config(write_config(tmp_path, name), OVERRIDES.get(name))
    ours = load_config(write_config(tmp_path, name, prefer_upstream=False), OVERRIDES.get(name))  # same place
    assert theirs == ours


@pytest.mark.parametrize("name", NAMES)
def test_upstream_config_loads(tmp_path: Path, name: str, caplog: pytest.LogCaptureFixture) -> None:
    path = write_config(tmp_path, name)
    with caplog.at_level(logging.WARNING, logger="aragog.config"):
        p = load_config(path, OVERRIDES.get(name))
    assert [n.name for n in p.radionuclides] == ["K40", "Th232", "U235", "U238", "Al26", "Fe60"]
    assert p.radionuclides[2].concentration == 0.031
    assert p.mesh.adiabatic_bulk_modulus == 260e9 and p.phase_solid.viscosity == 1e21
    assert not Path(p.phase_mixed.solidus).exists()  # compatibility keys: the files need not exist
    warned = [r.getMessage() for r in caplog.records]
    assert warned == []
    # abe_mixed.cfg asks for the buoyancy against the solid (Abe 1995), the native default.
    assert p.phase_mixed.separation_buoyancy == "solid"
    if name == "abe_mixed_init.cfg":
        assert p.mesh.eos_method == 2 and p.mesh.eos_file == str((tmp_path / "data/test/eos_test.dat").resolve())
        assert p.initial_condition.initial_condition == 3
    assert Config.from_dict(p.to_dict(), base_dir=path.parent) == p


@pytest.mark.parametrize("name", NAMES)
def test_upstream_config_validates(tmp_path: Path, name: str, capsys) -> None:
    path = write_config(tmp_path, name)
    overrides = [x for item in OVERRIDES.get(name, []) for x in ("--set", item)]
    assert main(["validate", str(path), *overrides]) == 0
    out = capsys.readouterr().out
    assert f"{path}: OK" in out and "every right-hand-side term finite" in out
    if name == "abe_mixed_init.cfg":
        assert "eos_test.dat" in out and "isentrope through basal_temperature" in out


#: Runs in the default selection: the structure file and adiabat start, the radionuclides
#: with extinct isotopes (the NaN regression), the prescribed CMB temperature; the others
#: (each another compilation, ~10-30 s) with -m slow.
FAST_RUNS = ("abe_mixed_init.cfg", "abe_mixed_lookup.cfg", "abe_solid.cfg")


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n not in FAST_RUNS else n
                                  for n in NAMES])
def test_upstream_config_runs(tmp_path: Path, name: str, capsys) -> None:
    path = write_config(tmp_path, name)
    overrides = [x for item in [*OVERRIDES.get(name, []), "solver.end_time=2"] for x in ("--set", item)]
    out_file = tmp_path / "out.nc"
    assert main(["run", str(path), "--out", str(out_file), *overrides]) == 0
    out = capsys.readouterr().out
    assert out_file.is_file() and "t = 2 yr" in out
    m = re.search(r"T_magma = ([0-9.]+) K", out)
    assert m and np.isfinite(float(m.group(1)))


# ---------------------------------------------------------------------- validate's RHS probe
def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "aragog", *args], capture_output=True, text=True, timeout=600)


def test_cli_reads_cfg_and_reports_errors_in_one_line(tmp_path: Path) -> None:
    path = write_config(tmp_path, "abe_mixed.cfg")
    typo = write(tmp_path, "typo.cfg", path.read_text().replace("number_of_nodes", "number_of_node"))
    proc = run_cli("validate", str(typo))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        f"aragog: error: {typo}: unknown key `mesh.number_of_node`; did you mean `number_of_nodes`?")
    proc = run_cli("show-config", str(path), "--set", "mesh.number_of_nodes=20")
    assert proc.returncode == 0 and "number_of_nodes = 20" in proc.stdout
    shown = write(tmp_path, "shown.toml", proc.stdout)
    assert load_config(shown) == load_config(path, ["mesh.number_of_nodes=20"])


def test_validate_names_a_non_finite_rate(tmp_path: Path) -> None:
    # a finite but absurd tidal heating: H = 1e308 W/kg is finite, dS/dt = H/T overflows
    path = write_config(tmp_path, "abe_mixed.cfg")
    proc = run_cli("validate", str(path), "--set", "mesh.number_of_nodes=12", "--set", "energy.tidal=true",
                   "--set", "energy.tidal_array=1e308")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("aragog: error:")]
    assert len(errors) == 1 and "not finite at the initial state" in errors[0], proc.stderr
    assert "dS/dt in cells 0-10 of 11" in errors[0] and "heating H" not in errors[0]
    assert main(["validate", str(path), "--no-rhs", "--set", "energy.tidal=true",
                 "--set", "energy.tidal_array=1e308"]) == 0


def test_probe_names_heating_and_cells(tmp_path: Path) -> None:
    # what the config check prevents, set behind its back: an overflowing isotope
    p = load_config(write_config(tmp_path, "abe_mixed.cfg"), {"energy.radionuclides": True,
                                                              "mesh.number_of_nodes": 12})
    al = next(n for n in p.radionuclides if n.name == "Al26")
    al.abundance, al.concentration = 1e-5, 1e4
    with pytest.raises(ConfigError) as info:
        probe_initial_state(p)
    message = str(info.value)
    assert "radiogenic heating H_radio = inf" in message and "heating H in cells 0-10 of 11" in message
    assert "EOS" not in message and "flux" not in message


def test_format_indices() -> None:
    bad = np.zeros(20, bool)
    bad[[0, 1, 2, 5, 9, 10]] = True
    assert format_indices(bad) == "0-2, 5, 9-10"
    assert format_indices(np.arange(30) % 2 == 0) == "0, 2, 4, 6, 8, 10, ..."


# ---------------------------------------------------------------------- aragog 0.2.8's configs
def test_event_triggering_false_is_ignored_and_true_refused(tmp_path: Path, caplog) -> None:
    """0.2.8's `solver.event_triggering` made its surface-temperature event terminal; off
    (as in all four of its test configs) it did nothing, so off is accepted with the
    no-effect warning, on is refused with the replacement named, in every input route."""
    base = TOY_EARTH.read_text()
    toml_path = write(tmp_path, "on.toml", base.replace("[solver]", "[solver]\nevent_triggering = true", 1))
    with pytest.raises(ConfigError, match=r"solver\.event_triggering = true.*energy\.temperature_step_cap"):
        load_config(toml_path)
    with caplog.at_level(logging.WARNING, logger="aragog.config"):
        p = load_config(write(tmp_path, "off.toml", base.replace("[solver]", "[solver]\nevent_triggering = false", 1)))
        q = load_config(TOY_EARTH, overrides=["solver.event_triggering=False"])
    assert p == q == load_config(TOY_EARTH)
    assert sum("`solver.event_triggering = false` has no effect" in r.getMessage() for r in caplog.records) == 2
    with pytest.raises(ConfigError, match=r"event_triggering.*\(override 'solver\.event_triggering'\)"):
        load_config(TOY_EARTH, overrides=["solver.event_triggering=true"])
    cfg = ini_of(p).replace("[solver]\n", "[solver]\nevent_triggering = False\n", 1)
    assert load_config(write(tmp_path, "off.cfg", cfg)) == p
    with pytest.raises(ConfigError, match="event_triggering"):
        load_config(write(tmp_path, "on.cfg", cfg.replace("event_triggering = False", "event_triggering = True")))


def test_relative_path_falls_back_to_the_working_directory(tmp_path: Path, monkeypatch, caplog) -> None:
    """The upstream's configs name files relative to the working directory; a path that is
    not beside the config file but is there is taken from there, and the log says so. A
    file beside the config wins."""
    from aragog.config._normalise import resolve_path  # private: the path resolution itself, below the loader

    (tmp_path / "cfg").mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "f.dat").write_text("x")
    monkeypatch.chdir(tmp_path)
    with caplog.at_level(logging.INFO, logger="aragog.config"):
        got = resolve_path("data/f.dat", tmp_path / "cfg")
    assert got == str(tmp_path / "data" / "f.dat") and "working directory" in caplog.text
    (tmp_path / "cfg" / "data").mkdir()
    (tmp_path / "cfg" / "data" / "f.dat").write_text("y")
    assert resolve_path("data/f.dat", tmp_path / "cfg") == str(tmp_path / "cfg" / "data" / "f.dat")
    assert resolve_path("data/missing.dat", tmp_path / "cfg") == str(tmp_path / "cfg" / "data" / "missing.dat")


OLD_TESTS = Path(__file__).resolve().parents[2] / "shared" / "data" / "aragog-0.2.8-tests"


@pytest.mark.skipif(not OLD_TESTS.is_dir(), reason="no copy of aragog 0.2.8's test inputs (shared/data)")
@pytest.mark.parametrize("name", ["abe_liquid.cfg", "abe_mixed.cfg", "abe_mixed_init.cfg", "abe_solid.cfg"])
def test_aragog_028_configs_load_as_they_are(name: str, monkeypatch, capsys) -> None:
    """The four test configs of aragog 0.2.8, unchanged, from the folder its tests ran in
    (paths relative to it): they load and validate; abe_mixed_init's structure file of cell
    centres (5.376e6-6.366e6 m) is extended half a row spacing to the mesh (5.371e6-6.371e6 m)."""
    monkeypatch.chdir(OLD_TESTS)
    path = OLD_TESTS / "cfg" / name
    p = load_config(path)
    assert p.solver.end_time > 0
    assert main(["validate", str(path)]) == 0
    assert "every right-hand-side term finite" in capsys.readouterr().out
    if name == "abe_mixed_init.cfg":
        assert p.mesh.eos_file == str(OLD_TESTS / "data" / "test" / "eos_test.dat")
