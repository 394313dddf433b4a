"""The bundled default model: consistency, coverage, checks report, caching."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

import numpy as np
import pytest

from aragog import eos
from aragog.eos import _bundled as bundled  # private: cache_dir and _cached_set, the disk and memory caches
from aragog.eos import PhaseBoundary
from aragog.errors import EOSError

EPS = np.finfo(np.float64).eps
RTMELT = Path(__file__).resolve().parents[2] / "shared" / "data" / "spider-RTmelt"


def test_generated_set_passes_the_checks():
    rep = eos.check_table_set(eos.generate_default_tables())
    assert rep.ok, rep.format()
    # (dT/dP)_S = alpha T/(rho c_p) holds to rounding (the same expression generates both;
    # 1e-6 is the acceptance threshold of the brief).
    assert rep.dTdPs_deviation["melt"] < 1e-6 and rep.dTdPs_deviation["solid"] < 1e-6
    # c_p = T (dS/dT)_P: the centred difference of an exponential in S has relative error
    # (dS/c_p)^2/6 = 1.67e-5 at dS = 10 J/kg/K.
    assert rep.cp_deviation["melt"] < 2e-5 and rep.cp_deviation["solid"] < 2e-5
    assert rep.T_increasing == {"melt": True, "solid": True}
    assert rep.min_gap > 300.0
    assert not rep.warnings, rep.warnings
    text = rep.format()
    for word in ("melt", "solid", "solidus", "liquidus", "NP=151", "NS=341", "result: OK", "alpha T/(rho cp)"):
        assert word in text


def test_default_grid_and_coverage():
    t = eos.generate_default_tables()
    assert t.melt.shape == (eos.DEFAULT_NS, eos.DEFAULT_NP) == (341, 151)
    assert t.melt.P[0] == 0.0 and t.melt.P[-1] == 150e9
    assert t.melt.P_uniform and t.melt.S_uniform and t.solidus.P_uniform
    for phase in (t.melt, t.solid):
        # every pressure column spans ~300 K .. 6000 K (magma-ocean range)
        assert np.all(phase.T[0] <= 300.0) and np.all(phase.T[-1] >= 6000.0)
        assert np.all(np.diff(phase.T, axis=0) > 0)
    # the phase boundaries lie inside the tables' entropy ranges
    assert t.solid.S[0] < t.solidus.S.min() and t.solidus.S.max() < t.solid.S[-1]
    assert t.melt.S[0] < t.liquidus.S.min() and t.liquidus.S.max() < t.melt.S[-1]


def test_model_is_thermodynamically_consistent():
    m = eos.BundledModel()
    P = np.linspace(0, 150e9, 7)[:, None]
    T = np.linspace(500, 5000, 9)[None, :]
    for phase, rho in (("melt", 4000.0), ("solid", 4200.0)):
        S = m.entropy(phase, P, T)
        # temperature() inverts entropy() (exp/log round trip: a few eps)
        np.testing.assert_allclose(m.temperature(phase, P, S), np.broadcast_to(T, S.shape), rtol=1e-14)
        # c_p = T (dS/dT)_P and (dT/dP)_S = alpha T/(rho c_p): check by centred differences
        h = 1e-3
        dSdT = (m.entropy(phase, P, T + h) - m.entropy(phase, P, T - h)) / (2 * h)
        # truncation (h/T)^2/3 ~ 1e-12, cancellation eps*S/h ~ 1e-9
        np.testing.assert_allclose(T * dSdT, 1000.0, rtol=1e-8)
        hp = 1e6
        dTdP = (m.temperature(phase, P + hp, S) - m.temperature(phase, P - hp, S)) / (2 * hp)
        # truncation ~(alpha hp/(rho c_p))^2/6 ~ 1e-19; cancellation eps*T/(dT ~ 2.5e-5 K) ~ 4e-8
        np.testing.assert_allclose(dTdP, np.broadcast_to(1e-5 * T / (rho * 1000.0), S.shape), rtol=1e-7)
    # entropy of fusion at fixed (P, T): dS_fus - alpha P (1/rho_m - 1/rho_s)
    fus = m.entropy("melt", P, T) - m.entropy("solid", P, T)
    np.testing.assert_allclose(fus, 300.0 - 1e-5 * P * (1 / 4000 - 1 / 4200) + 0 * T, rtol=1e-12)


def test_phase_boundaries_agree_with_the_tables():
    t = eos.generate_default_tables()
    m = eos.BundledModel()
    P = t.solidus.P
    # Analytic: S_sol(P) mapped back through the solid's T(P, S) is the solidus temperature.
    np.testing.assert_allclose(m.temperature("solid", P, t.solidus.S), m.T_solidus(P), rtol=1e-13)
    np.testing.assert_allclose(m.temperature("melt", P, t.liquidus.S), m.T_liquidus(P), rtol=1e-13)
    # The published end points: 1380.6 K / 4311.9 K at 0 / 140 GPa, 1800.2 K / 4731.5 K.
    assert m.T_solidus(0.0) == 1380.6 and m.T_solidus(140e9) == pytest.approx(4311.9, rel=1e-15)
    assert m.T_liquidus(0.0) == 1800.2 and m.T_liquidus(140e9) == pytest.approx(4731.5, rel=1e-15)


def test_generate_validates_sizes():
    with pytest.raises(EOSError):
        eos.generate_default_tables(np_=1)
    t = eos.generate_default_tables(np_=2, ns=3)
    assert t.melt.shape == (3, 2)


def test_write_default_tables_bit_exact(tmp_path):
    d = eos.write_default_tables(tmp_path / "gen", np_=21, ns=17)
    back = eos.load_table_set(d)
    gen = eos.generate_default_tables(21, 17)
    assert back.identity() == gen.identity()
    assert eos.check_table_set(d).ok


def test_default_table_set_cache(cache_home):
    t1 = eos.default_table_set(np_=11, ns=13)
    d = bundled.cache_dir(11, 13)
    assert d.parent == cache_home / "aragog" / "eos"
    assert d.name == f"{eos.MODEL_NAME}-v{eos.MODEL_VERSION}-11x13"
    assert (d / "MODEL.json").is_file() and (d / "temperature_melt.dat").is_file()
    meta = json.loads((d / "MODEL.json").read_text())
    assert meta["sha256"] == t1.identity().digest and meta["version"] == eos.MODEL_VERSION
    assert eos.default_table_set(11, 13) is t1  # in memory
    # the cache directory is itself a valid SPIDER table set
    assert eos.load_table_set(d).identity() == t1.identity()
    # a new process (cold memory cache) loads the disk copy: same bits, same identity
    bundled._cached_set.cache_clear()
    t2 = eos.default_table_set(11, 13)
    assert t2 is not t1 and t2.identity() == t1.identity()
    assert eos.default_table_dir(11, 13) == d


def test_corrupt_cache_is_regenerated(cache_home, caplog):
    t1 = eos.default_table_set(np_=5, ns=6)
    d = bundled.cache_dir(5, 6)
    meta = json.loads((d / "MODEL.json").read_text())
    meta["sha256"] = "0" * 64
    (d / "MODEL.json").write_text(json.dumps(meta))
    bundled._cached_set.cache_clear()
    with caplog.at_level(logging.WARNING, logger="aragog.eos"):
        t2 = eos.default_table_set(5, 6)
    assert t2.identity() == t1.identity()
    assert any("ignoring unusable EOS cache" in r.getMessage() for r in caplog.records)
    # ... and the cache was rewritten correctly
    assert json.loads((d / "MODEL.json").read_text())["sha256"] == t1.identity().digest


def test_unwritable_cache_only_warns(tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")  # XDG_CACHE_HOME is a file: no directory can be made below it
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    bundled._cached_set.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger="aragog.eos"):
            t = eos.default_table_set(np_=4, ns=4)
        assert t.melt.shape == (4, 4)
        assert any("keeping the tables in memory" in r.getMessage() for r in caplog.records)
        assert eos.default_table_set(np_=4, ns=4) is t
        with pytest.raises(EOSError):
            eos.default_table_dir(4, 4)
    finally:
        bundled._cached_set.cache_clear()


# ----------------------------------------------------------------------------- checks


def test_check_raises_for_a_set_that_does_not_load(tmp_path):
    # The CLI prints this one-line error and exits 1 (nothing to report on).
    with pytest.raises(EOSError, match="not found"):
        eos.check_table_set(tmp_path / "absent")


def test_check_report_format_lists_problems():
    t = eos.generate_default_tables(np_=11, ns=12)
    rep = eos.check_table_set(dataclasses.replace(t, solidus=t.liquidus, liquidus=t.solidus))
    text = rep.format()
    assert "PROBLEM: liquidus entropy not above the solidus" in text and "1 problem(s)" in text


def test_check_detects_crossed_boundaries_and_bad_tables():
    t = eos.generate_default_tables(np_=11, ns=12)
    swapped = dataclasses.replace(t, solidus=t.liquidus, liquidus=t.solidus)
    rep = eos.check_table_set(swapped)
    assert not rep.ok and any("liquidus entropy not above the solidus" in p for p in rep.problems)
    T = t.melt.T.copy()
    T[5, 3] = T[4, 3]  # not increasing in S
    rho = t.solid.rho.copy()
    rho[0, 0] = -1.0
    bad = dataclasses.replace(t, melt=dataclasses.replace(t.melt, T=T), solid=dataclasses.replace(t.solid, rho=rho))
    rep = eos.check_table_set(bad)
    assert rep.T_increasing["melt"] is False
    assert any("melt T does not increase" in p for p in rep.problems)
    assert any("solid rho has non-positive" in p for p in rep.problems)


def test_check_reports_inconsistent_adiabat_and_missing_alpha():
    t = eos.generate_default_tables(np_=11, ns=12)
    incons = dataclasses.replace(t, melt=dataclasses.replace(t.melt, dTdPs=t.melt.dTdPs * 1.01))
    rep = eos.check_table_set(incons)
    assert rep.ok  # a consistency defect is a warning, not a failure
    assert rep.dTdPs_deviation["melt"] == pytest.approx(0.01 / 1.01, rel=1e-10)
    assert any("(dT/dP)_S differs" in w for w in rep.warnings)
    no_alpha = dataclasses.replace(t, solid=dataclasses.replace(t.solid, alpha=None))
    rep = eos.check_table_set(no_alpha)
    assert rep.dTdPs_deviation["solid"] is None and "alpha absent" in rep.format()


def test_check_warns_about_short_boundaries():
    t = eos.generate_default_tables(np_=11, ns=12)
    short = PhaseBoundary.from_arrays(t.solidus.P[:6], t.solidus.S[:6])
    rep = eos.check_table_set(dataclasses.replace(t, solidus=short))
    assert rep.ok and any("solidus covers P" in w for w in rep.warnings)


@pytest.mark.skipif(not RTMELT.is_dir(), reason="reference tables absent")
def test_check_rtmelt():
    rep = eos.check_table_set(RTMELT)
    assert rep.ok, rep.format()
    assert rep.grids["melt"]["NP"] == 101 and rep.grids["melt"]["NS"] == 100
    # The RTmelt solid tables are consistent to ~1e-5; the melt tables are not (~0.66).
    assert rep.dTdPs_deviation["solid"] < 1e-4
    assert rep.dTdPs_deviation["melt"] > 0.1
