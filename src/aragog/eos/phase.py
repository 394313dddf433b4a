"""Two-phase (melt + solid) material properties from P-S tables, and a constant-property mode.

Both evaluators are pure JAX functions of ``(P, S)`` arrays (any broadcastable shapes) and
pytrees of tables/parameters, jittable with everything passed as traced arguments. They
return the same :class:`PhaseState`. The equations are PHYSICS.md, "Equation of state (two
phases)"; notation: S_sol(P), S_liq(P) the solidus and liquidus entropies, and the phase
boundary values T_sol = T_solid(P, S_sol), rho_sol = rho_solid(P, S_sol),
T_liq = T_melt(P, S_liq), rho_liq = rho_melt(P, S_liq).

Melt fraction and the blend of mixed and single-phase values
-------------------------------------------------------------
g = (S - S_sol)/(S_liq - S_sol) (unclipped), phi = clip(g, 0, 1).

*Mixed-phase* values X_mix (computed everywhere with the clipped phi)::

    T    = phi T_liq + (1 - phi) T_sol
    1/rho = phi/rho_liq + (1 - phi)/rho_sol
    c_p  = (S_liq - S_sol)/(T_liq - T_sol) * (T_liq + T_sol)/2
    alpha = (rho_sol - rho_liq)/((T_liq - T_sol) rho)
    (dT/dP)_S = alpha T/(rho c_p)

*Single-phase* values X_one: the melt table at (P, S) where g > 1/2, the solid table
otherwise. With tw(x, c, w) = (1 + tanh((x - c)/w))/2 and w = ``smooth_width``, the weight
of the **mixed** value is::

    W = tw(g, 0, w)        for g <= 1/2   (0 deep in the solid, 1/2 on the solidus, -> 1 inside)
    W = 1 - tw(g, 1, w)    for g >  1/2   (-> 1 inside, 1/2 on the liquidus, 0 deep in the melt)
    X = W X_mix + (1 - W) X_one           for X in T, rho, c_p, alpha, (dT/dP)_S

so the mixed value dominates inside the mush and the single-phase value outside it. With
w = 0.01: 1 - W = e^-20/(1 + e^-20) ~ 2.1e-9 at g = 0.1 and 0.9, ~4e-44 at g = 1/2
(W = 1 to rounding), and W ~ 2.1e-9 at g = -0.1 and 1.1: the blend acts only within a
few w of the boundaries. (The switch of X_one between the tables at g = 1/2 is invisible:
1 - W = 0 there to rounding.)

Conductivity k = phi k_liq + (1 - phi) k_sol (continuous, no blend needed).
Viscosity: log10 eta = (1 - w_r) log10 eta_sol + w_r log10 eta_liq, w_r = tw(phi, phi_rheo,
phi_width).

Shapes and units: P [Pa], S [J kg-1 K-1] of any broadcastable shapes; every output field of
:class:`PhaseState` has the broadcast shape, SI units (T K, rho kg m-3, cp J kg-1 K-1, alpha
K-1, dTdPs K Pa-1, k W m-1 K-1, visc Pa s, dS/dP J kg-1 K-1 Pa-1).
"""

from __future__ import annotations

from typing import Any

from aragog._jax import jnp
from aragog._pytree import data_pytree
from aragog.eos.lookup import Cell, bilinear_at, cell_bounds, take_rows

__all__ = [
    "MaterialParams",
    "ConstantParams",
    "PhaseState",
    "tanh_weight",
    "evaluate_phase",
    "evaluate_constant",
]




@data_pytree
class MaterialParams:
    """Material parameters of the two-phase evaluator (floats or 0-d arrays; traced).

    visc_liq, visc_sol: melt and solid viscosity [Pa s]; cond_liq, cond_sol: thermal
    conductivity [W m-1 K-1]; smooth_width: the "matprop smooth width" w of the
    mixed/single-phase blend (in units of melt fraction); phi_rheo, phi_width: centre and
    width of the rheological transition (melt fraction).
    """

    visc_liq: Any = 1.0e2
    visc_sol: Any = 1.0e21
    cond_liq: Any = 4.0
    cond_sol: Any = 4.0
    smooth_width: Any = 0.01
    phi_rheo: Any = 0.4
    phi_width: Any = 0.15


@data_pytree
class ConstantParams:
    """Constant-property mode: rho [kg m-3], cp [J kg-1 K-1], alpha [K-1], cond
    [W m-1 K-1], log10visc (log10 of viscosity in Pa s), T_ref [K] at S_ref [J kg-1 K-1]."""

    rho: Any = 4000.0
    cp: Any = 1000.0
    alpha: Any = 1.0e-5
    cond: Any = 4.0
    log10visc: Any = 2.0
    T_ref: Any = 1600.0
    S_ref: Any = 2000.0


@data_pytree
class PhaseState:
    """Material state at (P, S) points; every field has the broadcast shape of (P, S).

    T [K], rho [kg m-3], cp [J kg-1 K-1], alpha [K-1], dTdPs = (dT/dP)_S [K Pa-1],
    phi melt fraction (clipped to [0, 1]), k conductivity [W m-1 K-1], visc viscosity
    [Pa s]; phase-boundary values for the flux terms: S_sol, S_liq [J kg-1 K-1],
    dSsol_dP, dSliq_dP [J kg-1 K-1 Pa-1] (slopes of the linear interpolants, 0 outside
    their P range), T_sol, T_liq [K], rho_sol, rho_liq [kg m-3].
    """

    T: Any
    rho: Any
    cp: Any
    alpha: Any
    dTdPs: Any
    phi: Any
    k: Any
    visc: Any
    S_sol: Any
    S_liq: Any
    dSsol_dP: Any
    dSliq_dP: Any
    T_sol: Any
    T_liq: Any
    rho_sol: Any
    rho_liq: Any


def tanh_weight(x, centre, width):
    """tw(x, c, w) = (1 + tanh((x - c)/w))/2: 0 for x << c, 1/2 at c, 1 for x >> c."""
    return 0.5 * (1.0 + jnp.tanh((x - centre) / width))


def evaluate_phase(tables, params: MaterialParams, P, S) -> PhaseState:
    """Two-phase material properties at (P, S) from an :class:`~aragog.eos.tables.EOSTables`.

    Pure and jittable: ``jax.jit(evaluate_phase)(tables, params, P, S)`` traces the table
    arrays and parameters as inputs. See the module docstring for the equations and the
    direction of the mixed/single-phase blend.

    Laid out for few XLA:CPU kernels (each costs dispatch time at a few hundred points): the
    scalar factors come from one small division, each cell search reads its cell with one
    gather (:func:`~aragog.eos.lookup.cell_bounds`), table corners are read with flat 1-D
    indices, and the blend weight takes one tanh per point.
    """
    P = jnp.asarray(P, dtype=jnp.float64)
    S = jnp.asarray(S, dtype=jnp.float64)
    P, S = jnp.broadcast_arrays(P, S)
    melt, solid, sol, liq = tables.melt, tables.solid, tables.solidus, tables.liquidus

    # The scalar factors in one small division (one XLA kernel rather than one each):
    # (n - 1)/(hi - lo) of the uniform axes (cell estimates), 1/w and 1/phi_width (XLA
    # compiles x/w as x (1/w) anyway).
    axes = (sol.P, liq.P, melt.P, solid.P, melt.S, solid.S)
    flags = (sol.P_uniform, liq.P_uniform, melt.P_uniform, solid.P_uniform, melt.S_uniform, solid.S_uniform)
    uni = [k for k in range(len(axes)) if flags[k]]
    scal = (jnp.stack([jnp.asarray(axes[k].shape[0] - 1, jnp.float64) for k in uni] + [jnp.float64(1.0)] * 2)
            / jnp.stack([axes[k][-1] - axes[k][0] for k in uni]
                        + [jnp.asarray(params.smooth_width, jnp.float64), jnp.asarray(params.phi_width, jnp.float64)]))
    inv = [None] * len(axes)
    for pos, k in enumerate(uni):
        inv[k] = scal[pos]
    inv_w, inv_pw = scal[len(uni)], scal[len(uni) + 1]

    def locate(k, x):  # lookup.locate on axes[k], with its precomputed cell-estimate factor
        xc, i, x0, x1 = cell_bounds(axes[k], x, flags[k], inv[k])
        return Cell(i, (xc - x0) / (x1 - x0)), x1 - x0

    def boundary(b, k):  # lookup.interp1d_slope: value and segment slope (0 outside the P range)
        (i, t), h = locate(k, P)
        f = take_rows(b.S, i[..., None] + jnp.arange(2, dtype=jnp.int32))
        f0, f1 = f[..., 0], f[..., 1]
        inside = (P >= b.P[0]) & (P <= b.P[-1])
        return (1.0 - t) * f0 + t * f1, jnp.where(inside, (f1 - f0) / h, 0.0)

    S_sol, dSsol_dP = boundary(sol, 0)
    S_liq, dSliq_dP = boundary(liq, 1)
    gap = S_liq - S_sol
    g = (S - S_sol) / gap
    phi = jnp.clip(g, 0.0, 1.0)

    # Cell searches: P once per table grid, S at the query and at the phase boundary.
    cp_m, cp_s = locate(2, P)[0], locate(3, P)[0]
    cs_m, cs_s = locate(4, S)[0], locate(5, S)[0]
    cs_liq, cs_sol = locate(4, S_liq)[0], locate(5, S_sol)[0]

    T_liq = bilinear_at(melt.T, cp_m, cs_liq)
    rho_liq = bilinear_at(melt.rho, cp_m, cs_liq)
    T_sol = bilinear_at(solid.T, cp_s, cs_sol)
    rho_sol = bilinear_at(solid.rho, cp_s, cs_sol)

    # Mixed-phase values (PHYSICS.md), with the clipped phi.
    dT = T_liq - T_sol
    T_mix = phi * T_liq + (1.0 - phi) * T_sol
    rho_mix = 1.0 / (phi / rho_liq + (1.0 - phi) / rho_sol)
    cp_mix = gap / dT * 0.5 * (T_liq + T_sol)
    alpha_mix = (rho_sol - rho_liq) / (dT * rho_mix)
    dTdPs_mix = alpha_mix * T_mix / (rho_mix * cp_mix)

    # Single-phase values: melt table where g > 1/2, solid table otherwise.
    one_m = _single(melt, cp_m, cs_m)
    one_s = _single(solid, cp_s, cs_s)
    melt_side = g > 0.5
    # W = 1 - tw(g, 1, w) on the melt side, tw(g, 0, w) otherwise: one tanh per point.
    th = jnp.tanh(jnp.where(melt_side, g - 1.0, g) * inv_w)
    W = jnp.where(melt_side, 1.0 - 0.5 * (1.0 + th), 0.5 * (1.0 + th))

    def blend(mix, key):
        one = jnp.where(melt_side, one_m[key], one_s[key])
        return W * mix + (1.0 - W) * one

    w_r = 0.5 * (1.0 + jnp.tanh((phi - params.phi_rheo) * inv_pw))  # tanh_weight(phi, phi_rheo, phi_width)
    log10_visc = (1.0 - w_r) * jnp.log10(params.visc_sol) + w_r * jnp.log10(params.visc_liq)
    return PhaseState(
        T=blend(T_mix, "T"),
        rho=blend(rho_mix, "rho"),
        cp=blend(cp_mix, "cp"),
        alpha=blend(alpha_mix, "alpha"),
        dTdPs=blend(dTdPs_mix, "dTdPs"),
        phi=phi,
        k=phi * params.cond_liq + (1.0 - phi) * params.cond_sol,
        visc=10.0**log10_visc,
        S_sol=S_sol,
        S_liq=S_liq,
        dSsol_dP=dSsol_dP,
        dSliq_dP=dSliq_dP,
        T_sol=T_sol,
        T_liq=T_liq,
        rho_sol=rho_sol,
        rho_liq=rho_liq,
    )


def _single(table, cp_, cs_) -> dict:
    out = {f: bilinear_at(getattr(table, f), cp_, cs_) for f in ("T", "rho", "cp", "dTdPs")}
    if table.alpha is None:  # alpha = (dT/dP)_S rho c_p / T
        out["alpha"] = out["dTdPs"] * out["rho"] * out["cp"] / out["T"]
    else:
        out["alpha"] = bilinear_at(table.alpha, cp_, cs_)
    return out


def evaluate_constant(params: ConstantParams, P, S) -> PhaseState:
    """Constant-property mode: T = T_ref exp((S - S_ref)/c_p), phi = 1, constant rho, c_p,
    alpha, k, viscosity 10**log10visc, and (dT/dP)_S = alpha T/(rho c_p).

    There are no phase boundaries: S_sol = S_liq = S_ref, T_sol = T_liq = T_ref,
    rho_sol = rho_liq = rho and zero slopes (so every mush term, which carries
    phi (1 - phi) or rho_sol - rho_liq, vanishes; do not divide by S_liq - S_sol).
    """
    P = jnp.asarray(P, dtype=jnp.float64)
    S = jnp.asarray(S, dtype=jnp.float64)
    P, S = jnp.broadcast_arrays(P, S)
    full = lambda v: jnp.broadcast_to(jnp.asarray(v, dtype=jnp.float64), S.shape)  # noqa: E731
    T = params.T_ref * jnp.exp((S - params.S_ref) / params.cp)
    zero = jnp.zeros_like(S)
    return PhaseState(
        T=T,
        rho=full(params.rho),
        cp=full(params.cp),
        alpha=full(params.alpha),
        dTdPs=params.alpha * T / (params.rho * params.cp),
        phi=jnp.ones_like(S),
        k=full(params.cond),
        visc=full(10.0**params.log10visc),
        S_sol=full(params.S_ref),
        S_liq=full(params.S_ref),
        dSsol_dP=zero,
        dSliq_dP=zero,
        T_sol=full(params.T_ref),
        T_liq=full(params.T_ref),
        rho_sol=full(params.rho),
        rho_liq=full(params.rho),
    )
