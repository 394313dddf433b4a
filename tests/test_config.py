"""Tests of aragog.config: loading, defaults, overrides, paths, validation, legacy keys, TOML output."""

from __future__ import annotations

import copy
import dataclasses
import logging
import math
import re
import tomllib
from pathlib import Path

import pytest

from aragog.config import (
    BoundaryConditionsParams,
    EnergyParams,
    EOSParams,
    InitialConditionParams,
    MeshParams,
    OutputParams,
    Config,
    PhaseMixedParams,
    SinglePhaseParams,
    RadionuclideParams,
    SolverParams,
    load_config,
    parse_overrides,
    to_toml,
)
from aragog.config import SCHEMA
# private: the schema's ignored legacy keys and no-default marker
from aragog.config._schema import LEGACY_IGNORED, REQUIRED
from aragog.errors import ConfigError

# An existing aragog config file, as users have them (inner_boundary_condition 1).
EXAMPLE = """\
[solver]
start_time = 0
end_time = 1000000000
atol = 1e-9
rtol = 1e-9
tsurf_poststep_change = 30
[boundary_conditions]
outer_boundary_condition = 1
outer_boundary_value = 1500
inner_boundary_condition = 1
inner_boundary_value = 4000
emissivity = 1
equilibrium_temperature = 273
core_heat_capacity = 880
[mesh]
outer_radius = 6371000
inner_radius = 5371000
number_of_nodes = 100
mixing_length_profile = "nearest_boundary"
core_density = 10738.332568062382
surface_density = 4090
gravitational_acceleration = 9.81
adiabatic_bulk_modulus = 260e9
[energy]
conduction = true
convection = true
gravitational_separation = false
mixing = false
radionuclides = false
tidal = false
[initial_condition]
surface_temperature = 3600
basal_temperature = 4000
[phase_liquid]
density = 4000
viscosity = 1e2
heat_capacity = 1000
melt_fraction = 1
thermal_conductivity = 4
thermal_expansivity = 1.0e-5
[phase_solid]
density = 4200
viscosity = 1e21
heat_capacity = 1000
melt_fraction = 0
thermal_conductivity = 4
thermal_expansivity = 1.0e-5
[phase_mixed]
latent_heat_of_fusion = 4e6
rheological_transition_melt_fraction = 0.4
rheological_transition_width = 0.15
solidus = "data/test/solidus_1d_lookup.dat"
liquidus = "data/test/liquidus_1d_lookup.dat"
phase = "solid"
phase_transition_width = 0.01
grain_size = 1.0e-3
[radionuclide_K40]
name = "K40"
t0_years = 4.55e9
abundance = 1.1668e-4
concentration = 310
heat_production = 2.8761e-5
half_life_years = 1.248e9
"""


@pytest.fixture
def example(tmp_path: Path) -> Path:
    path = tmp_path / "example.toml"
    path.write_text(EXAMPLE)
    return path


def example_dict() -> dict:
    return tomllib.loads(EXAMPLE)


def write(tmp_path: Path, text: str, name: str = "c.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# ---------------------------------------------------------------------- loading, types, defaults
def test_example_loads_with_types(example: Path) -> None:
    p = load_config(example)
    assert isinstance(p, Config)
    assert p.config_path == example.resolve()
    assert p.solver.end_time == 1e9 and type(p.solver.end_time) is float  # int in file -> float
    assert p.solver.atol == 1e-9 and p.solver.rtol == 1e-9
    assert p.boundary_conditions.outer_boundary_condition == 1
    assert type(p.boundary_conditions.outer_boundary_condition) is int
    assert type(p.boundary_conditions.emissivity) is float
    assert p.mesh.number_of_nodes == 100 and type(p.mesh.number_of_nodes) is int
    assert p.mesh.outer_radius == 6.371e6 and type(p.mesh.outer_radius) is float
    assert p.mesh.adiabatic_bulk_modulus == 260e9
    assert p.energy.conduction is True and p.energy.mixing is False
    assert p.phase_liquid.melt_fraction == 1.0 and p.phase_solid.viscosity == 1e21
    assert p.phase_mixed.phase == "solid"
    assert p.phase_mixed.solidus == "data/test/solidus_1d_lookup.dat"  # compatibility only: kept as written
    assert p.radionuclides == [RadionuclideParams(name="K40", t0_years=4.55e9, abundance=1.1668e-4,
                                                  concentration=310.0, heat_production=2.8761e-5,
                                                  half_life_years=1.248e9)]
    assert isinstance(p.solver, SolverParams) and isinstance(p.boundary_conditions, BoundaryConditionsParams)
    assert isinstance(p.mesh, MeshParams) and isinstance(p.energy, EnergyParams)
    assert isinstance(p.initial_condition, InitialConditionParams)
    assert isinstance(p.phase_liquid, SinglePhaseParams) and isinstance(p.phase_solid, SinglePhaseParams)
    assert isinstance(p.phase_mixed, PhaseMixedParams)
    assert isinstance(p.eos, EOSParams) and isinstance(p.output, OutputParams)


def test_defaults_filled(example: Path) -> None:
    p = load_config(example)
    s = p.solver
    assert (s.max_steps, s.output_points, s.method, s.jacobian, s.jax_cache_dir, s.compile_mode) == (
        100000, 65, "cvode", "jax", "", "fused")
    bc = p.boundary_conditions
    assert (bc.tfac_core_avg, bc.core_bc, bc.param_utbl, bc.param_utbl_const) == (
        1.147, "energy_balance", False, 1e-7)
    m = p.mesh
    assert (m.mixing_length_constant_fraction, m.mass_coordinates, m.eos_method, m.eos_file) == (
        0.25, True, 1, "")
    assert (m.adams_williamson_beta, m.surface_pressure) == (0.0, 0.0)
    e = p.energy
    assert (e.tidal_array, e.kappah_floor, e.eddy_diffusivity_thermal, e.eddy_diffusivity_chemical,
            e.phi_step_cap) == ([0.0], 10.0, 1.0, 1.0, 0.0)
    ic = p.initial_condition
    assert (ic.initial_condition, ic.init_file, ic.surface_temperature) == (1, "", 3600.0)
    pm = p.phase_mixed
    assert (pm.matprop_smooth_width, pm.const_properties, pm.const_rho, pm.const_T_ref) == (0.01, False, None, None)
    assert (p.eos.dir, p.eos.model, p.output.file, p.output.snapshots) == ("", "default", "", 20)


def test_defaults_of_optional_keys_with_values(tmp_path: Path) -> None:
    d = example_dict()
    for key in ("atol", "rtol", "tsurf_poststep_change"):
        del d["solver"][key]
    for key in ("surface_density", "gravitational_acceleration", "adiabatic_bulk_modulus"):
        del d["mesh"][key]
    del d["initial_condition"]
    p = Config.from_dict(d)
    assert (p.solver.atol, p.solver.rtol, p.solver.tsurf_poststep_change) == (1e-8, 1e-8, 30.0)
    assert (p.mesh.surface_density, p.mesh.gravitational_acceleration, p.mesh.adiabatic_bulk_modulus) == (
        4078.95095544, 9.81, 260e9)
    assert (p.initial_condition.surface_temperature, p.initial_condition.basal_temperature) == (4000.0, 4000.0)


def test_dataclass_defaults_match_schema() -> None:
    classes = {"solver": SolverParams, "boundary_conditions": BoundaryConditionsParams, "mesh": MeshParams,
               "energy": EnergyParams, "initial_condition": InitialConditionParams, "phase_liquid": SinglePhaseParams,
               "phase_solid": SinglePhaseParams, "phase_mixed": PhaseMixedParams, "eos": EOSParams,
               "output": OutputParams}
    for section, cls in classes.items():
        fields = {f.name: f for f in dataclasses.fields(cls)}
        assert list(fields) == list(SCHEMA[section])
        for name, key in SCHEMA[section].items():
            f = fields[name]
            if key.default is REQUIRED:
                assert f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            elif f.default_factory is not dataclasses.MISSING:
                assert f.default_factory() == list(key.default)
            else:
                assert f.default == key.default
    assert [f.name for f in dataclasses.fields(Config)] == [
        "solver", "boundary_conditions", "mesh", "energy", "initial_condition", "phase_liquid",
        "phase_solid", "phase_mixed", "radionuclides", "eos", "output", "config_path"]


def test_integral_float_accepted_for_int(example: Path) -> None:
    p = load_config(example, overrides=["mesh.number_of_nodes=1e2"])
    assert p.mesh.number_of_nodes == 100 and type(p.mesh.number_of_nodes) is int


def test_config_does_not_import_jax() -> None:
    folder = Path(__import__("aragog.config", fromlist=["x"]).__file__).parent
    for source in folder.glob("*.py"):
        assert not re.search(r"^\s*(import|from)\s+jax", source.read_text(), re.M), source


# ---------------------------------------------------------------------- overrides
def test_overrides_dict_and_strings(example: Path) -> None:
    p = load_config(example, overrides={"mesh.number_of_nodes": 80, "solver.method": "bdf"})
    assert p.mesh.number_of_nodes == 80 and p.solver.method == "bdf"
    q = load_config(example, overrides=[
        "mesh.number_of_nodes=80", "solver.method=bdf", "solver.end_time = 2e9",
        "energy.tidal = true", "energy.tidal_array=[1e-9]", 'eos.model="default"',
        "mesh.mixing_length_profile=constant", "radionuclide_K40.concentration=300",
    ])
    assert q.mesh.number_of_nodes == 80 and q.solver.method == "bdf" and q.solver.end_time == 2e9
    assert q.energy.tidal is True and q.energy.tidal_array == [1e-9]
    assert q.mesh.mixing_length_profile == "constant"
    assert q.radionuclides[0].concentration == 300.0
    assert load_config(example, overrides="mesh.number_of_nodes=50").mesh.number_of_nodes == 50


def test_override_creates_section(example: Path) -> None:
    p = load_config(example, overrides={"output.snapshots": 5})
    assert p.output.snapshots == 5


def test_parse_overrides_values() -> None:
    d = parse_overrides(["a.i=80", "a.f=1e9", "a.b=false", 'a.s="x y"', "a.w=nearest_boundary",
                         "a.l=[1, 2.5]", "a.p=dir/file.txt", "a.e=", "a.i=81"])
    assert d == {"a.i": 81, "a.f": 1e9, "a.b": False, "a.s": "x y", "a.w": "nearest_boundary",
                 "a.l": [1, 2.5], "a.p": "dir/file.txt", "a.e": ""}


@pytest.mark.parametrize("item, match", [
    ("mesh.number_of_nodes", r"bad override 'mesh\.number_of_nodes': expected SECTION\.KEY=VALUE"),
    ("number_of_nodes=80", r"bad override 'number_of_nodes=80': the key must be SECTION\.KEY"),
    ("a.b.c=1", r"bad override 'a\.b\.c=1'"),
    ("=1", r"bad override '=1'"),
    ("energy.tidal_array=[1, 2", r"bad override 'energy\.tidal_array=\[1, 2': the value is not valid TOML"),
])
def test_bad_override_syntax(item: str, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        parse_overrides([item])


def test_override_goes_through_validation(example: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown key `mesh\.number_of_node` \(override 'mesh\.number_of_node'\); "
                                          r"did you mean `number_of_nodes`\?"):
        load_config(example, overrides=["mesh.number_of_node=80"])
    with pytest.raises(ConfigError, match=r"unknown section `\[mseh\]`.*did you mean `\[mesh\]`"):
        load_config(example, overrides={"mseh.number_of_nodes": 80})
    with pytest.raises(ConfigError, match=r"`mesh\.number_of_nodes` must be an integer, got 'abc'"):
        load_config(example, overrides=["mesh.number_of_nodes=abc"])
    with pytest.raises(ConfigError, match=r"missing required keys `radionuclide_Al26\.t0_years`"):
        load_config(example, overrides={"radionuclide_Al26.name": "Al26"})


# ---------------------------------------------------------------------- paths
def test_relative_paths_resolve_against_config_folder(tmp_path: Path) -> None:
    folder = tmp_path / "cfg"
    folder.mkdir()
    text = EXAMPLE.replace("[mesh]\n", '[mesh]\neos_method = 2\neos_file = "structure/earth.txt"\n')
    text = text.replace("[initial_condition]\n", '[initial_condition]\ninitial_condition = 2\ninit_file = "../S0.dat"\n')
    text += '[eos]\ndir = "tables"\n'
    p = load_config(write(folder, text))
    assert p.mesh.eos_file == str(folder / "structure" / "earth.txt")  # not required to exist
    assert p.initial_condition.init_file == str(tmp_path / "S0.dat")
    assert p.eos.dir == str(folder / "tables")
    assert Path(p.eos.dir).is_absolute()


def test_absolute_and_empty_paths_kept(example: Path, tmp_path: Path) -> None:
    target = str(tmp_path / "elsewhere" / "tables")
    p = load_config(example, overrides={"eos.dir": target})
    assert p.eos.dir == target and p.mesh.eos_file == "" and p.initial_condition.init_file == ""


def test_override_paths_resolve_against_working_directory(example: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    p = load_config(example, overrides=["eos.dir=my-tables"])
    assert p.eos.dir == str(work / "my-tables")


def test_from_dict_base_dir(tmp_path: Path) -> None:
    d = example_dict()
    d["eos"] = {"dir": "t"}
    assert Config.from_dict(d, base_dir=tmp_path).eos.dir == str(tmp_path / "t")
    assert d["eos"]["dir"] == "t"  # the input dict is not modified


# ---------------------------------------------------------------------- mutation, validate, dicts
def test_mutation_and_validate(example: Path) -> None:
    p = load_config(example)
    p.solver.start_time, p.solver.end_time = 100, 200  # ints from a caller
    assert p.validate() is p
    assert p.solver.end_time == 200.0 and type(p.solver.end_time) is float
    p.solver.end_time = 50.0
    with pytest.raises(ConfigError, match=re.escape("solver.end_time (50) must be >= solver.start_time (100)")):
        p.validate()
    p.solver.end_time = 300.0
    p.mesh.number_of_nodes = 80.5
    with pytest.raises(ConfigError, match=re.escape("`mesh.number_of_nodes` must be an integer, got '80.5'")):
        p.validate()
    p.mesh.number_of_nodes = 11
    p.energy.tidal_array = [1e-9] * 5
    with pytest.raises(ConfigError, match=r"`energy\.tidal_array` has 5 values; give 1 .* or 10 "):
        p.validate()
    p.energy.tidal_array = (1e-9,) * 10
    p.validate()
    assert p.energy.tidal_array == [1e-9] * 10
    p.boundary_conditions.core_bc = "quasi_stedy"
    with pytest.raises(ConfigError, match="core_bc"):
        p.validate()


def test_validate_accepts_numpy_values(example: Path) -> None:
    np = pytest.importorskip("numpy")
    p = load_config(example)
    p.mesh.number_of_nodes = np.int64(21)
    p.boundary_conditions.outer_boundary_value = np.float64(120.5)
    p.energy.tidal_array = np.full(20, 1e-10)
    p.energy.tidal = np.bool_(True)
    p.validate()
    assert type(p.mesh.number_of_nodes) is int and type(p.boundary_conditions.outer_boundary_value) is float
    assert p.energy.tidal_array == [1e-10] * 20 and p.energy.tidal is True
    assert "np." not in to_toml(p)


def test_to_toml_normalises_a_copy(example: Path, tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    p = load_config(example)
    p.boundary_conditions.outer_boundary_value = np.float64(0.1)
    p.solver.end_time = 2000
    text = to_toml(p)
    assert "outer_boundary_value = 0.1  # W/m² or K" in text and "end_time = 2000.0  # yr" in text
    assert type(p.solver.end_time) is int  # the caller's object is not modified
    p.mesh.inner_radius = 7e6
    with pytest.raises(ConfigError, match="inner_radius"):
        to_toml(p)


def test_to_dict_from_dict_round_trip(example: Path) -> None:
    p = load_config(example)
    d = p.to_dict()
    assert list(d) == ["solver", "boundary_conditions", "mesh", "energy", "initial_condition", "phase_liquid",
                       "phase_solid", "phase_mixed", "radionuclide_K40", "eos", "output"]
    assert "const_rho" not in d["phase_mixed"]  # unset optional keys are left out
    q = Config.from_dict(d)
    assert q == p and q.config_path is None
    d["energy"]["tidal_array"].append(1.0)  # a copy: p is unchanged
    assert p.energy.tidal_array == [0.0]


# ---------------------------------------------------------------------- TOML output
def test_round_trip_example(example: Path, tmp_path: Path) -> None:
    p = load_config(example)
    text = to_toml(p)
    tomllib.loads(text)  # valid TOML
    q = load_config(write(tmp_path, text, "resolved.toml"))
    assert q == p


def test_round_trip_non_defaults(example: Path, tmp_path: Path) -> None:
    p = load_config(example, overrides={
        "mesh.number_of_nodes": 4, "energy.tidal_array": [0.1 + 0.2, 1 / 3, 5e-324],
        "output.file": 'odd "name" \\ with\ttab é.nc', "phase_mixed.const_properties": True,
        "phase_mixed.const_T_ref": 1600.0, "phase_mixed.const_S_ref": 3000.0, "eos.dir": str(tmp_path / "t"),
        "solver.end_time": 1.0000000000000002e9, "boundary_conditions.param_utbl": True,
    })
    text = to_toml(p)
    assert text.index("[phase_mixed]") < text.index("[radionuclide_K40]") < text.index("[eos]") < text.index("[output]")
    assert "solver_method" not in text and "cvode_output_points" not in text
    q = load_config(write(tmp_path, text, "resolved.toml"))
    assert q == p
    assert q.energy.tidal_array == [0.1 + 0.2, 1 / 3, 5e-324]
    assert q.output.file == 'odd "name" \\ with\ttab é.nc'


def test_round_trip_drops_legacy_keys(tmp_path: Path) -> None:
    text = EXAMPLE.replace("[energy]\n", '[energy]\nsolver_method = "bdf"\ndilatation = false\n')
    p = load_config(write(tmp_path, text))
    out = to_toml(p)
    assert "solver_method" not in out and "dilatation" not in out and 'method = "bdf"' in out
    assert load_config(write(tmp_path, out, "r.toml")) == p


# ---------------------------------------------------------------------- validation errors
ERRORS = [
    ({"mesh.inner_radius": 7e6}, "mesh.inner_radius (7e6) must be < mesh.outer_radius (6.371e6)"),
    ({"mesh.inner_radius": -1.0}, "`mesh.inner_radius` must be > 0, got '-1'"),
    ({"mesh.outer_radius": -6.371e6}, "`mesh.outer_radius` must be > 0, got '-6.371e6'"),
    ({"mesh.number_of_nodes": 0},
     "`mesh.number_of_nodes` must be >= 3 (the physics needs two cells, bounded by three nodes), got '0'"),
    ({"mesh.number_of_nodes": 1}, "`mesh.number_of_nodes` must be >= 3"),
    ({"mesh.number_of_nodes": 80.5}, "`mesh.number_of_nodes` must be an integer, got '80.5'"),
    ({"mesh.number_of_nodes": True}, "`mesh.number_of_nodes` must be an integer, got 'true'"),
    ({"solver.end_time": True}, "`solver.end_time` must be a number, got 'true'"),
    ({"solver.end_time": "1e9"}, "`solver.end_time` must be a number, got '1e9'"),
    ({"solver.end_time": math.inf}, "`solver.end_time` must be a finite number, got 'inf'"),
    ({"energy.conduction": 1}, "`energy.conduction` must be true or false, got '1'"),
    ({"mesh.mixing_length_profile": 3}, "`mesh.mixing_length_profile` must be a string, got '3'"),
    ({"boundary_conditions.core_bc": "steady"},
     "`boundary_conditions.core_bc` must be one of \"energy_balance\", \"quasi_steady\", \"gradient\", "
     "\"bower2018\", got 'steady'"),
    ({"boundary_conditions.outer_boundary_condition": 2},
     "`boundary_conditions.outer_boundary_condition` must be one of 1 (grey body), 4 (prescribed flux), "
     "5 (prescribed temperature), got '2'"),
    ({"boundary_conditions.outer_boundary_condition": 5, "boundary_conditions.outer_boundary_value": -10},
     "`boundary_conditions.outer_boundary_value` is a temperature for outer_boundary_condition = 5 and must "
     "be > 0 K, got '-10'"),
    ({"boundary_conditions.inner_boundary_condition": 4},
     "`boundary_conditions.inner_boundary_condition` must be one of 1 (core cooling), 2 (prescribed flux), "
     "3 (prescribed temperature), got '4'"),
    ({"boundary_conditions.inner_boundary_condition": 3, "boundary_conditions.inner_boundary_value": 0},
     "`boundary_conditions.inner_boundary_value` is a temperature for inner_boundary_condition = 3 and must "
     "be > 0 K, got '0'"),
    ({"mesh.mixing_length_profile": "linear"}, "`mesh.mixing_length_profile` must be one of \"nearest_boundary\", "
                                               "\"constant\", got 'linear'"),
    ({"mesh.mixing_length_constant_fraction": 0.0}, "`mesh.mixing_length_constant_fraction` must be in (0, 1], got '0'"),
    ({"solver.method": "rk45"}, "`solver.method` must be one of \"cvode\", \"bdf\", \"radau\", got 'rk45'"),
    ({"solver.jacobian": "auto"}, "`solver.jacobian` must be one of \"jax\", \"fd\", got 'auto'"),
    ({"solver.compile_mode": "split"}, "`solver.compile_mode` must be one of \"fused\", \"blocks\", got 'split'"),
    ({"mesh.eos_method": 3}, "`mesh.eos_method` must be one of 1 (Adams-Williamson), 2 (structure file), got '3'"),
    ({"mesh.eos_method": 2}, "`mesh.eos_method` = 2 (structure file) needs a non-empty `mesh.eos_file`"),
    ({"initial_condition.initial_condition": 0}, "`initial_condition.initial_condition` must be one of 1 "
                                                 "(isentrope), 2 (entropy file), 3 (adiabat), got '0'"),
    ({"initial_condition.initial_condition": 2}, "`initial_condition.initial_condition` = 2 (entropy file) needs "
                                                 "a non-empty `initial_condition.init_file`"),
    ({"phase_mixed.phase": "gas"}, "`phase_mixed.phase` must be one of \"liquid\", \"solid\", \"mixed\", got 'gas'"),
    ({"phase_liquid.density": 0}, "`phase_liquid.density` must be > 0, got '0'"),
    ({"phase_solid.density": -4200}, "`phase_solid.density` must be > 0, got '-4200'"),
    ({"mesh.core_density": 0}, "`mesh.core_density` must be > 0, got '0'"),
    ({"phase_liquid.heat_capacity": 0}, "`phase_liquid.heat_capacity` must be > 0, got '0'"),
    ({"boundary_conditions.core_heat_capacity": -1}, "`boundary_conditions.core_heat_capacity` must be > 0, got '-1'"),
    ({"phase_solid.viscosity": 0}, "`phase_solid.viscosity` must be > 0, got '0'"),
    ({"phase_liquid.thermal_conductivity": -4}, "`phase_liquid.thermal_conductivity` must be > 0, got '-4'"),
    ({"phase_mixed.grain_size": 0}, "`phase_mixed.grain_size` must be > 0, got '0'"),
    ({"solver.atol": 0}, "`solver.atol` must be > 0, got '0'"),
    ({"solver.rtol": -1e-6}, "`solver.rtol` must be in (0, 1), got '-1e-6'"),
    ({"solver.rtol": 1}, "`solver.rtol` must be in (0, 1), got '1'"),
    ({"phase_liquid.melt_fraction": 1.5}, "`phase_liquid.melt_fraction` must be in [0, 1], got '1.5'"),
    ({"phase_solid.melt_fraction": -0.1}, "`phase_solid.melt_fraction` must be in [0, 1], got '-0.1'"),
    ({"phase_mixed.rheological_transition_melt_fraction": 2},
     "`phase_mixed.rheological_transition_melt_fraction` must be in [0, 1], got '2'"),
    ({"energy.phi_step_cap": 1.5}, "`energy.phi_step_cap` must be in [0, 1], got '1.5'"),
    ({"energy.phi_step_cap": -0.01}, "`energy.phi_step_cap` must be in [0, 1], got '-0.01'"),
    ({"solver.start_time": 10, "solver.end_time": 5}, "solver.end_time (5) must be >= solver.start_time (10)"),
    ({"boundary_conditions.emissivity": 1.2}, "`boundary_conditions.emissivity` must be in [0, 1], got '1.2'"),
    ({"boundary_conditions.emissivity": -0.1}, "`boundary_conditions.emissivity` must be in [0, 1], got '-0.1'"),
    ({"boundary_conditions.equilibrium_temperature": -1},
     "`boundary_conditions.equilibrium_temperature` must be >= 0, got '-1'"),
    ({"solver.max_steps": 0}, "`solver.max_steps` must be >= 1, got '0'"),
    ({"solver.output_points": 0}, "`solver.output_points` must be >= 1, got '0'"),
    ({"output.snapshots": 0}, "`output.snapshots` must be >= 1, got '0'"),
    ({"energy.tidal_array": [1e-9, 2e-9, 3e-9]},
     "`energy.tidal_array` has 3 values; give 1 (all cells) or 99 (mesh.number_of_nodes - 1, one per cell)"),
    ({"energy.tidal_array": [1e-9, math.nan]}, "`energy.tidal_array` values must be finite, got 'nan' at index 1"),
    ({"energy.tidal_array": ["a"]}, "`energy.tidal_array` must be a list of numbers, got 'a' at index 0"),
    ({"energy.tidal_array": []}, "`energy.tidal_array` must have at least one value, got '[]'"),
    ({"phase_mixed.const_properties": True},
     "`phase_mixed.const_T_ref` and `phase_mixed.const_S_ref` must be given when `phase_mixed.const_properties` = true"),
    ({"phase_mixed.const_properties": True, "phase_mixed.const_T_ref": 0.0, "phase_mixed.const_S_ref": 0.0},
     "`phase_mixed.const_T_ref` must be > 0, got '0'"),
    ({"phase_mixed.const_rho": -1.0}, "`phase_mixed.const_rho` must be > 0, got '-1'"),
    ({"radionuclide_K40.half_life_years": -1.248e9}, "`radionuclide_K40.half_life_years` must be > 0, got '-1.248e9'"),
    ({"radionuclide_K40.half_life_years": 0}, "`radionuclide_K40.half_life_years` must be > 0, got '0'"),
    ({"radionuclide_K40.name": 40}, "`radionuclide_K40.name` must be a string, got '40'"),
    ({"radionuclide_K40.name": " "}, "`radionuclide_K40.name` must be a non-empty string, got ' '"),
    ({"eos.model": ""}, "`eos.model` must be a non-empty string, got ''"),
    ({"radionuclide_K40.abundance": 1.5}, "`radionuclide_K40.abundance` must be in [0, 1], got '1.5'"),
    ({"radionuclide_U238.name": "K40", "radionuclide_U238.t0_years": 4.55e9, "radionuclide_U238.abundance": 1,
      "radionuclide_U238.concentration": 0.031, "radionuclide_U238.heat_production": 9.4946e-5,
      "radionuclide_U238.half_life_years": 4.468e9}, "radionuclide name 'K40' is used twice"),
]


@pytest.mark.parametrize("overrides, message", ERRORS, ids=[next(iter(o)) for o, _ in ERRORS])
def test_validation_errors(example: Path, overrides: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)) as info:
        load_config(example, overrides=overrides)
    assert "\n" not in str(info.value)


def test_missing_radionuclide_key() -> None:
    d = example_dict()
    del d["radionuclide_K40"]["half_life_years"]
    with pytest.raises(ConfigError, match=re.escape("missing required key `radionuclide_K40.half_life_years`")):
        Config.from_dict(d)


def test_missing_required_keys_and_sections() -> None:
    d = example_dict()
    del d["mesh"]["core_density"]
    with pytest.raises(ConfigError, match=re.escape("missing required key `mesh.core_density`")):
        Config.from_dict(d)
    d = example_dict()
    del d["phase_solid"]
    with pytest.raises(ConfigError, match=re.escape("missing required section `[phase_solid]`")):
        Config.from_dict(d)


def test_did_you_mean(tmp_path: Path) -> None:
    path = write(tmp_path, EXAMPLE.replace("number_of_nodes", "number_of_node"))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == f"{path}: unknown key `mesh.number_of_node`; did you mean `number_of_nodes`?"
    with pytest.raises(ConfigError, match=re.escape("unknown section `[solvr]`; did you mean `[solver]`?")):
        load_config(write(tmp_path, EXAMPLE.replace("[solver]", "[solvr]")))
    with pytest.raises(ConfigError, match=r"unknown key `energy\.zzz`; valid keys: conduction, convection"):
        load_config(write(tmp_path, EXAMPLE.replace("[energy]\n", "[energy]\nzzz = 1\n")))
    with pytest.raises(ConfigError, match=r"unknown top-level key `foo`"):
        load_config(write(tmp_path, "foo = 1\n" + EXAMPLE))


def test_const_properties_defaults_from_phase_liquid(example: Path) -> None:
    p = load_config(example, overrides={"phase_mixed.const_properties": True, "phase_mixed.const_T_ref": 1600.0,
                                        "phase_mixed.const_S_ref": 3000.0, "phase_mixed.const_cond": 2.5})
    pm = p.phase_mixed
    assert (pm.const_rho, pm.const_Cp, pm.const_alpha, pm.const_cond) == (4000.0, 1000.0, 1e-5, 2.5)
    assert pm.const_log10visc == pytest.approx(2.0, abs=1e-15)
    assert (pm.const_T_ref, pm.const_S_ref) == (1600.0, 3000.0)


# ---------------------------------------------------------------------- files
def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.toml"
    with pytest.raises(ConfigError, match=re.escape(f"config file not found: {path}")):
        load_config(path)
    with pytest.raises(ConfigError, match="is a directory"):
        load_config(tmp_path)


def test_toml_syntax_error(tmp_path: Path) -> None:
    path = write(tmp_path, "[solver]\nstart_time = 0\nend_time = = 3\n")
    with pytest.raises(ConfigError, match=re.escape(str(path)) + r": TOML syntax error: .*line 3") as info:
        load_config(path)
    assert "\n" not in str(info.value)


# ---------------------------------------------------------------------- legacy keys
def test_legacy_keys_mapped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    text = EXAMPLE.replace("[energy]\n", '[energy]\nsolver_method = "BDF"\nuse_jax_jacobian = false\n')
    text = text.replace("[solver]\n", "[solver]\ncvode_output_points = 40\n")
    with caplog.at_level(logging.WARNING, logger="aragog.config"):
        p = load_config(write(tmp_path, text))
    assert (p.solver.method, p.solver.jacobian, p.solver.output_points) == ("bdf", "fd", 40)
    assert not caplog.records  # mapped keys are not warnings
    q = Config.from_dict({**example_dict(), "energy": {**example_dict()["energy"], "use_jax_jacobian": True}})
    assert q.solver.jacobian == "jax"


def test_legacy_conflicts(tmp_path: Path) -> None:
    text = EXAMPLE.replace("[energy]\n", '[energy]\nsolver_method = "bdf"\n').replace(
        "[solver]\n", '[solver]\nmethod = "cvode"\n')
    with pytest.raises(ConfigError, match=re.escape("`energy.solver_method` = 'bdf' conflicts with `solver.method` = "
                                                    "'cvode'; remove the legacy key")):
        load_config(write(tmp_path, text))
    agree = EXAMPLE.replace("[energy]\n", "[energy]\nuse_jax_jacobian = true\n").replace(
        "[solver]\n", '[solver]\njacobian = "jax"\ncvode_output_points = 10\noutput_points = 10\n')
    assert load_config(write(tmp_path, agree)).solver.output_points == 10
    clash = EXAMPLE.replace("[solver]\n", "[solver]\ncvode_output_points = 10\noutput_points = 11\n")
    with pytest.raises(ConfigError, match="conflicts with `solver.output_points`"):
        load_config(write(tmp_path, clash))
    with pytest.raises(ConfigError, match=re.escape("`energy.use_jax_jacobian` must be true or false, got 'yes'")):
        load_config(write(tmp_path, EXAMPLE.replace("[energy]\n", '[energy]\nuse_jax_jacobian = "yes"\n')))
    with pytest.raises(ConfigError, match=r"`energy\.solver_method` must be one of .*got 'euler'"):
        load_config(write(tmp_path, EXAMPLE.replace("[energy]\n", '[energy]\nsolver_method = "euler"\n')))


def test_override_wins_over_legacy_key_in_file(tmp_path: Path) -> None:
    path = write(tmp_path, EXAMPLE.replace("[energy]\n", '[energy]\nsolver_method = "bdf"\n'))
    assert load_config(path, overrides=["solver.method=radau"]).solver.method == "radau"
    assert load_config(path, overrides=["energy.solver_method=radau"]).solver.method == "radau"


def test_legacy_keys_warn_once_each(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    d = example_dict()
    for section, key in sorted(LEGACY_IGNORED):
        d[section][key] = {"x": 1} if key == "core_module_params" else 0.5
    d["scalings"] = {"radius": 6371000.0, "temperature": 4000.0}
    with caplog.at_level(logging.WARNING, logger="aragog.config"):
        p = Config.from_dict(d)
    messages = [r.getMessage() for r in caplog.records if r.name == "aragog.config"]
    for section, key in LEGACY_IGNORED:
        hits = [m for m in messages if m.startswith(f"`{section}.{key}` has no effect in this version")]
        assert len(hits) == 1, (section, key)
    assert sum("`[scalings]` has no effect in this version" in m for m in messages) == 1
    assert len(messages) == len(LEGACY_IGNORED) + 1
    assert p == Config.from_dict(example_dict())


def test_dilatation_message(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = write(tmp_path, EXAMPLE.replace("[energy]\n", "[energy]\ndilatation = false\n"))
    with caplog.at_level(logging.WARNING, logger="aragog.config"):
        load_config(path)
    assert [r.getMessage() for r in caplog.records] == [
        "`energy.dilatation` has no effect in this version and is ignored"]


def test_tsurf_poststep_change_not_a_warning(example: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="aragog.config"):
        p = load_config(example)
    assert p.solver.tsurf_poststep_change == 30.0
    records = [r for r in caplog.records if "`solver.tsurf_poststep_change`" in r.getMessage()]
    assert len(records) == 1 and records[0].levelno == logging.DEBUG


def test_radionuclide_name_differs_from_section(caplog: pytest.LogCaptureFixture) -> None:
    d = example_dict()
    d["radionuclide_k40"] = d.pop("radionuclide_K40")
    with caplog.at_level(logging.WARNING, logger="aragog.config"):
        p = Config.from_dict(d)
    assert [n.name for n in p.radionuclides] == ["K40"]
    assert "radionuclide_K40" in p.to_dict()
    assert any("`[radionuclide_k40]` has name = 'K40'" in r.getMessage() for r in caplog.records)
    p.radionuclides[0].name = ""
    with pytest.raises(ConfigError, match=re.escape("`radionuclides[0].name` must be a non-empty string")):
        p.validate()


def test_radionuclides_switch_without_sections_warns(caplog: pytest.LogCaptureFixture) -> None:
    d = example_dict()
    del d["radionuclide_K40"]
    d["energy"]["radionuclides"] = True
    with caplog.at_level(logging.WARNING, logger="aragog.config"):
        p = Config.from_dict(d)
    assert p.radionuclides == []
    assert any("no [radionuclide_NAME] section" in r.getMessage() for r in caplog.records)


def test_example_input_file_loads() -> None:
    path = Path(__file__).resolve().parents[1] / "input" / "earth.toml"
    if not path.exists():
        pytest.skip("input/earth.toml not present")
    p = load_config(path)
    assert [n.name for n in p.radionuclides] == ["K40", "Th232", "U235", "U238"]
    assert load_config(path, overrides={"mesh.number_of_nodes": 80}).mesh.number_of_nodes == 80
    copy.deepcopy(p).validate()


def test_docs_name_every_key() -> None:
    doc = Path(__file__).resolve().parents[1] / "docs" / "config.md"
    if not doc.exists():
        pytest.skip("docs/config.md not present")
    text = doc.read_text()
    from aragog.config import RADIONUCLIDE_KEYS
    from aragog.config._schema import LEGACY_MAPPED  # private: the schema's renamed legacy keys
    for section, keys in {**SCHEMA, "radionuclide_NAME": RADIONUCLIDE_KEYS}.items():
        assert f"[{section}]" in text, section
        for key in keys:
            assert f"`{key}`" in text, (section, key)
    for section, key in [*LEGACY_IGNORED, *LEGACY_MAPPED]:
        assert f"`{section}.{key}`" in text, (section, key)


def test_the_former_name_of_config_still_resolves_with_a_warning():
    """``Config`` was ``Parameters`` up to release 26.12.01 (also the name of the upstream's
    different class, aragog.parser.Parameters): the old name answers the same class, with
    a DeprecationWarning that names the new one."""
    import aragog
    from aragog import config

    with pytest.warns(DeprecationWarning, match="aragog.config.Config"):
        assert config.Parameters is Config
    with pytest.warns(DeprecationWarning, match="aragog.config.Config"):
        assert aragog.Parameters is Config
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        config.Nope  # noqa: B018


def test_inert_keys_get_one_warning_naming_the_setting(caplog):
    """One rule for ignored input (the schema's USED_ONLY_WITH): a key set in the file or by
    an override under a setting that makes it inert gets one warning naming that setting;
    a key a file gives whatever the settings (required, or the two initial temperatures) is
    reported only when an override sets it; an active key is never reported."""
    import logging

    from _configs import TOY_EARTH

    def warned(overrides):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="aragog.config"):
            load_config(TOY_EARTH, overrides)
        return [r.getMessage() for r in caplog.records if "has no effect" in r.getMessage()]

    assert warned(None) == []  # the file's required outer/inner_boundary_value: not reported
    assert warned({"energy.tidal_array": [1e-9]}) == [
        "`energy.tidal_array` has no effect: it is used only with energy.tidal = true (here false)"]
    assert warned({"energy.tidal_array": [1e-9], "energy.tidal": True}) == []
    assert warned({"boundary_conditions.outer_boundary_value": 1e4}) == [
        "`boundary_conditions.outer_boundary_value` has no effect: it is used only with "
        "boundary_conditions.outer_boundary_condition = 4 or 5 (here 1)"]
    assert warned({"boundary_conditions.outer_boundary_value": 1e4,
                   "boundary_conditions.outer_boundary_condition": 4}) == []
    assert warned({"initial_condition.basal_temperature": 3000.0}) == [
        "`initial_condition.basal_temperature` has no effect: it is used only with "
        "initial_condition.initial_condition = 3 (here 1)"]
    both = warned({"initial_condition.initial_condition": 3, "initial_condition.surface_temperature": 3000.0,
                   "phase_mixed.const_T_ref": 2000.0})
    assert len(both) == 2 and "surface_temperature" in both[0] and "const_properties = true (here false)" in both[1]


def test_validate_describes_the_initial_condition_the_mode_uses():
    from _configs import TOY_EARTH

    from aragog.validation import check_inputs

    lines = check_inputs(load_config(TOY_EARTH, {"initial_condition.initial_condition": 3,
                                                 "initial_condition.basal_temperature": 3900.0}), rhs=False)
    (line,) = [ln for ln in lines if ln.startswith("initial condition")]
    assert line == "initial condition: isentrope through T_basal = 3900 K at the CMB"
