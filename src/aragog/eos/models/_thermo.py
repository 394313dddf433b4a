"""Thermodynamics of a phase from its Helmholtz free energy F(V, T), by automatic
differentiation (JAX).

A phase model (:class:`HelmholtzPhase`) gives the molar Helmholtz free energy
``helmholtz(V, T)`` [J/mol] of molar volume V [m³/mol] and temperature T [K], written in
JAX (scalar in, scalar out; traceable). Everything else follows from derivatives of F:

    P = -(∂F/∂V)_T                     S = -(∂F/∂T)_V
    C_V = -T (∂²F/∂T²)_V               K_T = V (∂²F/∂V²)_T
    α K_T = (∂P/∂T)_V = -∂²F/∂V∂T      γ = α K_T V / C_V
    C_P = C_V + α² K_T V T              K_S = K_T C_P / C_V
    (∂T/∂P)_S = γ T / K_S = α T V / C_P

(molar quantities; specific ones are divided by the molar mass M [kg/mol], and ρ = M/V).
The functions here are elementwise over arrays of any common shape (``jax.vmap`` of the
scalar derivatives). :func:`volume` inverts P(V, T) for V by a vectorised, safeguarded
Newton iteration, so every property can be had at (P, T).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from aragog._jax import jax, jnp

__all__ = ["HelmholtzPhase", "state_functions", "properties_VT", "volume", "properties_PT",
           "PROPERTY_UNITS"]

#: Units of :func:`properties_VT` / :func:`properties_PT` (specific quantities per kg).
PROPERTY_UNITS = {"V": "m3/mol", "T": "K", "P": "Pa", "F": "J/mol", "rho": "kg/m3", "S": "J/kg/K",
                  "cv": "J/kg/K", "cp": "J/kg/K", "alpha": "1/K", "K_T": "Pa", "K_S": "Pa",
                  "gamma": "-", "dTdP_S": "K/Pa", "E": "J/kg", "H": "J/kg"}


class HelmholtzPhase(Protocol):
    """A phase: ``molar_mass`` [kg/mol], ``name``, ``helmholtz(V, T)`` [J/mol] (JAX,
    scalar), and ``volume_guess(P, T)`` [m³/mol] (a start for :func:`volume`, arrays)."""

    name: str
    molar_mass: float

    def helmholtz(self, V, T): ...

    def volume_guess(self, P, T): ...


def state_functions(phase: HelmholtzPhase) -> Callable:
    """``f(V, T) -> dict`` of every molar property at one state (scalar; for vmap)."""
    F = phase.helmholtz
    dF_dV = jax.grad(F, argnums=0)
    dF_dT = jax.grad(F, argnums=1)
    d2F_dV2 = jax.grad(dF_dV, argnums=0)
    d2F_dT2 = jax.grad(dF_dT, argnums=1)
    d2F_dVdT = jax.grad(dF_dV, argnums=1)

    def at(V, T):
        P = -dF_dV(V, T)
        S = -dF_dT(V, T)
        cv = -T * d2F_dT2(V, T)
        K_T = V * d2F_dV2(V, T)
        aK = -d2F_dVdT(V, T)  # alpha K_T = (dP/dT)_V
        alpha = aK / K_T
        cp = cv + alpha * aK * V * T
        f = F(V, T)
        return {"V": V, "T": T, "P": P, "F": f, "S": S, "cv": cv, "cp": cp, "alpha": alpha, "K_T": K_T,
                "K_S": K_T * cp / cv, "gamma": aK * V / cv, "dTdP_S": alpha * T * V / cp,
                "E": f + T * S, "H": f + T * S + P * V}

    return at


def _specific(phase: HelmholtzPhase, molar: dict) -> dict:
    M = phase.molar_mass
    out = dict(molar)
    for key in ("S", "cv", "cp", "E", "H"):
        out[key] = molar[key] / M
    out["rho"] = M / molar["V"]
    return out


def properties_VT(phase: HelmholtzPhase, V, T) -> dict:
    """Every property (:data:`PROPERTY_UNITS`; specific per kg) at molar volume ``V``
    [m³/mol] and ``T`` [K], arrays of any common shape."""
    V, T = jnp.broadcast_arrays(jnp.asarray(V, dtype=jnp.float64), jnp.asarray(T, dtype=jnp.float64))
    at = jax.vmap(state_functions(phase))
    molar = at(V.ravel(), T.ravel())
    return _specific(phase, {k: v.reshape(V.shape) for k, v in molar.items()})


def volume(phase: HelmholtzPhase, P, T, *, iterations: int = 40):
    """Molar volume V [m³/mol] with P(V, T) = ``P`` [Pa] at ``T`` [K] (arrays of any common
    shape): Newton on ln V from :meth:`HelmholtzPhase.volume_guess`, each step limited to
    a factor e^0.4 in V (no overshoot into the unphysical branch), for ``iterations``
    steps (quadratic convergence: rounding well before 40 steps on the stable branch,
    K_T > 0, from a guess within a factor 2)."""
    P, T = jnp.broadcast_arrays(jnp.asarray(P, dtype=jnp.float64), jnp.asarray(T, dtype=jnp.float64))
    F = phase.helmholtz
    dF_dV = jax.grad(F, argnums=0)
    d2F_dV2 = jax.grad(dF_dV, argnums=0)
    p_of = jax.vmap(lambda v, t: -dF_dV(v, t))
    k_of = jax.vmap(lambda v, t: v * d2F_dV2(v, t))  # K_T = -V dP/dV
    p, t = P.ravel(), T.ravel()

    def step(lnv, _):
        v = jnp.exp(lnv)
        # d(P(V) - P0)/d ln V = V dP/dV = -K_T
        delta = (p_of(v, t) - p) / k_of(v, t)
        return lnv + jnp.clip(delta, -0.4, 0.4), None

    lnv0 = jnp.log(jnp.asarray(phase.volume_guess(p, t), dtype=jnp.float64))
    lnv, _ = jax.lax.scan(step, lnv0, None, length=iterations)
    return jnp.exp(lnv).reshape(P.shape)


def properties_PT(phase: HelmholtzPhase, P, T) -> dict:
    """Every property at pressure ``P`` [Pa] and ``T`` [K] (:func:`volume`, then
    :func:`properties_VT`); ``"P"`` in the result is P(V(P, T), T), equal to ``P`` to
    rounding where the Newton solve converged (check it)."""
    return properties_VT(phase, volume(phase, P, T), T)
