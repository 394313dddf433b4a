"""aragog.eos.models._thermo: properties from a Helmholtz free energy by autodiff, checked
on a model with closed forms (an ideal gas with constant C_V) and by the exact identities."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np
import pytest

from aragog.eos.models import properties_PT, properties_VT, volume

# the model's functions are pure JAX: called in float64 as a user does (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("x64_module")

R = 8.31446261815324


@dataclasses.dataclass(frozen=True)
class IdealGas:
    """F = -R T ln(V/V0) - C_V T ln(T/T0) + C_V T: P = RT/V, S = R ln(V/V0) + C_V ln(T/T0)."""

    name: str = "ideal gas"
    molar_mass: float = 0.1
    cv: float = 3.0 * R
    V0: float = 1e-5
    T0: float = 1000.0

    def helmholtz(self, V, T):
        return -R * T * jnp.log(V / self.V0) - self.cv * T * jnp.log(T / self.T0) + self.cv * T

    def volume_guess(self, P, T):
        return 1.7 * R * T / P  # deliberately off by 70 %


def test_ideal_gas_closed_forms():
    """Every property equals its closed form to rounding (1e-12: a few operations)."""
    gas = IdealGas()
    V = np.array([1e-5, 2e-5, 5e-6])
    T = np.array([1000.0, 2500.0, 4000.0])
    p = properties_VT(gas, V, T)
    M, cv = gas.molar_mass, gas.cv
    expected = {"P": R * T / V, "S": (R * np.log(V / gas.V0) + cv * np.log(T / gas.T0)) / M,
                "cv": np.full(3, cv / M), "cp": np.full(3, (cv + R) / M), "alpha": 1.0 / T,
                "K_T": R * T / V, "K_S": R * T / V * (cv + R) / cv, "gamma": np.full(3, R / cv),
                "rho": M / V, "dTdP_S": (1.0 / T) * T * V / (cv + R)}
    for key, value in expected.items():
        np.testing.assert_allclose(np.asarray(p[key]), value, rtol=1e-12, atol=1e-10, err_msg=key)  # S = 0 at (V0, T0)


def test_volume_inversion_and_identities_at_P_T():
    """V(P, T) solves P(V, T) = P to rounding from a 70 % guess; c_p - c_v = α² K_T V T / M
    and (∂T/∂P)_S = α T / (ρ c_p) hold to rounding."""
    gas = IdealGas()
    P = np.array([1e5, 1e9, 1e11])
    T = np.array([300.0, 2000.0, 5000.0])
    np.testing.assert_allclose(np.asarray(volume(gas, P, T)), R * T / P, rtol=1e-14)
    p = properties_PT(gas, P, T)
    np.testing.assert_allclose(np.asarray(p["P"]), P, rtol=1e-13)
    lhs = np.asarray(p["cp"] - p["cv"])
    rhs = np.asarray(p["alpha"] ** 2 * p["K_T"] * p["V"] * p["T"] / gas.molar_mass)
    np.testing.assert_allclose(lhs, rhs, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(p["dTdP_S"]), np.asarray(p["alpha"] * p["T"] / (p["rho"] * p["cp"])),
                               rtol=1e-12)
