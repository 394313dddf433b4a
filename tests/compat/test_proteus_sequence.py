"""PROTEUS's coupled-run call sequence (``proteus_sequence.py``) against this package.

The sequence uses only the upstream aragog's names, imported as PROTEUS imports them, so
these tests fail when an adapter is missing a name, an attribute or a meaning PROTEUS
relies on. Each (mode, backend) run is made once per session (``conftest.py``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from proteus_sequence import CALLS, PROTEUS_OUTPUT_FIELDS

# Both modes run by default: table mode compiles the table-driven programs once (~35 s of
# XLA compile on 2 cores, ~50 s for the first table run in all; the second backend reuses
# them), constant-property mode takes ~15 s.
MODES = ("const", "table")
BACKENDS = ("numpy", "jax")


def _calls(record):
    return record["calls"]


# (mode, backend, structure): every mode x backend on the Adams-Williamson mesh, and the
# structure-file path (eos_method 2: a Zalmoxis-style file rewritten before each call and
# re-read by reset(), with the core-density echo-back) in constant-property mode.
CASES = [
    pytest.param(m, b, "dummy", id=f"{m}-{b}")
    for m in ("const", "table") for b in BACKENDS
] + [pytest.param("const", "numpy", "zalmoxis", id="const-numpy-structure-file")]


@pytest.mark.parametrize(("mode", "backend", "structure"), CASES)
def test_sequence_runs_and_is_physical(sequence_runs, mode, backend, structure):
    record, solver = sequence_runs.get(mode, backend, structure)
    assert record["ok"], record.get("error")
    calls = _calls(record)
    assert [c["label"] for c in calls] == ["equilibrate"] + [
        f"call{i}" + ("-retry" if c[-1] else "") for i, c in enumerate(CALLS, start=1)]
    assert record["missing_output_fields"] == []
    for c in calls:
        assert c["status"] == 0, c["label"]
        assert not c.get("missing_output_fields"), (c["label"], c.get("missing_output_fields"))
        for key in ("T_magma", "T_core", "Phi_global", "dt_actual"):
            assert isinstance(c[key], float) and math.isfinite(c[key]), (c["label"], key, c[key])
        assert 0.0 <= c["Phi_global"] <= 1.0
        # A magma ocean: 1000 K < T < 10000 K anywhere (tables span ~200 K to ~8800 K).
        assert 1000.0 < c["T_magma"] < 10000.0 and 1000.0 < c["T_core"] < 10000.0
        assert np.all(np.isfinite(c["S_stag_final"])) and len(c["S_stag_final"]) == record["n_stag"]
    # Windows: the equilibration call is empty, each coupled call covers its window (the
    # retried one half of it) and PROTEUS's clock follows dt_actual.
    assert calls[0]["dt_actual"] == 0.0 and calls[0]["t_start"] == calls[0]["t_end"] == 0.0
    for c, (dt, *_rest, retry) in zip(calls[1:], CALLS):
        expected = dt / 2 if retry else dt
        assert c["dt_actual"] == pytest.approx(expected, rel=1e-12, abs=1e-12), c["label"]
    for prev, c in zip(calls[1:], calls[2:]):
        assert c["t_start"] == pytest.approx(prev["t_start"] + prev["dt_actual"], rel=1e-12)
    # Cooling of the core: the energy-balance core gives heat to the mantle in every coupled
    # call (mean F_cmb > 0, out of the core) and the bottom cell (T_core, PROTEUS's T_cmb)
    # does not warm. (The mantle's mean entropy need not fall: the core's heat, up to
    # ~1e6 W/m2 through the CMB, is of the order of F_atm through the surface.) The first
    # coupled call is left out of the T_core check: it starts from the set-up's isentrope
    # (with the ini_dsdr tilt), not from an evolved state.
    coupled = calls[1:]
    assert all(c["F_cmb"] > 0.0 for c in coupled), [c["F_cmb"] for c in coupled]
    cores = [c["T_core"] for c in coupled]
    assert all(b <= a for a, b in zip(cores, cores[1:])), cores
    # The final get_state() repeats the last call's state.
    final = record["final_state"]
    for key in ("T_magma", "T_core", "Phi_global", "status", "dt_actual"):
        assert final[key] == calls[-1][key]


@pytest.mark.parametrize(("mode", "backend", "structure"), CASES)
def test_energy_of_every_call_closes(sequence_runs, mode, backend, structure):
    """What PROTEUS's coupler sums into E_residual_cons_frac: per call, the heat-content
    change against the boundary and source energies. With the energy-balance core the CMB
    energy is the core's energy change (exact), the prescribed surface flux is integrated
    exactly, so the budget closes to the integrator's accuracy at PROTEUS's tolerances
    (rtol 1e-6, atol 0.01 K): measured <= 1.3e-5 of the largest term in table mode (1e-8 at
    rtol 1e-8, atol 1e-5 K); 1e-4 allowed. (With the CMB energy from 65 output times it was
    4.5e-3 to 1.3e-2.) The reported F_cmb is that energy over the call's area and length."""
    record, _ = sequence_runs.get(mode, backend, structure)
    for c in _calls(record)[1:]:
        terms = [c[k] for k in ("step_dE_F_int_J", "step_dE_F_cmb_J", "step_dE_Q_radio_J", "step_dE_Q_tidal_J")]
        heat = c["step_dE_state_heat_J"]
        largest = max(abs(x) for x in terms + [heat])
        assert abs(heat - sum(terms)) <= 1e-4 * largest, (c["label"], heat, terms)
        area = 4.0 * math.pi * c["r_basic0"] ** 2
        assert c["F_cmb"] == pytest.approx(c["step_dE_F_cmb_J"] / (area * c["dt_actual"] * 31_557_600.0),
                                           rel=1e-12), c["label"]


@pytest.mark.parametrize(("mode", "backend", "structure"), CASES)
def test_retry_restores_pre_solve_state(sequence_runs, mode, backend, structure):
    """PROTEUS's ladder: set_initial_dSdr_cmb(snapshot), reset(), set_initial_entropy(S_ic)
    must give back exactly the state the rejected attempt started from (entropy and the
    CMB gradient slot), the halved window and the raised _atol_sf; afterwards the override
    is released and _atol_sf is 1 again."""
    record, solver = sequence_runs.get(mode, backend, structure)
    (call,) = [c for c in _calls(record) if c["label"].endswith("-retry")]
    retry = call["retry"]
    pre = np.asarray(retry["S0_pre"], dtype=float)
    restored = np.asarray(retry["S0_restored"], dtype=float)
    # energy_balance core: the state is N entropies plus dS/dr at the CMB (upstream layout)
    assert pre.shape == (record["n_stag"] + 1,)
    np.testing.assert_array_equal(restored, pre)
    assert retry["dSdr_snapshot"] == pre[-1]
    first, second = retry["attempts"]
    assert first["rejected"] and not second["rejected"]
    assert (first["t_start"], first["t_end"]) == (call["t_start"], call["t_end"])
    assert second["t_end"] - second["t_start"] == pytest.approx(0.5 * (call["t_end"] - call["t_start"]))
    assert first["atol_sf"] == 1.0 and second["atol_sf"] == 3.0
    assert solver._atol_sf == 1.0
    # the override is released: the next set_initial_entropy takes the last solve's slot
    assert getattr(solver, "_dSdr_cmb_init", None) is None


@pytest.mark.parametrize(("mode", "backend", "structure"), CASES)
def test_no_retrace_after_first_coupled_call(sequence_runs, mode, backend, structure):
    """Inputs change between every call (F_atm, T_eqm, radius, gravity, tides, window,
    _atol_sf): traces and compiles of every program stay what they were after the first
    coupled call."""
    record, solver = sequence_runs.get(mode, backend, structure)
    calls = _calls(record)
    first = calls[1]["jit_stats"]
    assert first, "solver.native.jit_stats is missing"
    # (0 traces and compiles is fine: a second solver with the same static key in this
    # process reuses the programs the first one compiled.)
    assert first["rhs"]["calls"] > 0

    def counts(stats):
        return {name: (s.get("traces"), s.get("compiles")) for name, s in stats.items()}

    for c in calls[2:]:
        assert counts(c["jit_stats"]) == counts(first), c["label"]
    assert counts(record["jit_stats_final"]) == counts(first)
    assert counts(solver.native.jit_stats) == counts(first)


@pytest.mark.parametrize("mode", MODES)
def test_jax_factory_is_called_per_solve(sequence_runs, mode):
    """backend = "jax": PROTEUS's factory is installed and called once per solve() (the
    retried call solves twice); backend = "numpy" installs none."""
    record, _ = sequence_runs.get(mode, "jax")
    assert record["jax_factory_installed"], record.get("jax_factory_install_error")
    counts = [c["jax_factory_calls"] for c in _calls(record)]
    expected = np.cumsum([c["attempts"] for c in _calls(record)]).tolist()
    assert counts == expected
    record_np, _ = sequence_runs.get(mode, "numpy")
    assert not record_np["jax_factory_installed"]


# jax vs numpy: in this package both backends integrate with the same compiled RHS and
# Jacobian (the factory returns this solver's own programs), so they agree to the
# integrator's reproducibility, not merely to its tolerance. 1e-9 relative is ~1e3 ulp:
# room for a different operation order, far below rtol = 1e-6 (a different RHS or
# Jacobian would show up at >= 1e-7).
BACKEND_RTOL = 1e-9


@pytest.mark.parametrize("mode", MODES)
def test_backends_agree(sequence_runs, mode):
    rec_np, _ = sequence_runs.get(mode, "numpy")
    rec_jax, _ = sequence_runs.get(mode, "jax")
    for a, b in zip(_calls(rec_np), _calls(rec_jax)):
        for key in ("T_magma", "T_core", "Phi_global", "dt_actual"):
            assert b[key] == pytest.approx(a[key], rel=BACKEND_RTOL, abs=1e-12), (a["label"], key)
        np.testing.assert_allclose(b["S_stag_final"], a["S_stag_final"], rtol=BACKEND_RTOL)


def test_output_fields_list_is_what_proteus_reads():
    # guard against typos in the list the checks above rely on
    assert len(set(PROTEUS_OUTPUT_FIELDS)) == len(PROTEUS_OUTPUT_FIELDS) >= 40


@pytest.mark.parametrize("mode", MODES)
def test_core_density_echo_back(sequence_runs, mode):
    """aragog.mesh.derive_core_density_from_mesh: M_core / (4/3 pi r_0^3) from the first
    radius of a Zalmoxis-style (r, P, rho, g) file."""
    record, _ = sequence_runs.get(mode, "numpy")
    assert record["core_density_from_mesh"] == pytest.approx(record["core_density_expected"], rel=1e-12)


@pytest.mark.parametrize(("mode", "backend", "structure"), CASES)
def test_solver_geometry_attributes_have_the_upstream_values(sequence_runs, mode, backend, structure):
    """PROTEUS's JAX factory reads ``_cmb_area``, ``_core_M`` and ``_cmb_dr_cmb`` with
    ``getattr(solver, name, 0.0)``: they exist, with the upstream's definitions (its
    ``_initialize_internals``) on the solver's own mesh."""
    record, solver = sequence_runs.get(mode, backend, structure)
    r = np.asarray(solver.get_state().r_basic, dtype=float)
    rho_core = record["calls"][-1]["core_density"]
    assert solver._cmb_area == pytest.approx(4.0 * math.pi * r[0] ** 2, rel=1e-12)
    assert solver._core_M == pytest.approx(4.0 / 3.0 * math.pi * r[0] ** 3 * rho_core, rel=1e-9)
    assert solver._cmb_dr_cmb == pytest.approx(r[1] - r[0], rel=1e-12) and solver._cmb_dr_cmb > 0


@pytest.mark.parametrize(("mode", "backend", "structure"), CASES)
def test_fields_proteus_writes_have_the_upstream_definitions(sequence_runs, mode, backend, structure):
    """The fields the upstream weights by the cells' EOS mass ρ_i V_i (docs/compat.md, "What
    PROTEUS reads"): mass_stag, Phi_global, M_mantle_liquid/_solid, E_th = Σ ρ V c_p T,
    Q_radio_total, Q_tidal_total; and RF_depth = 1 - r_f/R (r_f the CMB while Φ > 0.99).
    Against the upstream on this sequence (table mode, 80 nodes): E_th within 3.3e-5,
    RF_depth equal (it was 24 % and 0 against 0.45)."""
    record, solver = sequence_runs.get(mode, backend, structure)
    out = solver.get_state()
    mesh = solver.native.inputs.mesh
    V = np.asarray(mesh.volume_stag)
    d = solver.native.diagnostics()
    mass = out.rho_stag * V
    np.testing.assert_allclose(out.mass_stag, mass, rtol=1e-14)
    assert out.Phi_global == pytest.approx(np.sum(out.phi_stag * mass) / np.sum(mass), rel=1e-14)
    assert out.M_mantle_liquid + out.M_mantle_solid == pytest.approx(out.M_mantle, rel=1e-14)
    assert out.E_th == pytest.approx(np.sum(mass * d.cp * out.T_stag), rel=1e-13)
    assert out.Q_radio_total == pytest.approx(float(d.H_radio) * np.sum(mass), rel=1e-13)
    assert out.Phi_global > 0.99 and out.RF_depth == pytest.approx(1.0 - out.r_basic[0] / out.r_basic[-1], rel=1e-14)


def test_rheological_front_of_a_crystallising_mantle():
    """RF_depth between the limits: the basic node whose interpolated φ is nearest
    phi_rheo (a mantle frozen at the base, molten above), as the upstream picks it."""
    from types import SimpleNamespace

    # private: the adapter's Phi_global/RF_depth helper, on a hand-made state
    from aragog._compat.solver import upstream_mass_fields

    n = 10
    xb = np.linspace(0.0, 1.0, n + 1)
    xs = 0.5 * (xb[1:] + xb[:-1])
    mesh = SimpleNamespace(volume_stag=np.ones(n), r_basic=3.0e6 + 3.0e6 * xb, xi_basic=xb, xi_stag=xs)
    phi = np.clip((xs - 0.3) / 0.5, 0.0, 1.0)  # solid below ξ = 0.3, molten above 0.8
    out = SimpleNamespace(rho_stag=np.ones(n), phi_stag=phi, M_mantle=10.0, T_stag=np.full(n, 3000.0))
    d = SimpleNamespace(H_radio=0.0, H=np.zeros(n), cp=np.full(n, 1000.0))
    got = upstream_mass_fields(out, d, mesh, phi_rheo=0.4)
    # φ at the nodes is linear in ξ here away from the kinks: 0.4 at ξ = 0.5, node 5
    assert got["RF_depth"] == pytest.approx(1.0 - mesh.r_basic[5] / mesh.r_basic[-1], rel=1e-14)
    assert got["Phi_global"] == pytest.approx(phi.mean(), rel=1e-14)
    frozen = upstream_mass_fields(SimpleNamespace(**{**vars(out), "phi_stag": np.zeros(n)}), d, mesh, 0.4)
    assert frozen["RF_depth"] == 0.0  # Φ < 0.01: the front has reached the surface
