"""The planet config most tests load.

``TOY_EARTH`` (tests/earth_toy.toml) is the demo's Earth-size planet on the bundled toy EOS
model (constant density, heat capacity and expansivity) with linear output times: what
input/earth.toml was before the demo moved to the generated MgSiO3 tables (issue 36).
Tests load it for the toy model's speed and for the numbers they were written against; a
test whose subject is the demo config itself loads input/earth.toml.
"""

from __future__ import annotations

from pathlib import Path

TOY_EARTH = Path(__file__).resolve().with_name("earth_toy.toml")


def material_params(visc_liq=100.0, visc_sol=1.0e21, cond_liq=4.0, cond_sol=4.0, **changes):
    """An ``eos.MaterialParams`` with the values the physics and EOS tests were written
    against (melt 100 Pa s, solid 1e21 Pa s, 4 W/m/K in each phase, the rheological
    transition at melt fraction 0.4 ± 0.15, the schema's blend width); ``changes`` replace
    its ``[phase_mixed]`` fields by their names."""
    from aragog import eos

    values = dict(rheological_transition_melt_fraction=0.4, rheological_transition_width=0.15)
    values.update(changes)
    return eos.MaterialParams(phase_liquid=eos.PhaseProperties(viscosity=visc_liq, thermal_conductivity=cond_liq),
                              phase_solid=eos.PhaseProperties(viscosity=visc_sol, thermal_conductivity=cond_sol),
                              **values)


def constant_params(**changes):
    """An ``eos.ConstantParams`` with the values the constant-property tests were written
    against (4000 kg/m3, 1000 J/kg/K, 1e-5 1/K, 4 W/m/K, 100 Pa s, T = 1600 K at S = 2000
    J/kg/K); ``changes`` replace fields by their names (``const_rho``, ...)."""
    from aragog import eos

    values = dict(const_rho=4000.0, const_Cp=1000.0, const_alpha=1.0e-5, const_cond=4.0, const_log10visc=2.0,
                  const_T_ref=1600.0, const_S_ref=2000.0)
    values.update(changes)
    return eos.ConstantParams(**values)
