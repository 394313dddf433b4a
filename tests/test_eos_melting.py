"""aragog.eos.models._melting: the Monteux et al. (2016) piecewise Simon-Glatzel solidus and
liquidus, and their conversion to P-S curves with a phase model."""

from __future__ import annotations

import numpy as np
import pytest

from aragog.eos.models import LIQUIDUS, SOLIDUS, entropy_curve
from aragog.eos.models import RTpressMelt
from aragog.eos.models import properties_PT

# the curves and the model are pure JAX: called in float64 as a user does (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("x64_module")


def test_pieces_meet_at_20_GPa_and_curves_are_ordered():
    """The upper- and lower-mantle fits meet at 20 GPa within 2 K (Monteux et al. chose
    them so; a typo in a coefficient breaks it); both curves rise with pressure and the
    liquidus lies above the solidus over 0-200 GPa."""
    for curve in (SOLIDUS, LIQUIDUS):
        assert abs(float(curve.low(20e9)) - float(curve.high(20e9))) < 2.0
    P = np.linspace(0.0, 200e9, 401)
    T_sol, T_liq = np.asarray(SOLIDUS.temperature(P)), np.asarray(LIQUIDUS.temperature(P))
    assert np.all(np.diff(T_sol) > 0) and np.all(np.diff(T_liq) > 0)
    assert np.all(T_liq > T_sol)


def test_published_anchor_values():
    """At 1 bar the upper-mantle fits give their T0 (1661.2 K, 1982.1 K); at the Earth's
    core-mantle boundary (135 GPa) the solidus is within 100 K of the 4180 K Andrault et al.
    (2011) report for a chondritic mantle."""
    assert float(SOLIDUS.temperature(0.0)) == 1661.2 and float(LIQUIDUS.temperature(0.0)) == 1982.1
    assert abs(float(SOLIDUS.temperature(135e9)) - 4180.0) < 100.0


def test_entropy_curve_is_the_phase_entropy_on_the_curve():
    """S_liq(P) = S_melt(P, T_liq(P)) exactly (the same model call)."""
    melt = RTpressMelt()
    P = np.array([5e9, 50e9, 130e9])
    S = np.asarray(entropy_curve(LIQUIDUS, melt, P))
    np.testing.assert_array_equal(S, np.asarray(properties_PT(melt, P, LIQUIDUS.temperature(P))["S"]))
