"""aragog.eos.models._bridgmanite: MgSiO3 bridgmanite (SLB2011 Mie–Grüneisen–Debye) checked
by its reference state, closed forms of its parts, the exact thermodynamic identities,
its limits, and values of an independent implementation (BurnMan 2.1.0)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aragog.eos.models._bridgmanite import GAS_CONSTANT as R  # private: the model's own R, in the C_V limits
from aragog.eos.models import Bridgmanite
from aragog.eos.models._bridgmanite import debye_d3  # private: the Debye function, against its series
from aragog.eos.models import properties_PT, properties_VT, volume

# the model's functions are pure JAX: called in float64 as a user does (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("x64_module")

MPV = Bridgmanite()
# 0-135 GPa x 1000-5000 K, less (0 GPa, 5000 K): above this model's spinodal at zero
# pressure (~4450 K: no volume has P = 0, test_no_state_beyond_zero_pressure_spinodal).
_P, _T = np.meshgrid(np.array([0.0, 10.0, 25.0, 50.0, 90.0, 135.0]) * 1e9,
                     np.array([1000.0, 2000.0, 3000.0, 4000.0, 5000.0]))
_KEEP = ~((_P == 0.0) & (_T == 5000.0))
GRID_P, GRID_T = _P[_KEEP], _T[_KEEP]


def _np(props):
    return {k: np.asarray(v) for k, v in props.items()}


def test_reference_state():
    """(0 Pa, T0 = 300 K) is (V0, K0) to rounding. Not just ~1e-3: SLB's thermal term is
    F_D(θ(V), T) - F_D(θ(V), T0), which vanishes for every V at T = T0, so it adds nothing
    to P or K_T there; the tolerances are rounding of the Newton solve and of autodiff."""
    p = _np(properties_PT(MPV, 0.0, 300.0))
    np.testing.assert_allclose(p["V"], MPV.V0, rtol=1e-10)
    np.testing.assert_allclose(p["K_T"], MPV.K0, rtol=1e-10)
    np.testing.assert_allclose(p["F"], MPV.F0, rtol=1e-12)
    np.testing.assert_allclose(p["rho"], 0.1003887 / 24.45e-6, rtol=1e-10)


def test_cold_isotherm_is_birch_murnaghan_3():
    """At T0 the pressure is the third-order Birch–Murnaghan
    3 K0 f (1 + 2f)^(5/2) (1 + 3/2 (K0' - 4) f) (checks the f³ coefficient 9 K0 V0 a3/6,
    a3 = 3 (K0' - 4)), and K_T' = dK_T/dP = K0' at V0."""
    V = MPV.V0 * np.array([1.05, 1.0, 0.9, 0.8, 0.7, 0.6])
    f = 0.5 * ((MPV.V0 / V) ** (2.0 / 3.0) - 1.0)
    bm3 = 3.0 * MPV.K0 * f * (1.0 + 2.0 * f) ** 2.5 * (1.0 + 1.5 * (MPV.K0p - 4.0) * f)
    p = _np(properties_VT(MPV, V, np.full_like(V, MPV.T0)))
    np.testing.assert_allclose(p["P"], bm3, rtol=1e-12, atol=1e-12 * MPV.K0)
    dF_dV = jax.grad(MPV.helmholtz, argnums=0)
    K_of_V = lambda v: v * jax.grad(dF_dV)(v, MPV.T0)  # noqa: E731
    P_of_V = lambda v: -dF_dV(v, MPV.T0)  # noqa: E731
    Kp = jax.grad(K_of_V)(MPV.V0) / jax.grad(P_of_V)(MPV.V0)
    np.testing.assert_allclose(float(Kp), MPV.K0p, rtol=1e-10)


def test_grueneisen_parameter_and_q_at_V0():
    """The thermodynamic γ = α K_T V / C_V equals -d ln θ/d ln V at any T (a quasi-harmonic
    Debye solid), hence γ0 at V0 at every T, and d ln γ/d ln V = q0 there."""
    T = np.array([500.0, 2000.0, 5000.0])
    p = _np(properties_VT(MPV, np.full(3, MPV.V0), T))
    np.testing.assert_allclose(p["gamma"], MPV.gamma0, rtol=1e-10)
    gamma = lambda lnv: -jax.grad(lambda x: jnp.log(MPV.debye_temperature(jnp.exp(x))))(lnv)  # noqa: E731
    q = jax.grad(lambda lnv: jnp.log(gamma(lnv)))(jnp.log(MPV.V0))
    np.testing.assert_allclose(float(gamma(jnp.log(MPV.V0))), MPV.gamma0, rtol=1e-12)
    np.testing.assert_allclose(float(q), MPV.q0, rtol=1e-10)


def test_identities_over_lower_mantle_grid():
    """c_p - c_v = α² K_T V T / M and (∂T/∂P)_S = α T / (ρ c_p) to 1e-10 (algebra of the
    same derivatives), and c_p = T (∂S/∂T)_P by a central difference of S(P, T) from
    properties_PT to 1e-6 (step h = 2e-4 T: truncation (h²/6) T ∂³S/∂T³ measured ≤ 3e-7
    of c_p, largest near the zero-pressure spinodal at (0 GPa, 4000 K); rounding ~1e-16
    S T/(h c_p) ~ 1e-11)."""
    p = _np(properties_PT(MPV, GRID_P, GRID_T))
    np.testing.assert_allclose(p["cp"] - p["cv"], p["alpha"] ** 2 * p["K_T"] * p["V"] * p["T"] / MPV.molar_mass,
                               rtol=1e-10)
    np.testing.assert_allclose(p["dTdP_S"], p["alpha"] * p["T"] / (p["rho"] * p["cp"]), rtol=1e-10)
    h = 2e-4 * GRID_T
    s_hi = np.asarray(properties_PT(MPV, GRID_P, GRID_T + h)["S"])
    s_lo = np.asarray(properties_PT(MPV, GRID_P, GRID_T - h)["S"])
    np.testing.assert_allclose(GRID_T * (s_hi - s_lo) / (2.0 * h), p["cp"], rtol=1e-6)
    assert np.all(p["K_T"] > 0) and np.all(p["cv"] > 0) and np.all(p["alpha"] > 0)


def test_pressure_round_trip():
    """P(V(P, T), T) = P to 1e-12 (of max(P, K0): P = 0 is in the grid), from the
    Murnaghan guess, which is well within a factor 2 of V(P, T) (here -25 % to +2 %)
    on 0-150 GPa x 300-6000 K where the phase exists, next to the spinodal included
    ((0 GPa, 4400 K), (15 GPa, 6000 K))."""
    P = np.concatenate([GRID_P, [150e9, 150e9, 100e9, 0.0, 0.0, 15e9]])
    T = np.concatenate([GRID_T, [300.0, 6000.0, 6000.0, 300.0, 4400.0, 6000.0]])
    V = np.asarray(volume(MPV, P, T))
    back = np.asarray(properties_VT(MPV, V, T)["P"])
    np.testing.assert_allclose(back, P, rtol=0.0, atol=1e-12 * MPV.K0)
    np.testing.assert_allclose(back[P > 0], P[P > 0], rtol=1e-12)
    ratio = np.asarray(MPV.volume_guess(P, T)) / V
    assert np.all((ratio > 0.75) & (ratio < 1.02)), ratio


def test_no_state_beyond_zero_pressure_spinodal():
    """At 5000 K no volume has P <= 0 (P(V) has a positive minimum): the solid has no state
    at (0 Pa, 5000 K), so the grids here leave that corner out."""
    V = np.linspace(0.9, 1.7, 400) * MPV.V0
    assert np.min(np.asarray(properties_VT(MPV, V, np.full_like(V, 5000.0))["P"])) > 0.0


def test_heat_capacity_limits():
    """C_V at V0: 3nR/M within 1 % at T = 10 θ0 (Debye: 1 - t²/20, t = 0.1: 0.05 %), and the
    T³ law C_V = (12π⁴/5) n R (T/θ0)³ / M at T = θ0/100 (corrections ~e^-100)."""
    M, n = MPV.molar_mass, MPV.n
    hi = float(properties_VT(MPV, MPV.V0, 10.0 * MPV.theta0)["cv"])
    np.testing.assert_allclose(hi, 3.0 * n * R / M, rtol=1e-2)
    np.testing.assert_allclose(hi, 3.0 * n * R / M * (1.0 - 0.01 / 20.0), rtol=1e-6)
    T = MPV.theta0 / 100.0
    lo = float(properties_VT(MPV, MPV.V0, T)["cv"])
    np.testing.assert_allclose(lo, 12.0 * np.pi**4 / 5.0 * n * R * (T / MPV.theta0) ** 3 / M, rtol=1e-10)


@pytest.mark.parametrize("t", [1e-3, 0.5, 3.0, 20.0, 59.0, 61.0, 200.0, 1000.0])
def test_debye_function(t):
    """D3 against its series: 1 - 3t/8 + t²/20 - t⁴/1680 (t small), π⁴/(5t³) - tail
    (t large), and adaptive quadrature otherwise (scipy quad)."""
    if t < 0.01:
        ref = 1.0 - 3.0 * t / 8.0 + t * t / 20.0 - t**4 / 1680.0
    elif t > 40.0:
        tail = sum(np.exp(-k * t) * (t**3 / k + 3 * t**2 / k**2 + 6 * t / k**3 + 6 / k**4) for k in range(1, 6))
        ref = 3.0 / t**3 * (np.pi**4 / 15.0 - tail)
    else:
        from scipy.integrate import quad
        ref = 3.0 / t**3 * quad(lambda x: x**3 / np.expm1(x), 0.0, t, epsabs=0.0, epsrel=1e-13, limit=200)[0]
    np.testing.assert_allclose(float(debye_d3(t)), ref, rtol=1e-13)


# BurnMan 2.1.0, SLB_2011.mg_perovskite (its parameters: HeFESTo inv251010), set_state(P, T):
# its volume V [m³/mol], then at (V, T): P [Pa], F [J/mol], S, c_p [J/kg/K], alpha [1/K],
# K_T [Pa] (specific = molar / 0.1003887). Produced by tools/eos_compare_burnman.py's setup.
BURNMAN_PARAMS = dict(F0=-1368283.0, V0=2.4445e-05, K0=2.505264e11, K0p=4.14, theta0=905.9412,
                      gamma0=1.56508, q0=1.10945)
BURNMAN_VALUES = [  # T, V, P, F, S, cp, alpha, K_T
    (2000.0, 2.336807235553108e-05, 25000000083.25708, -1664607.0172334285, 2562.0613435069627,
     1324.5750626327, 2.6396419685320753e-05, 298224884119.0734),
    (4000.0, 1.9013116628729795e-05, 134999994950.74542, -1924920.727068471, 3069.4442843209495,
     1314.5638482927131, 1.2635249502921667e-05, 650035648435.8134),
    (3000.0, 2.7213542968665728e-05, -7.257015228271484, -2002754.5120892213, 3368.784742001791,
     1616.3867145300428, 5.673810701237979e-05, 144382480961.80963),
]


@pytest.mark.parametrize("row", BURNMAN_VALUES)
def test_matches_burnman_at_same_volume(row):
    """Same model as BurnMan's slb3 at the same parameters and (V, T): every property to
    1e-12 (measured ≤ 4e-15; R must be the exact N_A k, as BurnMan's: a rounded 8.314462618
    leaves 2e-11). At equal (P, T) the codes differ by up to 5e-8 (rho 1e-8, alpha and
    K_T 5e-8): BurnMan's V(P, T) root-finding leaves P(V) off by up to 2.6e-8 K0."""
    T, V, P, F, S, cp, alpha, K_T = row
    p = _np(properties_VT(Bridgmanite(**BURNMAN_PARAMS), V, T))
    np.testing.assert_allclose(p["P"], P, rtol=0.0, atol=1e-12 * 2.5e11)
    for key, value in {"F": F, "S": S, "cp": cp, "alpha": alpha, "K_T": K_T}.items():
        np.testing.assert_allclose(p[key], value, rtol=1e-12, err_msg=key)
