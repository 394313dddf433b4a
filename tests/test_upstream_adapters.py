"""The upstream-compatible adapters (docs/compat.md): aragog.parser, aragog.eos.entropy,
aragog.mesh, aragog_file_logger, the calendar version, and the solver's upstream meanings
(exact identities; the PROTEUS call sequence itself is in tests/compat/)."""

from __future__ import annotations

import logging
import math
import re
from pathlib import Path

import numpy as np
import pytest

import aragog
from aragog import aragog_file_logger, eos
from aragog.errors import ConfigError
from aragog.eos.entropy import EntropyEOS
from aragog.mesh import derive_core_density_from_mesh
from aragog.parser import (Parameters, _BoundaryConditionsParameters, _EnergyParameters,
                           _InitialConditionParameters, _MeshParameters, _PhaseMixedParameters,
                           _PhaseParameters, _Radionuclide, _SolverParameters)


def upstream_params(const=True, **energy) -> Parameters:
    """Parameters built the way PROTEUS's setup_solver builds them (small mesh)."""
    return Parameters(
        boundary_conditions=_BoundaryConditionsParameters(
            outer_boundary_condition=4, outer_boundary_value=1e5, inner_boundary_condition=1,
            inner_boundary_value=4000, emissivity=1, equilibrium_temperature=300, core_heat_capacity=880),
        energy=_EnergyParameters(conduction=True, convection=True, gravitational_separation=True, mixing=True,
                                 radionuclides=True, tidal=False, **energy),
        initial_condition=_InitialConditionParameters(initial_condition=3, surface_temperature=3000,
                                                      basal_temperature=7000),
        mesh=_MeshParameters(outer_radius=6.371e6, inner_radius=3.504e6, number_of_nodes=20,
                             mixing_length_profile="nearest_boundary", core_density=10738.0),
        phase_liquid=_PhaseParameters(density=Path("density_melt.dat"), heat_capacity=Path("hc.dat"), melt_fraction=1,
                                      thermal_conductivity=4.0, thermal_expansivity=Path("a.dat"), viscosity=1e2),
        phase_solid=_PhaseParameters(density=4200.0, heat_capacity=1000.0, melt_fraction=0, thermal_conductivity=4.0,
                                     thermal_expansivity=1e-5, viscosity=1e21),
        phase_mixed=_PhaseMixedParameters(latent_heat_of_fusion=4e6, rheological_transition_melt_fraction=0.4,
                                          rheological_transition_width=0.15, solidus=Path("s.dat"),
                                          liquidus="l.dat", phase="mixed", phase_transition_width=0.1,
                                          grain_size=1e-3, matprop_smooth_width=0.01, const_properties=const),
        radionuclides=[_Radionuclide(name="K40", t0_years=4.55e9, abundance=1.1668e-4, concentration=310,
                                     heat_production=2.8761e-5, half_life_years=1.248e9),
                       _Radionuclide(name="Al26", t0_years=4.55e9, abundance=0.0, concentration=0.0,
                                     heat_production=0.3583, half_life_years=0.717e6)],
        solver=_SolverParameters(start_time=0, end_time=0, atol=0.01, rtol=1e-6),
    )


def test_calendar_version_satisfies_proteus():
    assert re.fullmatch(r"\d\d\.\d\d\.\d\d", aragog.__version__)
    assert tuple(int(x) for x in aragog.__version__.split(".")) >= (26, 7, 4)


def test_file_logger_writes_once_per_message(tmp_path):
    logger = aragog_file_logger(console_level=logging.WARNING, file_level="DEBUG", log_dir=tmp_path)
    aragog_file_logger(console_level=logging.WARNING, file_level="DEBUG", log_dir=tmp_path)  # replaces
    logging.getLogger("aragog.test").debug("hello from the test")
    for handler in logger.handlers:
        handler.flush()
    assert (tmp_path / "aragog.log").read_text().count("hello from the test") == 1


def test_parameters_normalise_like_upstream():
    p = upstream_params()
    assert p.boundary_conditions.inner_boundary_value == 0.0  # core cooling: value unused
    assert p.boundary_conditions.param_utbl_const == 0.0  # no UTBL
    assert p.radionuclides[0].concentration == pytest.approx(310e-6, rel=1e-15)  # ppm -> mass fraction
    native = p.to_config()
    assert native.radionuclides[0].concentration == pytest.approx(310.0, rel=1e-12)  # back to ppm
    assert native.phase_mixed.const_T_ref == 3500.0 and native.phase_mixed.const_S_ref == 3000.0
    assert native.solver.atol == 0.01 and p.to_config(atol_scale=3.0).solver.atol == pytest.approx(0.03)
    assert p.to_config().solver.output_points == 65


def test_zero_amplitude_nuclide_heats_exactly_zero():
    al26 = upstream_params().radionuclides[1]
    assert al26.get_heating(0.0) == 0.0  # 0 x exp(huge): no NaN
    k40 = upstream_params().radionuclides[0]
    expected = 2.8761e-5 * 1.1668e-4 * 310e-6 * math.exp(math.log(2) * 4.55e9 / 1.248e9)
    assert k40.get_heating(0.0) == pytest.approx(expected, rel=1e-14)


def test_overflowing_nuclide_is_refused_by_name():
    with pytest.raises(ConfigError, match="radionuclide Fe60"):
        upstream_params().__class__(**{**upstream_params().__dict__, "radionuclides": [
            _Radionuclide(name="Fe60", t0_years=4.55e9, abundance=1.0, concentration=1.0, heat_production=3.7e-2,
                          half_life_years=2.62e6)]})


@pytest.mark.parametrize("field, value, message", [
    ("core_bc", "core_module", "core_module"),
    ("core_bc", "nonsense", "unknown"),
    ("outer_boundary_condition", 2, "Zahnle"),
    ("inner_boundary_condition", 7, "inner_boundary_condition"),
])
def test_unavailable_boundary_modes_are_refused(field, value, message):
    bc = upstream_params().boundary_conditions
    setattr(bc, field, value)
    with pytest.raises(ConfigError, match=message):
        bc.normalize()


def test_unknown_solver_method_is_refused():
    with pytest.raises(ConfigError, match="solver_method"):
        _EnergyParameters(conduction=True, convection=True, gravitational_separation=True, mixing=True,
                          radionuclides=False, tidal=False, solver_method="euler")


def test_from_file_reads_both_syntaxes(tmp_path):
    ini = tmp_path / "a.cfg"
    sections = {
        "solver": "start_time = 0\nend_time = 10\n",
        "boundary_conditions": ("outer_boundary_condition = 4\nouter_boundary_value = 100\n"
                                "inner_boundary_condition = 2\ninner_boundary_value = 0\nemissivity = 1\n"
                                "equilibrium_temperature = 273\ncore_heat_capacity = 880\n"),
        "mesh": ("outer_radius = 6371000\ninner_radius = 5371000\nnumber_of_nodes = 12\n"
                 "mixing_length_profile = constant\ncore_density = 10738\n"),
        "energy": ("conduction = True\nconvection = True\ngravitational_separation = False\nmixing = False\n"
                   "radionuclides = False\ntidal = False\n"),
        "initial_condition": "surface_temperature = 3600\n",
        "phase_liquid": ("density = 4000\nviscosity = 1E2\nheat_capacity = 1000\nmelt_fraction = 1\n"
                         "thermal_conductivity = 4\nthermal_expansivity = 1.0E-5\n"),
        "phase_solid": ("density = 4200\nviscosity = 1E21\nheat_capacity = 1000\nmelt_fraction = 0\n"
                        "thermal_conductivity = 4\nthermal_expansivity = 1.0E-5\n"),
        "phase_mixed": ("latent_heat_of_fusion = 4e6\nrheological_transition_melt_fraction = 0.4\n"
                        "rheological_transition_width = 0.15\nsolidus = s.dat\nliquidus = l.dat\nphase = mixed\n"
                        "phase_transition_width = 0.1\ngrain_size = 1.0E-3\n"),
    }
    ini.write_text("".join(f"[{k}]\n{v}\n" for k, v in sections.items()))
    p = Parameters.from_file(ini)
    assert p.mesh.number_of_nodes == 12 and p.phase_solid.viscosity == 1e21 and p.energy.convection is True
    assert p.to_config().mesh.mixing_length_profile == "constant"


def test_phase_file_name_only_where_tables_supply_it():
    p = upstream_params(const=False)
    p.phase_liquid.viscosity = Path("visc.dat")
    with pytest.raises(ConfigError, match="phase_liquid.viscosity"):
        p.to_config()


@pytest.fixture(scope="module")
def table_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tables")
    eos.write_default_tables(directory)
    return directory


def test_entropy_eos_inverts_its_own_temperature(table_dir):
    e = EntropyEOS(table_dir)
    assert e.P_min < 1e5 < e.P_max
    for P, T in [(1e5, 2500.0), (1e5, 3500.0), (5e10, 4000.0)]:
        S = e.invert_temperature(P, T)
        # brentq to xtol 1e-10 J/kg/K; T varies by ~1 K per J/kg/K: 1e-7 K is a safe bound.
        assert e.temperature_scalar(P, S) == pytest.approx(T, abs=1e-7)
    S = np.array([2000.0, 2500.0, 3000.0])
    # array and scalar queries run the same evaluator; XLA may vectorise the array case (last bit)
    np.testing.assert_allclose(e.temperature(1e9, S), [e.temperature_scalar(1e9, s) for s in S], rtol=1e-14)
    with pytest.raises(aragog.EOSError, match="outside"):
        e.invert_temperature(1e5, 1e7)


def test_core_density_from_structure_file(tmp_path):
    path = tmp_path / "zalmoxis_output.dat"
    r = np.linspace(3.5e6, 6.4e6, 30)
    np.savetxt(path, np.column_stack([r, np.linspace(1.3e11, 1e5, 30), np.full(30, 4500.0),
                                      np.full(30, 9.8), np.full(30, 3000.0)]))  # 5 columns (Zalmoxis)
    assert derive_core_density_from_mesh(path, 1.9e24) == pytest.approx(1.9e24 / (4 / 3 * math.pi * 3.5e6**3),
                                                                         rel=1e-14)
    with pytest.raises(FileNotFoundError):
        derive_core_density_from_mesh(tmp_path / "missing.dat", 1.0)
    with pytest.raises(ValueError):
        derive_core_density_from_mesh(path, 0.0)


def test_entropy_solver_answers_each_interface_with_its_class():
    """``EntropySolver`` given the upstream parameters is the upstream adapter, which holds a
    native solver (composition: not a subclass); given this package's, the native class.
    The upstream parameters name the adapter
    (``aragog_solver_class``), which nothing native imports (tests/test_imports.py), so the
    dispatch holds in a fresh process that never names the adapter; and reading upstream
    parameters does not start JAX."""
    import subprocess
    import sys

    from aragog._compat.solver import UpstreamEntropySolver  # private: the adapter class EntropySolver dispatches to
    from aragog.solver import EntropySolver

    adapter = EntropySolver(upstream_params())
    assert type(adapter) is UpstreamEntropySolver and not isinstance(adapter, EntropySolver)
    assert type(adapter.native) is EntropySolver
    assert not issubclass(UpstreamEntropySolver, EntropySolver)
    assert type(EntropySolver(upstream_params().to_config())) is EntropySolver
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import aragog, aragog.parser; "
            "print('jax' in sys.modules); from test_upstream_adapters import upstream_params; "
            "print(type(aragog.EntropySolver(upstream_params())).__name__)")
    out = subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "UpstreamEntropySolver"]


def test_a_foreign_solver_class_is_refused():
    """Parameters whose ``aragog_solver_class`` does not name a class get a clear error."""
    from aragog.solver import EntropySolver

    class Foreign:
        @staticmethod
        def aragog_solver_class():
            return "a solver"

    with pytest.raises(TypeError, match="aragog_solver_class.. must return a class, got 'a solver'"):
        EntropySolver(Foreign())


@pytest.mark.parametrize("core_bc", ["energy_balance", "bower2018", "quasi_steady"])
def test_extra_state_slots_describe_the_upstream_state(core_bc):
    """``aragog.solver.entropy_solver.EXTRA_STATE_SLOTS`` (PROTEUS 26.10 imports it to find
    T_core in ``_S0``) names the slots after the N cell entropies of ``_S0``, in order: the
    CMB gradient for "energy_balance", the core temperature for "bower2018"."""
    from aragog.solver import EntropySolver
    from aragog.solver.entropy_solver import EXTRA_STATE_SLOTS

    params = upstream_params()
    params.boundary_conditions.core_bc = core_bc
    solver = EntropySolver(params)
    solver.initialize()
    n = solver._n_stag
    S = np.linspace(2600.0, 2700.0, n)
    solver.set_initial_entropy(S)
    slots = EXTRA_STATE_SLOTS[core_bc]
    state = np.asarray(solver._S0)
    assert state.shape == (n + len(slots),)
    np.testing.assert_array_equal(state[:n], S)
    if "dSdr_cmb" in slots:  # the one-sided difference at the CMB (docs/compat.md)
        r = np.asarray(solver.evaluator.mesh.r_stag)
        assert state[n + slots.index("dSdr_cmb")] == pytest.approx((S[1] - S[0]) / (r[1] - r[0]), rel=1e-12)
    if "T_core" in slots:
        assert 1000.0 < state[n + slots.index("T_core")] < 20000.0


def _solved_upstream_solver(core_bc="energy_balance", end_time=100.0):
    from aragog.solver import EntropySolver

    params = upstream_params()
    params.boundary_conditions.core_bc = core_bc
    params.solver.end_time = end_time
    solver = EntropySolver(params)
    solver.initialize()
    solver.set_initial_entropy(np.linspace(2600.0, 2700.0, solver._n_stag))
    solver.solve()
    return solver


@pytest.mark.parametrize("core_bc", ["energy_balance", "bower2018"])
def test_state_assignment_restores_the_upstream_state(core_bc):
    """PROTEUS 26.10's retry ladder does ``solver.reset(); solver._S0 = S0_entry``: the
    whole upstream state, slot included, comes back exactly; a wrong length is refused."""
    solver = _solved_upstream_solver(core_bc, end_time=10.0)
    entry = np.array(solver._S0, copy=True)
    solver.parameters.solver.start_time, solver.parameters.solver.end_time = 10.0, 50.0
    solver.solve()
    assert not np.array_equal(solver._S0, entry)
    solver.reset()
    solver._S0 = entry
    np.testing.assert_array_equal(solver._S0, entry)
    with pytest.raises(aragog.errors.AragogError, match="_S0 needs"):
        solver._S0 = entry[:-1]


def test_max_steps_is_read_once_and_raised_by_assignment():
    """``_max_steps`` starts at ``solver.max_steps`` and is the step budget of the next
    solve (PROTEUS raises it in its retry ladder): a budget of 3 steps stops the solve
    with a status < 0, the default one finishes it."""
    solver = _solved_upstream_solver(end_time=0.0)
    assert solver._max_steps == solver.parameters.solver.max_steps
    S = np.array(solver._S0, copy=True)
    solver._max_steps = 3
    solver.parameters.solver.end_time = 1e3
    solver.reset()
    solver._S0 = S
    solver.solve()
    assert solver.solution.status < 0
    solver._max_steps = solver.parameters.solver.max_steps
    solver.reset()
    solver._S0 = S
    solver.solve()
    assert solver.solution.status == 0


def test_last_compression_is_the_next_solves_compression_work():
    """``_last_compression_J`` after a reset that changes the structure is the work the next
    solve reports as ``step_dE_compression_J`` (one computation, docs/output.md); 0 after a
    reset on the same mesh; an assigned value is read back (PROTEUS restores it after a
    retry)."""
    solver = _solved_upstream_solver()
    np.testing.assert_array_equal(solver._P_basic_flat, np.asarray(solver.evaluator.mesh.P_basic))
    solver.reset()
    assert solver._last_compression_J == 0.0
    S = np.array(solver._S0, copy=True)
    solver.parameters.mesh.outer_radius *= 0.999  # a new structure: the pressures move
    solver.reset()
    work = solver._last_compression_J
    assert work != 0.0 and math.isfinite(work)
    solver._S0 = S
    solver.parameters.solver.start_time, solver.parameters.solver.end_time = 100.0, 110.0
    solver.solve()
    assert solver.get_state().step_dE_compression_J == pytest.approx(work, rel=1e-12)
    solver._last_compression_J = 1.5
    assert solver._last_compression_J == 1.5


def test_separation_viscosity_is_passed_on_and_checked(caplog):
    """``phase_mixed.separation_viscosity`` (PROTEUS 26.10 sets "mixture") reaches this
    package's parameters without a no-effect warning; an unknown value is refused by name."""
    params = upstream_params()
    params.phase_mixed.separation_viscosity = "mixture"
    with caplog.at_level(logging.WARNING):
        native = params.to_config()
    assert native.phase_mixed.separation_viscosity == "mixture"
    assert "separation_viscosity" not in caplog.text
    assert upstream_params().to_config().phase_mixed.separation_viscosity == "melt"
    params.phase_mixed.separation_viscosity = "solid"
    with pytest.raises(ConfigError, match="separation_viscosity"):
        params.to_config()


def test_jax_factory_refuses_a_core_module_budget():
    """PROTEUS 26.10 passes ``core_module_budget`` to ``build_jax_rhs_and_jacobian`` (None
    outside core_bc "core_module"); a budget is refused by name, as the mode itself."""
    from aragog.solver.cvode_jax import build_jax_rhs_and_jacobian

    with pytest.raises(aragog.errors.AragogError, match="core_module"):
        build_jax_rhs_and_jacobian(None, None, None, None, None, None, core_module_budget=object())


def test_the_upstream_layer_uses_public_names_only():
    """docs/design.md, "Layers": the adapters of ``aragog/_compat/`` talk to the rest of the
    package through its public names. Read with ``ast``: no class there derives from
    ``EntropySolver``; no module imports a private module of another room (``aragog.eos._host``,
    ``aragog.solver._entropy_solver``; the base layer's top-level helpers such as
    ``aragog._jax`` are the house's, shared by every room); and no attribute whose name starts
    with ``_`` is read from anything but ``self`` or ``cls`` (the upstream's own private
    names, which PROTEUS reads, are the adapter's attributes, set and read on ``self``)."""
    import ast

    root = Path(__file__).resolve().parents[1] / "src" / "aragog" / "_compat"
    problems = []
    for path in sorted(root.glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            where = f"{path.name}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b) for b in node.bases]
                if any(b.split(".")[-1] == "EntropySolver" for b in bases):
                    problems.append(f"{where}: class {node.name} derives from EntropySolver")
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("aragog."):
                parts = node.module.split(".")[1:]
                if parts[0] != "_compat" and any(p.startswith("_") for p in parts[1:]):
                    problems.append(f"{where}: imports the private module {node.module}")
            elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                owner = node.value
                if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                    problems.append(f"{where}: reads {ast.unparse(node)}")
    assert not problems, "\n".join(problems)
