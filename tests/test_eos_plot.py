"""The EOS table-set figure (``aragog eos plot DIR``): aragog.io._eos_plot."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from aragog import eos
# private: the toy model by its name, for its exact curves (public only in eos.BUNDLED_MODELS)
from aragog.eos._bundled import DEFAULT_MODEL
from aragog.errors import AragogError, EOSError
# private: the EOS figure's parts, checked alone
from aragog.io._eos_plot import interpolate_on_grid, melting_curves_PT, plot_table_set, property_maps

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def small_set_dir(tmp_path_factory):
    return eos.write_table_set(eos.generate_default_tables(np_=11, ns=13), tmp_path_factory.mktemp("eos") / "set")


def _assert_png(path):
    data = path.read_bytes()
    assert len(data) > 1000
    assert data[:8] == PNG_MAGIC


def test_plot_directory_writes_eos_png_beside_the_tables(small_set_dir):
    pytest.importorskip("matplotlib")
    out = plot_table_set(small_set_dir)
    assert out == small_set_dir / "eos.png"
    _assert_png(out)
    assert not [p for p in small_set_dir.iterdir() if p.name.endswith(".tmp")]


def test_plot_in_memory_tables_without_alpha(tmp_path):
    pytest.importorskip("matplotlib")
    tables = eos.generate_default_tables(np_=11, ns=13)
    no_alpha = dataclasses.replace(tables, melt=dataclasses.replace(tables.melt, alpha=None))
    out = plot_table_set(no_alpha, tmp_path / "figure.png")
    assert out == tmp_path / "figure.png"
    _assert_png(out)


def test_in_memory_tables_need_out_png():
    with pytest.raises(AragogError, match="out_png is required"):
        plot_table_set(eos.generate_default_tables(np_=11, ns=13))


def test_missing_directory_names_the_path(tmp_path):
    missing = tmp_path / "no-such-tables"
    with pytest.raises(EOSError, match="no-such-tables"):
        plot_table_set(missing)
    assert not (missing / "eos.png").exists()


def test_melting_curves_match_the_bundled_model():
    # Default resolution 151 x 341: the boundaries share the tables' P axis, so only the
    # S direction interpolates, and T = C exp(S/c_p) is linear within a cell of width
    # h = 10 J/kg/K to a relative error <= (h/c_p)^2/8 * exp(h/c_p) ~ 1.3e-5 < 1e-4.
    tables = eos.generate_default_tables()
    curves = melting_curves_PT(tables)
    for name, exact in (("solidus", DEFAULT_MODEL.T_solidus), ("liquidus", DEFAULT_MODEL.T_liquidus)):
        P, T = curves[name]
        np.testing.assert_allclose(P, tables.solidus.P)
        np.testing.assert_allclose(T, exact(P), rtol=1e-4, atol=0)


def test_melting_curves_on_the_coarse_grid_within_the_bilinear_bound():
    # 11 x 13: cells of h = 3400/12 ~ 283 J/kg/K in S; the same bound gives ~1.3e-2.
    tables = eos.generate_default_tables(np_=11, ns=13)
    h = float(np.diff(tables.solid.S)[0])
    bound = (h / DEFAULT_MODEL.cp) ** 2 / 8 * np.exp(h / DEFAULT_MODEL.cp)
    curves = melting_curves_PT(tables)
    for name, exact in (("solidus", DEFAULT_MODEL.T_solidus), ("liquidus", DEFAULT_MODEL.T_liquidus)):
        P, T = curves[name]
        assert np.isfinite(T).all()
        assert np.max(np.abs(T / exact(P) - 1)) <= bound
        # Linear interpolation of a convex function overestimates.
        assert np.all(T >= exact(P) * (1 - 1e-12))


def test_interpolation_is_exact_for_bilinear_functions_and_nan_outside():
    P = np.array([0.0, 1.0, 3.0, 7.0])
    S = np.array([10.0, 20.0, 25.0])
    f = lambda p, s: 2.0 + 3.0 * p - 0.5 * s + 0.25 * p * s  # noqa: E731
    values = f(P[None, :], S[:, None])
    p = np.array([0.0, 0.5, 2.2, 7.0, 6.9, -0.1, 3.0, 3.0])
    s = np.array([10.0, 17.0, 24.0, 25.0, 12.0, 15.0, 9.0, 25.1])
    got = interpolate_on_grid(P, S, values, p, s)
    np.testing.assert_allclose(got[:5], f(p[:5], s[:5]), rtol=1e-14)
    assert np.isnan(got[5:]).all()


def test_boundary_leaving_a_table_gives_nan_only_there():
    tables = eos.generate_default_tables(np_=11, ns=13)
    S_liq = np.array(tables.liquidus.S)
    S_liq[-3:] = tables.melt.S[-1] + 50.0  # beyond the melt table's entropy range
    liquidus = eos.PhaseBoundary.from_arrays(tables.liquidus.P, S_liq)
    _, T = melting_curves_PT(dataclasses.replace(tables, liquidus=liquidus))["liquidus"]
    assert np.isfinite(T[:-3]).all() and np.isnan(T[-3:]).all()


def test_property_maps_units_and_alpha_fallback():
    tables = eos.generate_default_tables(np_=11, ns=13)
    with_alpha = property_maps(tables.solid)
    without = property_maps(dataclasses.replace(tables.solid, alpha=None))
    np.testing.assert_allclose(without["alpha"], with_alpha["alpha"], rtol=1e-12)
    np.testing.assert_allclose(with_alpha["dTdP"], np.asarray(tables.solid.dTdPs) * 1e9)
    assert all(v.shape == tables.solid.shape for v in with_alpha.values())
