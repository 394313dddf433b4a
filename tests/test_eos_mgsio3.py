"""The generated MgSiO3 tables (aragog.eos.models._generate, eos.model = "mgsio3"): every
node a converged state of its phase model, the thermodynamic identities, the melting
curves in P-S and back in P-T, the cache keyed by the model's parameters, the CLI, and a
solve on them.

A small grid (21 pressures x 25 entropies) keeps each compile short; the model and its
programs are the same as on the default 200 x 200 grid."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from aragog import eos
from aragog.eos import _bundled as bundled  # private: cache_dir, DEFAULT_SIZES and _cached_set
from aragog.eos.models import generate_tables, phase_arrays
from aragog.eos.models import state_PS
from aragog.eos.models import MGSIO3
from aragog.eos.models import properties_PT
from aragog.errors import EOSError

NP, NS = 21, 25
P_AXIS = np.linspace(0.0, MGSIO3.P_max, NP)


@pytest.fixture(scope="module")
def tables():
    return generate_tables(MGSIO3, NP, NS)


@pytest.fixture(scope="module", params=["melt", "solid"])
def arrays(request):
    name = request.param
    curve = MGSIO3.liquidus if name == "melt" else MGSIO3.solidus
    return name, phase_arrays(MGSIO3.phase(name), P_AXIS, MGSIO3.temperature_range(name), curve, NS)


@pytest.mark.usefixtures("x64")  # the model's pure functions, in float64 as a user calls them
def test_every_node_is_the_phase_state_at_its_P_and_S(arrays):
    """The forward model at each node's (P, T) gives the node's entropy back: to 1e-9
    J/kg/K (the Newton residual accepted is 1e-6; the volume solve at (P, T) converges
    to rounding, ~1e-12 of S ~ 1e3)."""
    name, a = arrays
    P = np.broadcast_to(P_AXIS[None, :], a["T"].shape)
    fwd = properties_PT(MGSIO3.phase(name), P, a["T"])
    np.testing.assert_allclose(np.asarray(fwd["S"]), np.broadcast_to(a["S"][:, None], P.shape), rtol=0, atol=1e-6)
    np.testing.assert_allclose(np.asarray(fwd["rho"]), a["rho"], rtol=1e-10)
    # the axis spans the phase at P = 0 between its two table temperatures
    np.testing.assert_allclose(a["T"][[0, -1], 0], MGSIO3.temperature_range(name), rtol=1e-10)


def test_thermodynamic_identities_hold_to_rounding_in_the_tables(arrays):
    """c_p - c_v = alpha^2 K_T V T / m and (dT/dP)_S = alpha T / (rho c_p), node by node
    from the generated columns: 1e-12 relative (a few ulp of the autodiff values)."""
    _, a = arrays
    np.testing.assert_allclose(a["cp"] - a["cv"], a["alpha"] ** 2 * a["K_T"] * a["T"] / a["rho"], rtol=1e-12)
    np.testing.assert_allclose(a["dTdPs"], a["alpha"] * a["T"] / (a["rho"] * a["cp"]), rtol=1e-12)


@pytest.mark.usefixtures("x64")  # the model's pure functions, in float64 as a user calls them
def test_cp_is_T_dS_dT_at_constant_P(arrays):
    """c_p = T (dS/dT)_P against a central difference of the model's S(P, T) at each node
    (relative step 1e-4: truncation ~1e-8, rounding ~1e-12 / 1e-4): 1e-6 relative."""
    name, a = arrays
    phase = MGSIO3.phase(name)
    P = np.broadcast_to(P_AXIS[None, :], a["T"].shape)
    h = 1e-4 * a["T"]
    up = np.asarray(properties_PT(phase, P, a["T"] + h)["S"])
    down = np.asarray(properties_PT(phase, P, a["T"] - h)["S"])
    np.testing.assert_allclose(a["T"] * (up - down) / (2 * h), a["cp"], rtol=1e-6)


def test_tables_are_a_valid_spider_set_and_round_trip(tables, tmp_path):
    report = eos.check_table_set(tables)
    assert report.ok, report.format()
    back = eos.load_table_set(eos.write_table_set(tables, tmp_path / "set"))
    assert back.identity() == tables.identity()


@pytest.mark.usefixtures("x64")  # the model's pure functions, in float64 as a user calls them
def test_melting_curves_convert_to_entropy_and_back_to_temperature(tables):
    """S_sol(P) = S_solid(P, T_sol(P)) and S_liq(P) = S_melt(P, T_liq(P)): the (P, S) ->
    T inversion of each phase at the stored boundary entropy gives the published T(P)
    back to 1e-10 relative (both solves converge to rounding)."""
    for boundary, curve, phase in ((tables.solidus, MGSIO3.solidus, MGSIO3.solid),
                                   (tables.liquidus, MGSIO3.liquidus, MGSIO3.melt)):
        P, S = np.asarray(boundary.P), np.asarray(boundary.S)
        T = np.asarray(state_PS(phase, P, S, np.asarray(curve.temperature(P)) * 1.05)["T"])
        np.testing.assert_allclose(T, np.asarray(curve.temperature(P)), rtol=1e-10)
    jump = np.asarray(tables.liquidus.S) - np.asarray(tables.solidus.S)
    # the entropy offset's calibration (mgsio3 docstring): S_liq - S_sol 630-860 J/kg/K on 0-150 GPa
    assert np.all((jump > 600) & (jump < 900)), jump


@pytest.mark.usefixtures("x64")  # the model's pure functions, in float64 as a user calls them
def test_the_melt_offset_shifts_entropy_only():
    """The melt's entropy offset is a constant in F: S moves by it exactly, every other
    property is unchanged."""
    shifted = dataclasses.replace(MGSIO3, melt_entropy_offset=MGSIO3.melt_entropy_offset + 100.0)
    P, T = np.array([1e9, 60e9, 135e9]), np.array([2500.0, 3500.0, 4500.0])
    a, b = properties_PT(MGSIO3.melt, P, T), properties_PT(shifted.melt, P, T)
    np.testing.assert_allclose(np.asarray(b["S"]) - np.asarray(a["S"]), 100.0, rtol=1e-12)
    for key in ("rho", "cp", "alpha", "dTdP_S"):
        np.testing.assert_allclose(np.asarray(b[key]), np.asarray(a[key]), rtol=1e-13)
    assert shifted.digest() != MGSIO3.digest()


def test_a_range_beyond_the_solid_spinodal_is_refused_with_where():
    """Bridgmanite has no state at P = 0 above ~4470 K: a table reaching 6000 K there is
    an EOSError naming the phase, not a table with holes."""
    model = dataclasses.replace(MGSIO3, T_solid=(300.0, 6000.0))
    with pytest.raises(EOSError, match=r"bridgmanite.*no state at P = 0"):
        generate_tables(model, NP, NS)
    with pytest.raises(EOSError, match="at least 2 points"):
        generate_tables(MGSIO3, 1, NS)
    with pytest.raises(EOSError, match="top pressure"):
        generate_tables(MGSIO3, NP, NS, pmax=-1.0)


def test_cache_is_keyed_by_the_model_parameters(cache_home):
    """The cached set's folder and MODEL.json carry the parameters' digest and the size;
    a new process (cold memory) loads the same bits; another pmax is another folder."""
    t1 = eos.default_table_set(NP, NS, model="mgsio3")
    d = bundled.cache_dir(NP, NS, model="mgsio3")
    assert d.name == f"mgsio3-v{MGSIO3.digest()}-{NP}x{NS}"
    meta = json.loads((d / "MODEL.json").read_text())
    assert meta["version"] == MGSIO3.digest() and meta["pmax"] == MGSIO3.P_max
    assert meta["sha256"] == t1.identity().digest
    assert eos.default_table_set(NP, NS, model="mgsio3") is t1
    bundled._cached_set.cache_clear()
    t2 = eos.default_table_set(NP, NS, model="mgsio3")
    assert t2 is not t1 and t2.identity() == t1.identity()
    assert bundled.cache_dir(NP, NS, model="mgsio3", pmax=200e9).name.endswith("-200GPa")
    assert bundled.DEFAULT_SIZES["mgsio3"] == (200, 200)
    with pytest.raises(EOSError, match="unknown bundled EOS model 'nope'"):
        eos.default_table_set(model="nope")


def test_cli_generates_the_set(cache_home, tmp_path, capsys):
    from aragog.cli import main

    out = tmp_path / "mgsio3"
    assert main(["eos", "generate", str(out), "--model", "mgsio3", "--np", str(NP), "--ns", str(NS),
                 "--pmax", "150"]) == 0
    assert "'mgsio3' table set (21 pressures x 25 entropies per phase, 0-150 GPa)" in capsys.readouterr().out
    assert eos.load_table_set(out).identity() == eos.default_table_set(NP, NS, model="mgsio3").identity()
    assert main(["eos", "generate", str(tmp_path / "x"), "--model", "mgsio4"]) == 1
    assert "--model: unknown bundled model 'mgsio4'; available: default, mgsio3" in capsys.readouterr().err
    assert main(["eos", "generate", str(tmp_path / "x"), "--pmax", "0"]) == 1
    assert "--pmax must be a positive number of GPa" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_a_solve_on_the_generated_tables():
    """The demo planet on eos.model = "mgsio3" (default 200 x 200 tables), 20 nodes for
    1000 yr: a status-0 solve from a fully molten mantle that cools and crystallises
    (a bare grey-body surface: past half solid within 1000 yr). The tables come from the
    user's cache as a user's run takes them (generated there by the first test that needs
    them; the generation itself is tested above, with a cache of its own)."""
    from pathlib import Path

    from aragog import EntropySolver, load_config

    config = Path(__file__).resolve().parents[1] / "input" / "earth.toml"
    params = load_config(config, overrides={"mesh.number_of_nodes": 20, "solver.end_time": 1000.0,
                                            "solver.output_points": 3, "solver.output_spacing": "linear"})
    assert params.eos.model == "mgsio3"
    solver = EntropySolver(params)
    solver.initialize()
    solver.solve()
    state = solver.get_state()
    assert state.status == 0, state.message
    history = solver.history()
    T = history.scalars["T_magma"]
    phi = history.scalars["Phi_global"]
    assert np.all(np.diff(T) < 0) and phi[0] == pytest.approx(1.0) and np.all(np.diff(phi) < 0) and phi[-1] < 0.5
