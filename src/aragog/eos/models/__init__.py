"""Equation-of-state models from published parameters: each phase a Helmholtz free energy
F(V, T) in JAX, every property by automatic differentiation (:mod:`._thermo`).

The MgSiO3 model (``eos.model = "mgsio3"``, docs/eos_tables.md "The MgSiO3 model") joins
the RTpress melt (:class:`RTpressMelt`), SLB2011 bridgmanite (:class:`Bridgmanite`) and
the Monteux et al. (2016) melting curves; :func:`generate_tables` writes its SPIDER-format
tables.
"""

from aragog.eos.models._bridgmanite import Bridgmanite
from aragog.eos.models._generate import generate_tables, phase_arrays
from aragog.eos.models._inversion import solve_states, state_PS, volume_temperature
from aragog.eos.models._melting import LIQUIDUS, SOLIDUS, MeltingCurve, SimonGlatzel, entropy_curve
from aragog.eos.models._mgsio3 import MGSIO3, P_FITTED, MgSiO3Model
from aragog.eos.models._rtpress import RTpressMelt
from aragog.eos.models._thermo import HelmholtzPhase, properties_PT, properties_VT, state_functions, volume

__all__ = [
    "HelmholtzPhase", "state_functions", "properties_VT", "properties_PT", "volume",
    "Bridgmanite", "RTpressMelt",
    "MeltingCurve", "SimonGlatzel", "SOLIDUS", "LIQUIDUS", "entropy_curve",
    "solve_states", "state_PS", "volume_temperature",
    "MgSiO3Model", "MGSIO3", "P_FITTED", "generate_tables", "phase_arrays",
]
