"""The structure of the compiled programs (kernel counts), and the packed EOS layout that
keeps them small.

XLA:CPU runs each entry instruction as a kernel with a fixed cost of about a microsecond, so
the right-hand side's speed follows its kernel count (docs/solver.md, "Speed"). The bounds
below are today's counts (jaxlib 0.10, XLA:CPU thunk runtime) plus ~20 % headroom: a change
that adds table gathers or splits the evaluation into many more kernels fails here, while
small fusion decisions of a newer XLA do not.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from aragog import EntropySolver, eos, load_config
# private: the packed EOS layout and its axis modes, below evaluate_phase
from aragog.eos._packed import PackedEOS, axis_mode, pack_tables, packed_tables
from aragog.eos import load_table_set
from aragog.solver import kernel_counts

from conftest import INPUT, SHARED_DATA
from _configs import TOY_EARTH, material_params


def _programs(overrides, config=TOY_EARTH):
    solver = EntropySolver(load_config(config, overrides=overrides))
    solver.initialize()
    return {name: kernel_counts(solver._pair.program(name).compiled) for name in ("rhs", "jac")}


def test_table_mode_rhs_reads_tables_with_two_gathers():
    counts = _programs({"mesh.number_of_nodes": 20})
    rhs, jac = counts["rhs"], counts["jac"]
    # one gather for both phase boundaries, one for every table corner of both phases
    assert rhs["gathers"] == 2, rhs
    assert rhs["kernels"] <= 46, rhs   # 38 today (97 with one gather per table corner)
    assert jac["kernels"] <= 130, jac  # 109 today
    assert jac["gathers"] <= 3, jac    # + the band assembly's static gather


def test_constant_mode_rhs_has_no_gathers():
    counts = _programs({"mesh.number_of_nodes": 20}, INPUT / "constant_properties.toml")
    assert counts["rhs"]["gathers"] == 0, counts["rhs"]
    assert counts["rhs"]["kernels"] <= 16, counts["rhs"]  # 13 today


def test_kernel_counts_reads_hlo_text():
    text = """HloModule m
ENTRY %main (p: f64[4]) -> f64[4] {
  %p = f64[4]{0} parameter(0)
  %c = f64[] constant(1)
  %f = f64[4]{0} fusion(%p, %c), kind=kLoop, calls=%fc, backend_config={"outer_dimension_partitions":["2"]}
  ROOT %g = f64[4]{0} gather(%f, %p), offset_dims={}
}
"""
    assert kernel_counts(text) == {"kernels": 2, "fusions": 1, "gathers": 1, "partitioned": 1}


# ----------------------------------------------------------------------------- packed layout
def test_axis_modes():
    assert axis_mode(np.linspace(0.0, 1.0, 11)) == "exact"
    near = np.linspace(0.0, 1.0, 11)
    near[3] += 0.01  # a tenth of a cell: estimate + one correction step
    assert axis_mode(near) == "near"
    assert axis_mode(np.geomspace(1.0, 100.0, 11)) == "search"
    assert packed_tables(eos.default_table_set()).modes == ("exact",) * 6


@pytest.mark.usefixtures("x64")  # the tables as JAX arrays and the pure evaluator, in float64 as a user calls them
def test_packed_views_and_identity():
    tables = eos.default_table_set()
    packed = packed_tables(tables)
    assert isinstance(packed, PackedEOS)
    for phase in ("melt", "solid"):
        for field in ("T", "rho", "cp", "dTdPs", "alpha"):
            np.testing.assert_array_equal(getattr(getattr(packed, phase), field), getattr(getattr(tables, phase), field))
    np.testing.assert_array_equal(packed.solidus.S, tables.solidus.S)
    np.testing.assert_array_equal(packed.liquidus.S, tables.liquidus.S)
    assert packed.identity().digest == tables.identity().digest
    assert packed.to_jax().identity() == packed.identity()


@pytest.mark.usefixtures("x64")  # the tables as JAX arrays and the pure evaluator, in float64 as a user calls them
@pytest.mark.parametrize("which", ["bundled", "RTmelt"])
def test_packed_evaluator_matches_the_plain_lookups(which):
    """Away from the mush blend (|g - 0|, |g - 1| > 0.5, where the blend weight is below
    1e-20) the evaluator's values are the bilinear lookups of one table; the boundary values
    are the lookups at the boundary entropy. The reference is aragog.eos._lookup (its own
    cell search: binary search or estimate-and-correct, per-table gathers). Tolerance 1e-12
    relative: the arithmetic index differs from a search only by rounding of the fraction."""
    if which == "bundled":
        tables = eos.default_table_set()
    else:
        if not (SHARED_DATA / "spider-RTmelt").is_dir():
            pytest.skip("RTmelt tables not available")
        tables = load_table_set(SHARED_DATA / "spider-RTmelt")
    rng = np.random.default_rng(1)
    P_lo = max(tables.melt.P[0], tables.solid.P[0], tables.solidus.P[0], tables.liquidus.P[0])
    P_hi = min(tables.melt.P[-1], tables.solid.P[-1], tables.solidus.P[-1], tables.liquidus.P[-1])
    P = rng.uniform(P_lo, P_hi, 4000)
    P[:50] = np.asarray(tables.melt.P)[rng.integers(0, len(tables.melt.P), 50)].clip(P_lo, P_hi)  # on nodes
    S_sol = np.interp(P, tables.solidus.P, tables.solidus.S)
    S_liq = np.interp(P, tables.liquidus.P, tables.liquidus.S)
    gap = S_liq - S_sol
    melt = rng.random(P.size) < 0.5
    S = np.where(melt, S_liq + rng.uniform(0.6, 3.0, P.size) * gap, S_sol - rng.uniform(0.6, 3.0, P.size) * gap)
    S = np.clip(S, max(tables.melt.S[0], tables.solid.S[0]), min(tables.melt.S[-1], tables.solid.S[-1]))
    keep = np.where(melt, S > S_liq + 0.55 * gap, S < S_sol - 0.55 * gap)
    P, S, melt, S_sol, S_liq = P[keep], S[keep], melt[keep], S_sol[keep], S_liq[keep]

    st = jax.jit(eos.evaluate_phase)(packed_tables(tables).to_jax(), material_params(), P, S)
    ref_m = eos.lookup_phase(tables.melt, P, S)
    ref_s = eos.lookup_phase(tables.solid, P, S)
    for field in ("T", "rho", "cp", "alpha", "dTdPs"):
        expect = np.where(melt, ref_m[field], ref_s[field])
        np.testing.assert_allclose(np.asarray(getattr(st, field)), expect, rtol=1e-12, err_msg=field)
    np.testing.assert_allclose(np.asarray(st.S_sol), S_sol, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(st.S_liq), S_liq, rtol=1e-12)
    T_liq = eos.lookup_phase(tables.melt, P, np.asarray(st.S_liq), fields=("T",))["T"]
    T_sol = eos.lookup_phase(tables.solid, P, np.asarray(st.S_sol), fields=("T",))["T"]
    np.testing.assert_allclose(np.asarray(st.T_liq), T_liq, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(st.T_sol), T_sol, rtol=1e-12)


@pytest.mark.usefixtures("x64")  # the tables as JAX arrays and the pure evaluator, in float64 as a user calls them
def test_values_on_grid_nodes_are_the_tables_own():
    """A query exactly on a node of an arithmetic ("exact") axis lands on it: the value is
    the table entry, bit for bit, as with a search."""
    tables = eos.default_table_set()
    melt = tables.melt
    i = np.arange(3, len(melt.P) - 3, 7)
    j = np.full(i.shape, len(melt.S) - 5)  # deep in the melt at every pressure
    P, S = np.asarray(melt.P)[i], np.asarray(melt.S)[j]
    st = jax.jit(eos.evaluate_phase)(packed_tables(tables).to_jax(), material_params(), P, S)
    np.testing.assert_array_equal(np.asarray(st.rho), np.asarray(melt.rho)[j, i])


@pytest.mark.usefixtures("x64")  # the tables as JAX arrays and the pure evaluator, in float64 as a user calls them
def test_pack_inside_a_trace_gives_the_same_values():
    tables = eos.default_table_set()
    P = np.linspace(1e9, 100e9, 50)
    S = np.linspace(1500.0, 3500.0, 50)
    a = jax.jit(eos.evaluate_phase)(tables.to_jax(), material_params(), P, S)
    b = jax.jit(eos.evaluate_phase)(packed_tables(tables).to_jax(), material_params(), P, S)
    for field in ("T", "rho", "cp", "phi", "S_sol"):
        np.testing.assert_allclose(np.asarray(getattr(a, field)), np.asarray(getattr(b, field)), rtol=1e-13)
    assert pack_tables(tables).modes == packed_tables(tables).modes
