"""The integrator's absolute tolerance of each state component (docs/solver.md, "Error weights").

The state is nondimensional: the cells' entropy over ``Scales.S`` and, with core_bc
"energy_balance", a first slot y_c, the CMB entropy gradient over ``Scales.dSdr``. CVODE
weighs the error of component i by 1 / (rtol |y_i| + atol_i). One atol for every
component weighs the slot's error as if it were a cell's entropy error, which it is not:

* the slot acts on the mantle through the CMB node, whose entropy it sets,
  S_b0 = S_0 - y_c dSdr (r_s0 - r_b0): an error δ in y_c is an error δ / g in S_b0 / S,
  with g = S / (dSdr (r_s0 - r_b0)) (about 100 for 40 cells on the mass-coordinate mesh);
* S_b0 carries the core's heat content, M_c c_c f T(S_b0): an error δS in S_b0 is an
  energy error M_c c_c f (T / c_p) δS, where the lowest cell's is m_0 T δS.

Weighed by energy, an error δ in the slot counts as much as an error
δ (M_c c_c f) / (g m_0 c_p) in a cell's y. The slot's atol is therefore the cells' times
``slot_atol_factor`` = g m_0 / (f M_c): the energy-matched factor with the mantle's c_p
replaced by the core's c_c. The mantle's c_p (1,000-2,000 J/kg/K, far more in the mush)
exceeds the core's (880 by default), so this errs on the tight side. It is about 5 for an
Earth-like planet at any resolution (g grows and m_0 shrinks with the number of cells).

Why it matters: the slot relaxes in ~1e-3 yr to the value the core's energy balance sets,
slaved to S_1 - S_0 with a gain of order g, so the cells' own integration error reaches it
multiplied. Weighed with the cells' atol, the slot failed CVODE's error test at every step
size once the CMB became nearly adiabatic (|y_c| ~ 1e-6, where rtol |y_c| adds nothing)
under a freezing base: a solve ended at 9.0e4 yr with "error test failed repeatedly" at
h = 1e-3 yr, and the cases that finished took up to ten times the steps
(tools/mush_matrix.py; docs/solver.md, "Error weights").
"""

from __future__ import annotations

import numpy as np

__all__ = ["absolute_tolerances", "slot_atol_factor"]


def slot_atol_factor(inputs) -> float:
    """g m_0 / (f M_c) [-] (module docstring): g = Scales.S / (Scales.dSdr (r_s0 - r_b0)),
    m_0 the lowest cell's structural mass, M_c the core's mass, f = tfac_core_avg. Rounded to
    two significant digits, so that a mesh that moves by rounding between coupled solves
    keeps the same tolerances (a warm start requires them unchanged)."""
    mesh, sc = inputs.mesh, inputs.scales
    half_cell = float(np.asarray(mesh.r_stag)[0]) - float(np.asarray(mesh.r_basic)[0])  # m
    gain = float(sc.S) / (float(sc.dSdr) * half_cell)
    heat_capacity_ratio = float(np.asarray(mesh.mass_stag)[0]) / (
        float(inputs.boundary.tfac_core_avg) * float(mesh.core_mass))
    return float(f"{gain * heat_capacity_ratio:.2g}")


def absolute_tolerances(atol: float, n: int, inputs, options):
    """The integrator's ``atol`` for a state of ``n`` components, given the solver's
    ``atol`` [J/kg/K] (``solver.atol``): a scalar atol / Scales.S when every component is an
    entropy, else an (n,) array whose energy-balance slot (component 0) has that value
    times :func:`slot_atol_factor`. The core-temperature slot of core_bc "bower2018"
    (T_core / Scales.T, of order one) keeps the scalar."""
    scalar = float(atol) / float(inputs.scales.S)
    if not options.energy_balance:
        return scalar
    out = np.full(n, scalar)
    out[0] = scalar * slot_atol_factor(inputs)
    return out
