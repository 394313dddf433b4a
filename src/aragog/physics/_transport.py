"""The four heat-flux laws at basic nodes (positive outward), W/m2.

Equations: docs/physics.md, "Flux laws" (Bower et al. 2018, PEPI 274, 49-62,
eqs. 6-12 and appendix; the SPIDER code). Every function is elementwise on arrays of
basic-node values; ``st`` is an ``aragog.eos.PhaseState`` evaluated at (P, S) of the
nodes, ``dSdr`` the entropy gradient [J/kg/K/m], ``dPdr`` = -rho_static g [Pa/m].

Differentiability: no sqrt of 0, no division by a quantity that can vanish, tanh weights
only (their derivative underflows to 0, never NaN), so jax.jvp/jacfwd are finite
everywhere.
"""

from __future__ import annotations

from aragog._jax import jnp
from aragog.eos import evaluate_constant, evaluate_phase, tanh_weight

__all__ = [
    "material_state",
    "conductive_flux",
    "mixing_length_diffusivity",
    "eddy_diffusivity",
    "thermal_eddy_diffusivity",
    "convective_flux",
    "porosity",
    "permeability",
    "gravitational_separation_flux",
    "mush_weight",
    "melt_weight",
    "donor_cell_weight",
    "mixing_flux",
    "phase_boundary_gradient",
    "mixing_onset_drive",
    "PERMEABILITY_CROSSOVERS",
    "PERMEABILITY_BLEND_WIDTHS",
    "RE_CRIT",
]

#: Critical Reynolds number of the viscous/inviscid velocity blend (docs/physics.md; SPIDER):
#: w = tw(Re, 9/8, 0.01 * 9/8).
RE_CRIT = 9.0 / 8.0

#: Porosities where the permeability law changes: Blake-Kozeny-Carman -> Rumpf-Gupte ->
#: Stokes (Abe 1993; SPIDER). The branches are continuous there (p^2/(1000 (1-p)^2) =
#: (5/7) p^4.5 at p = 0.0769 to 0.3 %; (5/7) p^4.5 = 2/9 at p = 0.77 to 1 %).
PERMEABILITY_CROSSOVERS = (0.0769, 0.77)
#: tanh blend widths at the crossovers: 2 % of the crossover porosity. The branches agree
#: at the crossovers, so the blend only acts within a few widths of them; one width away
#: the neighbouring branch differs by ~5 % (lower) and ~8 % (upper) and carries a weight of
#: 12 %, so the blended K departs from the piecewise law by <~ 1 % while staying smooth
#: (finite, continuous derivative) for the Jacobian.
PERMEABILITY_BLEND_WIDTHS = (0.02 * 0.0769, 0.02 * 0.77)


def material_state(P, S, inputs, options):
    """EOS state at (P, S): ``eos.evaluate_constant`` in constant-property mode, else
    ``eos.evaluate_phase(inputs.eos, inputs.material, P, S)``."""
    if options.constant_properties:
        return evaluate_constant(inputs.eos, P, S)
    return evaluate_phase(inputs.eos, inputs.material, P, S)


def conductive_flux(st, dSdr, dPdr):
    """J_cond = -k [(T/c_p) dS/dr + (dT/dP)_S dP/dr] (docs/physics.md; Bower et al. 2018
    eq. 7: -k dT/dr with dT/dr written in S and P)."""
    return -st.k * (st.T / st.cp * dSdr + st.dTdPs * dPdr)


def mixing_length_diffusivity(st, dSdr, g, mixing_length):
    """Mixing-length eddy diffusivity kappa [m2/s] (docs/physics.md; Bower et al. 2018
    eqs. 9-11; SPIDER's viscous/inviscid blend).

    Drive Δ = max(-dS/dr, 0); v_p = g α T Δ / c_p [s^-2]; ν = η/ρ;
    viscous velocity v_v = v_p l^3/(18 ν); inviscid v_i = sqrt(v_p l^2/16) = (l/4) sqrt(v_p);
    Re = v_v l / ν; w = tw(Re, 9/8, 0.01·9/8); kappa = [(1-w) v_v + w v_i] l.
    Zero where v_p <= 0 (stable stratification, or a negative expansivity). The square
    root is taken of a guarded argument, so the derivative is finite at v_p = 0.
    """
    drive = jnp.where(dSdr < 0.0, -dSdr, 0.0)
    nu = st.visc / st.rho
    vp = g * st.alpha * st.T * drive / st.cp
    active = vp > 0.0
    vp_safe = jnp.where(active, vp, 1.0)
    l = mixing_length
    v_visc = jnp.where(active, vp_safe * l**3 / (18.0 * nu), 0.0)
    v_inv = jnp.where(active, 0.25 * l * jnp.sqrt(vp_safe), 0.0)
    reynolds = v_visc * l / nu
    w = tanh_weight(reynolds, RE_CRIT, 0.01 * RE_CRIT)
    return ((1.0 - w) * v_visc + w * v_inv) * l


def eddy_diffusivity(kappa, factor, dSdr):
    """Scaled eddy diffusivity where the node convects (dS/dr < 0), zero elsewhere.

    ``factor`` > 0: factor * kappa; ``factor`` <= 0: the constant |factor| m2/s (SPIDER's
    ``eddy_diffusivity_*`` convention). Restricting the constant to dS/dr < 0 keeps the
    eddy terms convective (no down-gradient eddy flux in a stably stratified layer).
    """
    value = jnp.where(factor > 0.0, factor * kappa, jnp.abs(factor))
    return jnp.where(dSdr < 0.0, value, 0.0)


def thermal_eddy_diffusivity(st, kappa, dSdr, transport, material):
    """kappa_h = f_T kappa (or |f_T|), floored where dS/dr < 0 at
    kappah_floor · tw(phi, phi_rheo, phi_width) (docs/physics.md: a floor that fades out as the
    mantle solidifies; the rheological transition of ``material``, an
    ``eos.MaterialParams``); zero where dS/dr >= 0."""
    kh = eddy_diffusivity(kappa, transport.eddy_diffusivity_thermal, dSdr)
    floor = transport.kappah_floor * tanh_weight(st.phi, material.rheological_transition_melt_fraction,
                                                 material.rheological_transition_width)
    return jnp.where(dSdr < 0.0, jnp.maximum(kh, floor), 0.0)


def convective_flux(st, dSdr, kappa_h):
    """J_conv = ρ T kappa_h (-dS/dr) (docs/physics.md; Bower et al. 2018 eq. 8)."""
    return st.rho * st.T * kappa_h * (-dSdr)


def porosity(st):
    """Volume fraction of melt p = phi ρ / ρ_liq (phi the melt mass fraction, ρ the mush
    density, ρ_liq the melt density on the liquidus)."""
    return st.phi * st.rho / st.rho_liq


def permeability(p, grain_size, matrix_factor=1.0):
    """Permeability K [m2] at porosity ``p`` (docs/physics.md; Abe 1993, as in SPIDER):

    K/grain^2 = p^2/(1000 (1-p)^2)   (Blake-Kozeny-Carman, p < 0.0769)
              = (5/7) p^4.5           (Rumpf-Gupte, 0.0769 < p < 0.77)
              = 2/9                   (Stokes, p > 0.77)

    blended with tanh weights w_1 = tw(p, 0.0769, δ_1), w_2 = tw(p, 0.77, δ_2)
    (:data:`PERMEABILITY_BLEND_WIDTHS`):
    K/grain^2 = (1-w_1) BKC + w_1 [(1-w_2) RG + w_2 Stokes].
    Above p = 0.7716 the Rumpf-Gupte branch exceeds Stokes, so the blend overshoots 2/9 by
    at most 1.1 % (near p = 0.78) before settling on it.
    The BKC branch is evaluated at min(p, 1/2) (its weight is 0 to rounding there), so
    p -> 1 never divides by zero. ``matrix_factor`` multiplies the two matrix branches
    (BKC and RG), not Stokes: 1 - p for the buoyancy against the mixture (McKenzie 1984).
    """
    (c1, c2), (d1, d2) = PERMEABILITY_CROSSOVERS, PERMEABILITY_BLEND_WIDTHS
    p = jnp.asarray(p)
    pb = jnp.minimum(p, 0.5)
    bkc = pb**2 / (1000.0 * (1.0 - pb) ** 2)
    positive = p > 0.0
    rg = jnp.where(positive, (5.0 / 7.0) * jnp.where(positive, p, 1.0) ** 4.5, 0.0)
    stokes = 2.0 / 9.0
    w1 = tanh_weight(p, c1, d1)
    w2 = tanh_weight(p, c2, d2)
    matrix = (1.0 - w1) * bkc + w1 * (1.0 - w2) * rg
    return grain_size**2 * (matrix_factor * matrix + w1 * w2 * stokes)


def gravitational_separation_flux(st, g, grain_size, drag_viscosity, buoyancy_mixture=0.0):
    """J_grav = j T_fus ΔS_fus (docs/physics.md; Bower et al. 2018 eq. 12, Abe 1993).

    j = ρ phi (1-phi) v_rel [kg m-2 s-1], v_rel = (ρ_sol - ρ_liq) g K(p) / η (melt
    rises relative to the solid when it is lighter: positive outward); ``drag_viscosity`` η
    [Pa s], scalar or per node: the melt's (SPIDER) or the node's own rheological
    viscosity (``phase_mixed.separation_viscosity = "mixture"``, the upstream's).
    T_fus = (T_sol + T_liq)/2, ΔS_fus = S_liq - S_sol. Zero outside the mush (phi is
    clipped to [0, 1], so phi (1 - phi) = 0 there). ``buoyancy_mixture`` = 1: the buoyancy
    against the mixture (McKenzie 1984), the permeability's matrix branches times 1 - p.
    """
    p = porosity(st)
    K = permeability(p, grain_size, 1.0 - buoyancy_mixture * p)
    v_rel = (st.rho_sol - st.rho_liq) * g * K / drag_viscosity
    j = st.rho * st.phi * (1.0 - st.phi) * v_rel
    return j * 0.5 * (st.T_sol + st.T_liq) * (st.S_liq - st.S_sol)


def mush_weight(g_phi, width):
    """Smooth indicator of the mush in the unclipped melt fraction g_phi: tw(g, 0, w) for
    g <= 1/2 and 1 - tw(g, 1, w) above (the same two-branch weight as the EOS blend;
    SPIDER's ``get_smoothing``). 1/2 on the solidus and liquidus, 1 inside; exactly 0 (tanh
    saturates to ±1 in float64) further than ~19 w outside [0, 1]."""
    return jnp.where(g_phi > 0.5, 1.0 - tanh_weight(g_phi, 1.0, width), tanh_weight(g_phi, 0.0, width))


def melt_weight(g_phi, width):
    """Smooth indicator that a cell holds melt, from its unclipped melt fraction g_phi:
    tw(g, 0, w), the lower branch of :func:`mush_weight` continued to 1 above the solidus.
    1/2 on the solidus, exactly 0 further than ~19 w below it, 1 above ~19 w."""
    return tanh_weight(g_phi, 0.0, width)


def donor_cell_weight(cell_weight, upward):
    """Weight (N+1,) of each basic node's donor cell: the cell below the node where the
    node's flux is ``upward`` (a bool per node, (N+1,)), else the cell above.

    ``cell_weight`` (N,): a per-cell weight in [0, 1] (:func:`mush_weight` or
    :func:`melt_weight` of the cell's unclipped melt fraction). Interior node j lies
    between cells j-1 and j; the two boundary nodes get 1 (their two-phase fluxes are 0).
    The donor switches where the flux changes sign, i.e. where it is 0, so flux × weight
    stays continuous (docs/physics.md, "Flux laws": the donor-cell invariant).
    """
    one = jnp.ones((1,), dtype=cell_weight.dtype)
    interior = jnp.where(upward[1:-1], cell_weight[:-1], cell_weight[1:])
    return jnp.concatenate([one, interior, one])


def phase_boundary_gradient(st, dPdr):
    """(phi dS_liq/dP + (1-phi) dS_sol/dP) dP/dr [J/kg/K/m]: the radial entropy gradient of
    a mush whose melt fraction does not change with depth (the lever rule's phase-boundary
    part). The bracket of :func:`mixing_flux` is dS/dr minus this."""
    return (st.phi * st.dSliq_dP + (1.0 - st.phi) * st.dSsol_dP) * dPdr


def mixing_onset_drive(dSdr, phase_gradient, width):
    """The convective drive that sets the chemical eddy diffusivity [J/kg/K/m], >= 0:
    Δ³/(Δ + δ)² with Δ = max(-dS/dr, 0), δ = w |c|, c = :func:`phase_boundary_gradient`
    and w = ``width`` (``energy.mixing_onset_width``, dimensionless); Δ itself when δ = 0.

    Why (docs/physics.md, "Mixing onset"): with the mixing-length law κ_c ∝ Δ^(1/2) and a
    bracket of :func:`mixing_flux` that tends to -c ≠ 0 as Δ -> 0, J_mix has an infinite
    slope at the onset, where CVODE's Newton iteration cycles. With this drive κ_c ∝ Δ^(3/2)
    below Δ ~ δ, so J_mix and its first derivative are continuous (0) at the onset; above
    Δ ~ |c|, where a mixing mush sits (J_conv + J_mix balance near Δ = |c|/2), the drive is
    Δ (1 - 2δ/Δ + ...), within a relative 2w of the law. It is the law as w -> 0.
    """
    drive = jnp.where(dSdr < 0.0, -dSdr, 0.0)
    denom = drive + width * jnp.abs(phase_gradient)
    positive = denom > 0.0
    safe = jnp.where(positive, denom, 1.0)
    return jnp.where(positive, drive * (drive / safe) ** 2, 0.0)


def mixing_flux(st, S, dSdr, dPdr, kappa_c, smooth_width):
    """J_mix = -kappa_c ρ T_fus [dS/dr - (phi dS_liq/dP + (1-phi) dS_sol/dP) dP/dr],
    times the mush weight of the unclipped melt fraction g = (S - S_sol)/(S_liq - S_sol)
    (docs/physics.md "zero outside the mush", made smooth as in SPIDER; see :func:`mush_weight`).
    Table mode only (needs S_liq > S_sol)."""
    g_phi = (S - st.S_sol) / (st.S_liq - st.S_sol)
    bracket = dSdr - phase_boundary_gradient(st, dPdr)
    t_fus = 0.5 * (st.T_sol + st.T_liq)
    return -kappa_c * st.rho * t_fus * bracket * mush_weight(g_phi, smooth_width)
