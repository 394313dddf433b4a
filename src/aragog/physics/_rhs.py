"""Assembly of dS/dt, and diagnostics; the state layout (y, its slot, the Jacobian band)
is :mod:`aragog.physics._layout` (re-exported here).

Time t is nondimensional: t_seconds = t * Scales.t; dy/dt is per unit nondimensional
time. Discretisation (docs/physics.md "Grid", "Flux laws", "Entropy equation",
"Boundary conditions"; docs/physics.md):

* interior basic node j (1..N-1): S_j linear in ξ between cells j-1 and j,
  dS/dr = (S_j - S_{j-1})/(ξ_s,j - ξ_s,j-1) · dξ/dr|_j (second order);
* surface node N, outer_boundary_condition 5: S_N = S(T_s, P_N) and dS/dr the slope at ξ_N of the
  quadratic in ξ through (ξ_N, S_N) and the top two cells, times dξ/dr|_N (second order;
  :func:`boundary_slope`); the flux F_N it gives enters row N-1 only through S_{N-1}
  and S_{N-2}, so the Jacobian stays within the band;
* surface node N otherwise: S_N linear extrapolation in ξ from the top two cells (second
  order in the value; a quadratic through three cells would put S_{N-3} into row N-1 via
  the grey-body flux and widen the band), gradient the slope at ξ_N of the quadratic
  through the top three cells (two with 2 cells) times dξ/dr|_N (diagnostics only: F_N is
  the boundary condition's);
* CMB node 0: "energy_balance": S_b0 = S_0 + (dS/dr)_cmb (r_0 - r_s0) with gradient
  (dS/dr)_cmb; "temperature": S_b0 = S(T_cmb, P_0) with the second-order slope like the
  prescribed surface; otherwise extrapolation like the non-prescribed surface;
* core_bc "gradient": every node from :func:`aragog.physics._core.radial_basic_nodes` (the
  upstream gradient formulation's radial stencils), except a prescribed surface;
* F_j = sum of the enabled flux laws at every node (gravitational separation and mixing
  set to 0 on both boundary nodes), then F_0 and F_N replaced per boundary condition;
* dS_i/dt = -(F_{i+1} A_{i+1} - F_i A_i)/(ρ_i T_i V_i) + H_i/T_i.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from aragog._jax import jax, jnp
from aragog._pytree import data_pytree
from aragog.physics import _boundary as bnd
from aragog.physics import _core as core
from aragog.physics import _transport as tr
from aragog.physics._heating import cell_heating
from aragog.physics._energetics import energy_diagnostics
from aragog.physics._inputs import PhysicsInputs, PhysicsOptions
from aragog.physics._layout import band_widths, join_state, split_state, state_size  # noqa: F401 (re-exported)

__all__ = [
    "Diagnostics",
    "state_size",
    "band_widths",
    "split_state",
    "join_state",
    "basic_node_entropy",
    "boundary_slope",
    "rhs",
    "diagnostics",
    "global_melt_fraction",
    "mass_weighted_melt_fraction",
    "StructureState",
    "structure_stage",
    "thermal_stage",
    "state_rate",
    "diagnostics_of",
]


def _check_cells(n_cells: int) -> None:
    if n_cells < 2:
        raise ValueError(f"aragog.physics needs at least 2 cells (3 basic nodes), got {n_cells}")


def boundary_slope(x, m1, g1, m2, g2):
    """dS/dξ at a boundary node ξ = ``x``: the linear extrapolation in ξ of two secant slopes,
    ``g1`` (nearest) and ``g2``, each placed at the midpoint ``m1``, ``m2`` of its two points:
    g1 + (g1 - g2) (x - m1)/(m1 - m2).

    A secant slope of a quadratic is its derivative at the midpoint, and the derivative is
    linear, so this is the slope at ``x`` of the quadratic through the three points: exact
    for quadratics, error O(h^2) (docs/physics.md, "Boundary closures").
    """
    return g1 + (g1 - g2) * ((x - m1) / (m1 - m2))


def basic_node_entropy(S, dSdr_cmb, S_surface, mesh, options: PhysicsOptions, S_cmb=None):
    """Entropy [J/kg/K] and radial gradient [J/kg/K/m] at the N+1 basic nodes.

    ``dSdr_cmb``: used with core_bc "energy_balance" and "gradient" (else ignored);
    ``S_surface``: the prescribed surface entropy for outer_boundary_condition 5 (else ignored);
    ``S_cmb``: the prescribed CMB entropy for core_bc "temperature" (else ignored). See the
    module docstring.
    """
    xs, xb, dxdr = mesh.xi_stag, mesh.xi_basic, mesh.dxidr_basic
    dxi = xs[1:] - xs[:-1]
    dS = S[1:] - S[:-1]
    grad_xi = dS / dxi  # dS/dξ at interior nodes 1..N-1
    S_int = S[:-1] + dS * ((xb[1:-1] - xs[:-1]) / dxi)

    mid = 0.5 * (xs[1:] + xs[:-1])  # where the cell-pair slopes grad_xi are exact for a quadratic
    three = S.shape[0] >= 3  # static: two cells give one slope only (a linear profile)

    if options.outer_boundary_condition == 5:
        # Quadratic through (ξ_N, S_N) and the top two cells; the half-cell slope and the
        # slope of node N-1 extrapolated to ξ_N ((8 S_N - 9 S_N-1 + S_N-2)/(3h) on a uniform ξ grid).
        S_top = jnp.asarray(S_surface, dtype=jnp.float64)
        half = (S_top - S[-1]) / (xb[-1] - xs[-1])
        grad_top = boundary_slope(xb[-1], 0.5 * (xb[-1] + xs[-1]), half, mid[-1], grad_xi[-1])
    else:
        S_top = S[-1] + grad_xi[-1] * (xb[-1] - xs[-1])
        grad_top = boundary_slope(xb[-1], mid[-1], grad_xi[-1], mid[-2], grad_xi[-2]) if three else grad_xi[-1]

    if options.energy_balance:
        S_bot = S[0] + dSdr_cmb * (mesh.r_basic[0] - mesh.r_stag[0])
        dSdr_bot = dSdr_cmb
    elif options.core_bc == "temperature":
        # Mirror of the prescribed surface: the quadratic through (ξ_0, S_b0) and the two
        # lowest cells, its slope at ξ_0 (second order; F_0 then enters row 0 through S_0, S_1).
        S_bot = jnp.asarray(S_cmb, dtype=jnp.float64)
        half = (S[0] - S_bot) / (xs[0] - xb[0])
        dSdr_bot = boundary_slope(xb[0], 0.5 * (xb[0] + xs[0]), half, mid[0], grad_xi[0]) * dxdr[0]
    else:
        S_bot = S[0] + grad_xi[0] * (xb[0] - xs[0])
        grad_bot = boundary_slope(xb[0], mid[0], grad_xi[0], mid[1], grad_xi[1]) if three else grad_xi[0]
        dSdr_bot = grad_bot * dxdr[0]

    if options.core_bc == "gradient":
        S_b, dSdr_b = core.radial_basic_nodes(S, dSdr_cmb, mesh)
        if options.outer_boundary_condition == 5:  # the prescribed surface keeps its closure
            S_b = S_b.at[-1].set(S_top)
            dSdr_b = dSdr_b.at[-1].set(grad_top * dxdr[-1])
        return S_b, dSdr_b
    S_b = jnp.concatenate([jnp.reshape(S_bot, (1,)), S_int, jnp.reshape(S_top, (1,))])
    dSdr_b = jnp.concatenate([
        jnp.reshape(dSdr_bot, (1,)), grad_xi * dxdr[1:-1], jnp.reshape(grad_top * dxdr[-1], (1,))
    ])
    return S_b, dSdr_b


class _Fluxes(NamedTuple):
    jcond: Any
    jconv: Any
    jgrav: Any
    jmix: Any
    kappa_h: Any = None  # thermal eddy diffusivity of jconv [m2/s] (zeros without convection)


def _interior(x):
    """x with its first and last entries set to 0 (terms that vanish on both boundaries)."""
    z = jnp.zeros((1,), dtype=x.dtype)
    return jnp.concatenate([z, x[1:-1], z])


def _cmb_from_first_interior(kappa_h):
    """κ_h with the CMB node's value replaced by the first interior node's (N+1,) [m2/s].

    As SPIDER (energy.c) and the upstream aragog do: the mixing length vanishes at the
    wall ("nearest_boundary"), and the flux law evaluated on the boundary-extrapolated
    gradient there would leave only the floor, so the CMB heat flux of the energy-balance
    core would be set by conduction across a boundary layer one cell thick instead of by
    the convecting interior above it (tens of times smaller at coupling resolutions).
    Used with the cores whose CMB flux is the flux law at that node and a gradient slot
    ("energy_balance", "gradient"); with a prescribed CMB temperature the node keeps its
    own value (a Dirichlet node coupled to the interior's κ_h half a cell away made the
    solve stall).
    """
    return jnp.concatenate([kappa_h[1:2], kappa_h[1:]])


def _node_fluxes(st, S_b, dSdr_b, st_c, S_c, inputs, options) -> _Fluxes:
    """The four flux laws at all basic nodes [W/m2]; switched-off terms are zeros.

    ``st`` (N+1,) phase state at the basic nodes; ``st_c``, ``S_c`` (N,) the cells' phase
    state and entropy, needed by the two-phase terms: each of them is weighted by the melt
    of the cell it draws from (docs/physics.md, "The donor-cell invariant").
    """
    mesh, tp = inputs.mesh, inputs.transport
    zero = jnp.zeros_like(S_b)
    dPdr = -mesh.rho_basic * mesh.g_basic  # hydrostatic: dP/dr = -ρ_static g
    jcond = tr.conductive_flux(st, dSdr_b, dPdr) if options.conduction else zero
    two_phase = not options.constant_properties  # constant mode has no mush
    if options.convection:
        kappa = tr.mixing_length_diffusivity(st, dSdr_b, mesh.g_basic, mesh.mixing_length_basic)
        kappa_h = tr.thermal_eddy_diffusivity(st, kappa, dSdr_b, tp, inputs.material)
        if options.core_bc in ("energy_balance", "gradient"):
            kappa_h = _cmb_from_first_interior(kappa_h)
        jconv = tr.convective_flux(st, dSdr_b, kappa_h)
    else:
        jconv = kappa_h = zero
    if two_phase and (options.gravitational_separation or options.mixing):
        width = inputs.material.matprop_smooth_width
        g_c = (S_c - st_c.S_sol) / (st_c.S_liq - st_c.S_sol)  # unclipped melt fraction of the cells
    if options.gravitational_separation and two_phase:
        drag_viscosity = (st.visc if options.separation_viscosity == "mixture"
                          else inputs.material.phase_liquid.viscosity)
        jgrav = tr.gravitational_separation_flux(st, mesh.g_basic, tp.grain_size, drag_viscosity,
                                                 tp.buoyancy_mixture)
        # Melt percolates through the solid matrix of the cell it leaves: both phases there.
        jgrav = _interior(jgrav * tr.donor_cell_weight(tr.mush_weight(g_c, width), jgrav > 0.0))
    else:
        jgrav = zero
    if options.mixing and two_phase:
        # κ_c from the ramped drive: a finite slope at the mixing onset (docs/physics.md).
        drive = tr.mixing_onset_drive(dSdr_b, tr.phase_boundary_gradient(st, dPdr), tp.mixing_onset_width)
        kappa_mix = tr.mixing_length_diffusivity(st, -drive, mesh.g_basic, mesh.mixing_length_basic)
        kappa_c = tr.eddy_diffusivity(kappa_mix, tp.eddy_diffusivity_chemical, dSdr_b)
        jmix = tr.mixing_flux(st, S_b, dSdr_b, dPdr, kappa_c, width)
        jmix = _interior(jmix * tr.donor_cell_weight(tr.melt_weight(g_c, width), jmix > 0.0))
    else:
        jmix = zero
    return _Fluxes(jcond, jconv, jgrav, jmix, kappa_h)


class StructureState(NamedTuple):
    """What the structure stage hands to the thermal stage (SI units; N cells).

    S (N,) cell entropy, dSdr_cmb (scalar, or None unless core_bc "energy_balance" or
    "gradient"), S_b, dSdr_b (N+1,) entropy and gradient at the basic nodes, T_core
    (scalar [K] with "bower2018", else None), st the EOS and phase state
    (:class:`aragog.eos.PhaseState`, each field (2N+1,)) at the N cells then the N+1 basic
    nodes. (One array per field, not two: as a separately compiled block every output
    costs call time.)
    """

    S: Any
    dSdr_cmb: Any
    S_b: Any
    dSdr_b: Any
    st: Any
    T_core: Any = None

    def split(self):
        """(st_c, st_b): the phase state at the cells (N,) and at the basic nodes (N+1,)."""
        n = self.S.shape[0]
        return (jax.tree_util.tree_map(lambda a: a[:n], self.st),
                jax.tree_util.tree_map(lambda a: a[n:], self.st))


class _Evaluation(NamedTuple):
    S: Any
    dSdr_cmb: Any
    S_b: Any
    dSdr_b: Any
    st_c: Any
    st_b: Any
    fluxes: _Fluxes
    F: Any
    H: Any
    H_radio: Any
    H_tidal: Any
    dSdt: Any
    dSb0dt: Any
    ddSdr_cmb_dt: Any
    T_core: Any = None
    dT_core_dt: Any = None


def structure_stage(y, inputs: PhysicsInputs, options: PhysicsOptions) -> StructureState:
    """The structure submodel at state ``y``: basic-node entropy and gradient, and one EOS
    and phase evaluation at the N cells and the N+1 basic nodes (at the static pressures
    of the mesh)."""
    mesh, bp = inputs.mesh, inputs.boundary
    n = mesh.number_of_cells
    _check_cells(n)
    y = jnp.asarray(y, dtype=jnp.float64)
    if y.shape != (state_size(n, options),):
        raise ValueError(f"state has shape {y.shape}, expected ({state_size(n, options)},) for {n} cells")
    S, slot = split_state(y, inputs, options)
    dSdr_cmb = slot if options.energy_balance else None
    S_surface = S_cmb = None
    if options.outer_boundary_condition == 5:
        S_surface = bnd.surface_entropy_for_temperature(bp.outer_boundary_value, mesh.P_basic[-1], inputs, options)
    if options.core_bc == "temperature":
        S_cmb = bnd.surface_entropy_for_temperature(bp.cmb_temperature, mesh.P_basic[0], inputs, options)
    S_b, dSdr_b = basic_node_entropy(S, dSdr_cmb, S_surface, mesh, options, S_cmb)
    st = tr.material_state(jnp.concatenate([mesh.P_stag, mesh.P_basic]), jnp.concatenate([S, S_b]), inputs, options)
    return StructureState(S, dSdr_cmb, S_b, dSdr_b, st, slot if options.core_temperature_slot else None)


def thermal_stage(t, s: StructureState, inputs: PhysicsInputs, options: PhysicsOptions) -> _Evaluation:
    """The thermal submodel at nondimensional time ``t``: fluxes, heating, boundary
    conditions and the entropy equation, from the structure stage's ``s``."""
    mesh, bp, sc = inputs.mesh, inputs.boundary, inputs.scales
    n = mesh.number_of_cells
    S, dSdr_cmb, S_b, dSdr_b = s.S, s.dSdr_cmb, s.S_b, s.dSdr_b
    st_c, st_b = s.split()
    t_seconds = jnp.asarray(t, dtype=jnp.float64) * sc.t

    fluxes = _node_fluxes(st_b, S_b, dSdr_b, st_c, S, inputs, options)
    F_laws = fluxes.jcond + fluxes.jconv + fluxes.jgrav + fluxes.jmix
    H, H_radio, H_tidal = cell_heating(t_seconds, inputs.heating, n, options.radionuclides, options.tidal)
    A, V = mesh.area_basic, mesh.volume_stag

    # Surface.
    if options.outer_boundary_condition == 5:
        F_N = F_laws[-1]
    else:
        F_N = bnd.surface_flux(st_b.T[-1], bp, options)
    # Core-mantle boundary.
    if options.core_bc == "flux":
        F_0 = jnp.asarray(bp.cmb_flux, dtype=jnp.float64)
    elif options.core_bc == "quasi_steady":
        F_0 = bnd.quasi_steady_cmb_flux(F_laws[1], H[0], st_c.rho[0], st_c.cp[0], V[0], A[0], A[1],
                                        mesh.core_mass, bp.core_heat_capacity, bp.tfac_core_avg)
    elif options.core_temperature_slot:
        F_0 = core.conductive_cmb_flux(st_c.T[0], st_c.k[0], s.T_core, mesh.r_basic[0], mesh.r_basic[1])
    else:  # energy_balance, gradient, temperature: the flux laws at the CMB node
        F_0 = F_laws[0]
    F = jnp.concatenate([jnp.reshape(F_0, (1,)), F_laws[1:-1], jnp.reshape(F_N, (1,))])

    # Entropy equation (docs/physics.md) dS_i/dt = -(F_{i+1}A_{i+1} - F_i A_i)/(ρ_i T_i V_i) + H_i/T_i.
    FA = F * A
    dSdt = (FA[:-1] - FA[1:]) / (st_c.rho * st_c.T * V) + H / st_c.T

    if options.energy_balance:
        dSb0dt = bnd.core_entropy_rate(F_0, A[0], st_b.cp[0], st_b.T[0], mesh.core_mass, bp.core_heat_capacity,
                                       bp.tfac_core_avg)
        # S_b0 = S_0 + (dS/dr)_cmb (r_0 - r_s0)  =>  d(dS/dr)_cmb/dt = (dS_0/dt - dS_b0/dt)/(r_s0 - r_0),
        # which is the textbook 2 (dS_0/dt - dS_b0/dt)/(r_1 - r_0) when r_s0 is the radial
        # midpoint of cell 0 (radius mesh) and keeps S_b0 exactly on the core's rate on a
        # mass-coordinate mesh too (docs/physics.md).
        ddSdr = (dSdt[0] - dSb0dt) / (mesh.r_stag[0] - mesh.r_basic[0])
    else:
        dSb0dt = ddSdr = None
    dTc = (core.core_temperature_rate(F_0, A[0], mesh.core_mass, bp.core_heat_capacity)
           if options.core_temperature_slot else None)
    return _Evaluation(S, dSdr_cmb, S_b, dSdr_b, st_c, st_b, fluxes, F, H, H_radio, H_tidal, dSdt, dSb0dt, ddSdr,
                       s.T_core, dTc)


def _evaluate(t, y, inputs: PhysicsInputs, options: PhysicsOptions) -> _Evaluation:
    return thermal_stage(t, structure_stage(y, inputs, options), inputs, options)


def rhs(t, y, inputs: PhysicsInputs, options: PhysicsOptions):
    """dy/dt (nondimensional; shape of y) at nondimensional time ``t``.

    Pure and jittable with ``options`` static (``jax.jit(rhs, static_argnums=3)``);
    forward- and reverse-mode differentiable, finite everywhere.
    """
    return state_rate(_evaluate(t, y, inputs, options), inputs, options)


def state_rate(ev: _Evaluation, inputs: PhysicsInputs, options: PhysicsOptions):
    """dy/dt (nondimensional) from a thermal-stage evaluation."""
    sc = inputs.scales
    dy = ev.dSdt * (sc.t / sc.S)
    if options.energy_balance:
        dy = jnp.concatenate([jnp.reshape(ev.ddSdr_cmb_dt * (sc.t / sc.dSdr), (1,)), dy])
    elif options.core_temperature_slot:
        dy = jnp.concatenate([jnp.reshape(ev.dT_core_dt * (sc.t / sc.T), (1,)), dy])
    return dy


def global_melt_fraction(y, inputs: PhysicsInputs, options: PhysicsOptions):
    """Mass-weighted melt fraction Σ phi_i m_i / Σ m_i of the cells (m = mesh.mass_stag)."""
    mesh = inputs.mesh
    S, _ = split_state(jnp.asarray(y, dtype=jnp.float64), inputs, options)
    phi = tr.material_state(mesh.P_stag, S, inputs, options).phi
    return mass_weighted_melt_fraction(phi, mesh)


def mass_weighted_melt_fraction(phi, mesh):
    """Σ phi_i m_i / Σ m_i over the cells (phi shape (N,), m = mesh.mass_stag)."""
    return jnp.sum(phi * mesh.mass_stag) / jnp.sum(mesh.mass_stag)




@data_pytree
class Diagnostics:
    """Everything the output needs at one (t, y); SI units. N cells, N+1 basic nodes.

    Per cell (N,): S [J/kg/K], T [K], phi [-], rho [kg/m3] (EOS), cp [J/kg/K], visc [Pa s],
        H [W/kg] (radiogenic + tidal), dSdt [J/kg/K/s].
    Per basic node (N+1,): S_basic, T_basic, phi_basic, jcond, jconv, jgrav, jmix [W/m2]
        (the flux laws at every node, boundary nodes included, with the node's entropy and
        gradient; jgrav = jmix = 0 on both boundaries), heat_flux [W/m2] (total F with the
        boundary values F_0, F_N in place: what the entropy equation uses).
    Scalars: F_cmb = F_0, F_surface = F_N [W/m2]; T_surface (surface node, "T_magma"),
        T_radiative (grey-body radiating temperature: T_surface, or the UTBL root),
        T_cmb (CMB node), T_core = tfac_core_avg T_cmb (the state slot with "bower2018") [K];
        dSdr_cmb [J/kg/K/m] (the gradient used at the CMB node: the state slot with
        "energy_balance" and "gradient", else the closure's);
        Phi_global (mass-weighted melt fraction), M_mantle, M_liquid = Σ phi m, M_solid
        [kg] (m = mesh.mass_stag); H_radio [W/kg]; Q_radio_total = H_radio M_mantle,
        Q_tidal_total = Σ H_tidal m [W]; E_th = Σ m c_p T [J] (thermal energy relative to
        0 K at constant c_p: a monitor, not a thermodynamic potential); RF_depth [-]
        (see :func:`_rheological_front_depth`).
    Energy identity (docs/physics.md "Checks"), all [W]: energy_rate = Σ ρ_i T_i V_i dS_i/dt,
        cmb_power = F_0 A_0, surface_power = F_N A_N, heating_power = Σ ρ_i H_i V_i (EOS
        density: these close exactly, energy_rate = cmb_power - surface_power +
        heating_power, to rounding).
    energy: :class:`aragog.physics._energetics.EnergyDiagnostics` (Cp_eff, melt volume
        fraction, live-mass source powers, basic-node dS/dr, κ_h, c_p, ρ).
    """

    S: Any
    T: Any
    phi: Any
    rho: Any
    cp: Any
    visc: Any
    H: Any
    dSdt: Any
    S_basic: Any
    T_basic: Any
    phi_basic: Any
    jcond: Any
    jconv: Any
    jgrav: Any
    jmix: Any
    heat_flux: Any
    F_cmb: Any
    F_surface: Any
    T_surface: Any
    T_radiative: Any
    T_cmb: Any
    T_core: Any
    dSdr_cmb: Any
    Phi_global: Any
    M_mantle: Any
    M_liquid: Any
    M_solid: Any
    H_radio: Any
    Q_radio_total: Any
    Q_tidal_total: Any
    E_th: Any
    RF_depth: Any
    energy_rate: Any
    cmb_power: Any
    surface_power: Any
    heating_power: Any
    energy: Any = None  # EnergyDiagnostics (aragog.physics._energetics)


def _rheological_front_depth(phi_b, r_b, phi_rheo):
    """Depth of the rheological front as a fraction of the mantle depth R - r_c.

    The front is the top of the rheologically solid region: scanning the basic nodes from
    the surface down, the first node k with phi_k < phi_rheo; the crossing is placed by
    linear interpolation in phi between node k and node k+1 above it (phi_{k+1} >=
    phi_rheo). 0 when no node is below phi_rheo (whole mantle above the transition: no
    front yet, SPIDER's convention) and 0 when the surface node is (front at the surface).
    The front appears at depth ~1 when the base first crosses phi_rheo and rises to 0.
    """
    n = phi_b.shape[0] - 1
    below = phi_b < phi_rheo
    k = n - jnp.argmax(below[::-1])  # highest index below phi_rheo (n if none: masked below)
    k1 = jnp.minimum(k + 1, n)
    dphi = phi_b[k1] - phi_b[k]
    frac = jnp.where(dphi > 0, (phi_rheo - phi_b[k]) / jnp.where(dphi > 0, dphi, 1.0), 0.0)
    r_front = jnp.where(k < n, r_b[k] + jnp.clip(frac, 0.0, 1.0) * (r_b[k1] - r_b[k]), r_b[n])
    depth = (r_b[n] - r_front) / (r_b[n] - r_b[0])
    return jnp.where(jnp.any(below), depth, 0.0)


def diagnostics(t, y, inputs: PhysicsInputs, options: PhysicsOptions) -> Diagnostics:
    """All output quantities at nondimensional time ``t`` and state ``y`` (jittable)."""
    return diagnostics_of(_evaluate(t, y, inputs, options), inputs, options)


def diagnostics_of(ev: _Evaluation, inputs: PhysicsInputs, options: PhysicsOptions) -> Diagnostics:
    """:class:`Diagnostics` from a thermal-stage evaluation."""
    mesh, bp = inputs.mesh, inputs.boundary
    st_c, st_b = ev.st_c, ev.st_b
    m = mesh.mass_stag
    M = jnp.sum(m)
    A, V = mesh.area_basic, mesh.volume_stag
    M_liq = jnp.sum(st_c.phi * m)
    T_s = st_b.T[-1]
    grey = options.utbl and options.outer_boundary_condition == 1
    T_rad = bnd.utbl_radiating_temperature(T_s, bp.param_utbl_const) if grey else T_s
    dSdr_cmb = ev.dSdr_cmb if options.energy_balance else ev.dSdr_b[0]
    phi_rheo = inputs.material.rheological_transition_melt_fraction
    return Diagnostics(
        S=ev.S, T=st_c.T, phi=st_c.phi, rho=st_c.rho, cp=st_c.cp, visc=st_c.visc, H=ev.H, dSdt=ev.dSdt,
        S_basic=ev.S_b, T_basic=st_b.T, phi_basic=st_b.phi,
        jcond=ev.fluxes.jcond, jconv=ev.fluxes.jconv, jgrav=ev.fluxes.jgrav, jmix=ev.fluxes.jmix,
        heat_flux=ev.F,
        F_cmb=ev.F[0], F_surface=ev.F[-1],
        T_surface=T_s, T_radiative=T_rad, T_cmb=st_b.T[0],
        T_core=ev.T_core if options.core_temperature_slot else bp.tfac_core_avg * st_b.T[0],
        dSdr_cmb=jnp.asarray(dSdr_cmb, dtype=jnp.float64),
        Phi_global=M_liq / M, M_mantle=M, M_liquid=M_liq, M_solid=M - M_liq,
        H_radio=jnp.asarray(ev.H_radio, dtype=jnp.float64),
        Q_radio_total=ev.H_radio * M, Q_tidal_total=jnp.sum(ev.H_tidal * m),
        E_th=jnp.sum(m * st_c.cp * st_c.T),
        RF_depth=_rheological_front_depth(st_b.phi, mesh.r_basic, phi_rheo),
        energy_rate=jnp.sum(st_c.rho * st_c.T * V * ev.dSdt),
        cmb_power=ev.F[0] * A[0], surface_power=ev.F[-1] * A[-1],
        heating_power=jnp.sum(st_c.rho * ev.H * V),
        energy=energy_diagnostics(st_c, st_b, ev.dSdr_b, ev.fluxes.kappa_h, ev.H_radio, ev.H_tidal, inputs),
    )
