"""Two-phase (melt + solid) material properties from P-S tables, and a constant-property mode.

Both evaluators are pure JAX functions of ``(P, S)`` arrays (any broadcastable shapes) and
pytrees of tables/parameters, jittable with everything passed as traced arguments. They
return the same :class:`PhaseState`. The equations are docs/physics.md, "Equation of state (two
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
otherwise. With tw(x, c, w) = (1 + tanh((x - c)/w))/2 and w = ``matprop_smooth_width``, the weight
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

from aragog._jax import jax, jnp
from aragog._pytree import data_pytree
from aragog.config import SCHEMA
from aragog.eos._lookup import cell_bounds
from aragog.eos._packed import FIELDS, NODE_SNAP, PackedEOS, pack_tables

__all__ = [
    "MaterialParams",
    "PhaseProperties",
    "ConstantParams",
    "PhaseState",
    "tanh_weight",
    "evaluate_phase",
    "evaluate_constant",
]




@data_pytree
class PhaseProperties:
    """The transport properties of one phase (floats or 0-d arrays; traced), named as the
    keys of ``[phase_liquid]`` and ``[phase_solid]`` (docs/config.md): viscosity [Pa s] and
    thermal_conductivity [W m-1 K-1]."""

    viscosity: Any
    thermal_conductivity: Any


@data_pytree
class MaterialParams:
    """Material parameters of the two-phase evaluator (traced), named as their config keys
    (docs/config.md), with the schema's default where it has one.

    phase_liquid, phase_solid: :class:`PhaseProperties` of the melt and of the solid
        (``[phase_liquid]``, ``[phase_solid]``).
    rheological_transition_melt_fraction, rheological_transition_width: ``[phase_mixed]``,
        centre and width of the rheological transition (melt fraction).
    matprop_smooth_width: ``[phase_mixed]``, the width w of the mixed/single-phase blend
        (in units of melt fraction).
    """

    phase_liquid: Any
    phase_solid: Any
    rheological_transition_melt_fraction: Any
    rheological_transition_width: Any
    matprop_smooth_width: Any = SCHEMA["phase_mixed"]["matprop_smooth_width"].default


@data_pytree
class ConstantParams:
    """Constant-property mode (traced), named as the ``[phase_mixed]`` keys
    (docs/config.md; the configuration fills the ones not given from the phase values):
    const_rho [kg m-3], const_Cp [J kg-1 K-1], const_alpha [K-1], const_cond [W m-1 K-1],
    const_log10visc (log10 of the viscosity in Pa s), const_T_ref [K] at const_S_ref
    [J kg-1 K-1]."""

    const_rho: Any
    const_Cp: Any
    const_alpha: Any
    const_cond: Any
    const_log10visc: Any
    const_T_ref: Any
    const_S_ref: Any


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
    """Two-phase material properties at (P, S) from a :class:`~aragog.eos._packed.PackedEOS`
    (fastest; what the solver passes) or an :class:`~aragog.eos._tables.EOSTables` (packed
    inside the trace: the same values, at the cost of copying the tables every call).

    Pure and jittable: ``jax.jit(evaluate_phase)(tables, params, P, S)`` traces the table
    arrays and parameters as inputs. See the module docstring for the equations and the
    direction of the mixed/single-phase blend.

    Laid out for few XLA:CPU kernels (each costs dispatch time at a few hundred points):
    cell indices on uniform axes are arithmetic (no memory access), the phase boundaries are
    read with one gather, and every table corner of both phases with one more
    (:mod:`aragog.eos._packed`). Single-phase values are read from the one table that is used
    at each point (melt where g > 1/2, solid otherwise).
    """
    if not isinstance(tables, PackedEOS):
        tables = pack_tables(tables)
    pk = tables
    P = jnp.asarray(P, dtype=jnp.float64)
    S = jnp.asarray(S, dtype=jnp.float64)
    P, S = jnp.broadcast_arrays(P, S)
    axes = (pk.melt_P, pk.melt_S, pk.solid_P, pk.solid_S, pk.solidus_P, pk.liquidus_P)
    inv = pk.inv_step

    def locate(k, x):  # (i, t, 1/h): cell index, fraction, inverse cell width on axes[k]
        return _locate(axes[k], inv[k], pk.modes[k], x)

    # Phase boundaries: both curves in one gather of two neighbouring values each.
    n_sol = pk.n_solidus
    i_sol, t_sol, ih_sol = locate(4, P)
    i_liq, t_liq, ih_liq = locate(5, P)
    f = _rows(pk.boundary_S, jnp.stack([i_sol, i_liq + n_sol]), 2)  # (2, ..., 2)
    S_sol = (1.0 - t_sol) * f[0, ..., 0] + t_sol * f[0, ..., 1]
    S_liq = (1.0 - t_liq) * f[1, ..., 0] + t_liq * f[1, ..., 1]
    inside_sol = (P >= pk.solidus_P[0]) & (P <= pk.solidus_P[-1])
    inside_liq = (P >= pk.liquidus_P[0]) & (P <= pk.liquidus_P[-1])
    dSsol_dP = jnp.where(inside_sol, (f[0, ..., 1] - f[0, ..., 0]) * ih_sol, 0.0)
    dSliq_dP = jnp.where(inside_liq, (f[1, ..., 1] - f[1, ..., 0]) * ih_liq, 0.0)
    gap = S_liq - S_sol
    g = (S - S_sol) / gap
    phi = jnp.clip(g, 0.0, 1.0)
    melt_side = g > 0.5

    # Table reads: (0) the single-phase value at (P, S) from the table used at that point,
    # (1) melt at (P, S_liq), (2) solid at (P, S_sol). One gather of 2 x 2 corners each.
    ip_m, tp_m, _ = locate(0, P)
    ip_s, tp_s, _ = locate(2, P)
    js_m, ts_m, _ = locate(1, S)
    js_s, ts_s, _ = locate(3, S)
    j_liq, t_sliq, _ = locate(1, S_liq)
    j_sol, t_ssol, _ = locate(3, S_sol)
    np_m, np_s, off = pk.melt_shape[1], pk.solid_shape[1], pk.solid_offset
    k_one = jnp.where(melt_side, js_m * np_m + ip_m, off + js_s * np_s + ip_s)
    k_liq = j_liq * np_m + ip_m
    k_sol = off + j_sol * np_s + ip_s
    row = jnp.stack([k_one, k_liq, k_sol])
    stride = jnp.stack([jnp.where(melt_side, np_m, np_s), jnp.full_like(k_liq, np_m), jnp.full_like(k_sol, np_s)])
    corners = _rows(pk.values, jnp.stack([row, row + stride]), 2)  # (2 S rows, 3, ..., 2 P points, 5)
    tp = jnp.stack([jnp.where(melt_side, tp_m, tp_s), tp_m, tp_s])[..., None]
    ts = jnp.stack([jnp.where(melt_side, ts_m, ts_s), t_sliq, t_ssol])[..., None]
    lo = (1.0 - tp) * corners[0, ..., 0, :] + tp * corners[0, ..., 1, :]
    hi = (1.0 - tp) * corners[1, ..., 0, :] + tp * corners[1, ..., 1, :]
    val = (1.0 - ts) * lo + ts * hi  # (3, ..., 5): T, rho, cp, dTdPs, alpha
    T_liq, rho_liq = val[1, ..., 0], val[1, ..., 1]
    T_sol, rho_sol = val[2, ..., 0], val[2, ..., 1]
    one = {name: val[0, ..., c] for c, name in enumerate(FIELDS)}
    if not all(pk.has_alpha):  # alpha = (dT/dP)_S rho c_p / T where the table has none
        computed = one["dTdPs"] * one["rho"] * one["cp"] / one["T"]
        if not any(pk.has_alpha):
            one["alpha"] = computed
        else:
            use = melt_side if not pk.has_alpha[0] else ~melt_side
            one["alpha"] = jnp.where(use, computed, one["alpha"])

    # Mixed-phase values (docs/physics.md, "Equation of state"), with the clipped phi.
    dT = T_liq - T_sol
    T_mix = phi * T_liq + (1.0 - phi) * T_sol
    rho_mix = 1.0 / (phi / rho_liq + (1.0 - phi) / rho_sol)
    cp_mix = gap / dT * 0.5 * (T_liq + T_sol)
    alpha_mix = (rho_sol - rho_liq) / (dT * rho_mix)
    dTdPs_mix = alpha_mix * T_mix / (rho_mix * cp_mix)

    # W = 1 - tw(g, 1, w) on the melt side, tw(g, 0, w) otherwise: one tanh per point.
    th = jnp.tanh(jnp.where(melt_side, g - 1.0, g) / params.matprop_smooth_width)
    W = jnp.where(melt_side, 1.0 - 0.5 * (1.0 + th), 0.5 * (1.0 + th))

    def blend(mix, key):
        return W * mix + (1.0 - W) * one[key]

    liq, sol = params.phase_liquid, params.phase_solid
    w_r = tanh_weight(phi, params.rheological_transition_melt_fraction, params.rheological_transition_width)
    log10_visc = (1.0 - w_r) * jnp.log10(sol.viscosity) + w_r * jnp.log10(liq.viscosity)
    return PhaseState(
        T=blend(T_mix, "T"),
        rho=blend(rho_mix, "rho"),
        cp=blend(cp_mix, "cp"),
        alpha=blend(alpha_mix, "alpha"),
        dTdPs=blend(dTdPs_mix, "dTdPs"),
        phi=phi,
        k=phi * liq.thermal_conductivity + (1.0 - phi) * sol.thermal_conductivity,
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




def _locate(axis, inv_step, mode: str, x):
    """``(i, t, 1/h)`` of ``x`` on ``axis``: cell index (int32, in [0, n-2]), fraction in the
    cell of ``x`` clipped to the axis range, and the inverse cell width. ``mode`` "exact":
    arithmetic only (the axis is uniform to rounding); otherwise
    :func:`~aragog.eos._lookup.cell_bounds` ("near": estimate and correct; "search")."""
    if mode == "exact":
        n = axis.shape[0]
        lo, hi = axis[0], axis[-1]
        xc = jnp.where(x < lo, lo, jnp.where(x > hi, hi, x))  # derivative 1 up to the end points
        u = (xc - lo) * inv_step
        # A query on a node (u within rounding of an integer k) is put on it exactly: cell k
        # with t = 0 (the cell the node opens, as a search would find), so values on grid
        # points are the table's own; the shift (<= NODE_SNAP of a cell) carries no derivative.
        k = jnp.round(u)
        u = u + jnp.where(jnp.abs(u - k) <= NODE_SNAP, jax.lax.stop_gradient(k - u), 0.0)
        i = jnp.clip(jnp.floor(u).astype(jnp.int32), 0, n - 2)
        return i, u - i, inv_step
    xc, i, x0, x1 = cell_bounds(axis, x, mode == "near", inv_step)
    return i, (xc - x0) / (x1 - x0), 1.0 / (x1 - x0)


def _rows(arr, start, size: int):
    """``arr[start : start + size]`` along axis 0 for every int ``start`` (any shape): one
    gather, shape ``start.shape + (size,) + arr.shape[1:]`` (starts must be in range)."""
    arr = jnp.asarray(arr)
    start = jnp.asarray(start, dtype=jnp.int32)
    nd = start.ndim
    dnums = jax.lax.GatherDimensionNumbers(offset_dims=tuple(range(nd, nd + arr.ndim)),
                                           collapsed_slice_dims=(), start_index_map=(0,))
    return jax.lax.gather(arr, start[..., None], dnums, (size,) + arr.shape[1:],
                          mode=jax.lax.GatherScatterMode.PROMISE_IN_BOUNDS)


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
    rho, cp, alpha = params.const_rho, params.const_Cp, params.const_alpha
    T = params.const_T_ref * jnp.exp((S - params.const_S_ref) / cp)
    zero = jnp.zeros_like(S)
    return PhaseState(
        T=T,
        rho=full(rho),
        cp=full(cp),
        alpha=full(alpha),
        dTdPs=alpha * T / (rho * cp),
        phi=jnp.ones_like(S),
        k=full(params.const_cond),
        visc=full(10.0**params.const_log10visc),
        S_sol=full(params.const_S_ref),
        S_liq=full(params.const_S_ref),
        dSsol_dP=zero,
        dSliq_dP=zero,
        T_sol=full(params.const_T_ref),
        T_liq=full(params.const_T_ref),
        rho_sol=full(rho),
        rho_liq=full(rho),
    )
