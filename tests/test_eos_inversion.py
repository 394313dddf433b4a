"""aragog.eos.models._inversion: (P, S) -> (V, T) for the MgSiO3 phases, checked by round
trips through the forward model: a state made at (P, T) is found again from its (P, S)
starting from a guess far from it."""

from __future__ import annotations

import numpy as np
import pytest

from aragog.eos.models import Bridgmanite
from aragog.eos.models import state_PS
from aragog.eos.models import RTpressMelt
from aragog.eos.models import properties_PT

# the inversion is pure JAX: called in float64 as a user does (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("x64_module")


@pytest.mark.parametrize("phase, T_range, T_guess", [
    (RTpressMelt(), (2000.0, 5500.0), 3000.0),
    (Bridgmanite(), (1000.0, 4000.0), 2500.0),
])
def test_round_trip_P_T_to_P_S_and_back(phase, T_range, T_guess):
    """T, V and every property come back to 1e-10 relative from (P, S(P, T)) over
    0-135 GPa (10 GPa up for the solid at its hottest, away from its spinodal), starting
    from one guess for all; the residuals reported are at rounding."""
    P = np.linspace(1e9, 135e9, 12)[:, None] * np.ones((1, 9))
    T = np.ones((12, 1)) * np.linspace(*T_range, 9)[None, :]
    fwd = properties_PT(phase, P, T)
    back = state_PS(phase, P, np.asarray(fwd["S"]), T_guess)
    for key in ("T", "V", "rho", "cp", "alpha", "dTdP_S"):
        np.testing.assert_allclose(np.asarray(back[key]), np.asarray(fwd[key]), rtol=1e-10, err_msg=key)
    assert np.max(np.abs(np.asarray(back["P_error"]))) < 1e-12
    assert np.max(np.abs(np.asarray(back["S_error"]))) < 1e-9
