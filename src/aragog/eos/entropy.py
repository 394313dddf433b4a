"""The upstream aragog's ``EntropyEOS``, at its import path ``aragog.eos.entropy``: an
adapter over this package's EOS, in the eos room (docs/compat.md).

The upstream class loads a directory of SPIDER-format P-S tables and answers point
queries; PROTEUS uses it to build the initial state and to pass the table directory to
the solver::

    from aragog.eos.entropy import EntropyEOS
    eos = EntropyEOS(eos_dir)
    S = eos.invert_temperature(1e5, 3000.0)        # J/kg/K with T(1 bar, S) = 3000 K
    T = eos.temperature_scalar(P, S)               # K
    eos.P_max                                      # Pa, top of the pressure axis

Here the tables are read by :func:`aragog.eos.load_table_set` and evaluated by
:func:`aragog.eos.evaluate_phase` — the same two-phase evaluator the solver compiles —
so the values are the solver's values. Temperature and density, and the inversion
T -> S that PROTEUS calls once to build its initial state, are answered in NumPy
(:class:`aragog.eos._host.NumpyEOS`, the evaluator's mirror for T and ρ, equal to rounding;
the inversion is :func:`aragog.eos._host.entropy_of_temperature`, the solver's own):
nothing is compiled for them, which kept ~0.8 s of compiling out of a coupled run's first
solve. The other fields come from one small compiled evaluation (compiled at the first such
query, once per process and table shape).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from aragog._jax import in_float64, jax
from aragog.errors import EOSError
from aragog.eos._host import NumpyEOS, entropy_of_temperature
from aragog.eos._packed import packed_tables
from aragog.eos._phase import MaterialParams, PhaseProperties, evaluate_phase
from aragog.eos._tables import load_table_set

__all__ = ["EntropyEOS"]

#: The two-phase evaluator's material for the queries: the blend width the solver uses by
#: default (the schema's ``matprop_smooth_width``); the transport properties and the
#: rheological transition are placeholders, as EntropyEOS answers no viscosity or
#: conductivity.
_QUERY_MATERIAL = MaterialParams(phase_liquid=PhaseProperties(viscosity=1.0, thermal_conductivity=1.0),
                                 phase_solid=PhaseProperties(viscosity=1.0, thermal_conductivity=1.0),
                                 rheological_transition_melt_fraction=0.5, rheological_transition_width=1.0)


#: the two-phase evaluator, compiled per table shape by JAX's own jit cache
#: (``jax.clear_caches()`` or ``aragog.clear_caches()`` empties it)
_evaluate = jax.jit(evaluate_phase)


class EntropyEOS:
    """Point and array queries of a P-S table set (upstream names).

    Args:
        eos_dir: directory of SPIDER-format P-S tables (``temperature_melt.dat``, ...,
            ``solidus_P-S.dat``, ``liquidus_P-S.dat``).
        strict_range: accepted for compatibility; queries outside the tables are clamped
            to the table edge here as upstream does by default.

    Attributes:
        directory: the table directory (absolute ``Path``); the solver reads the same tables.
        P_min, P_max: pressure range covered by both phases [Pa].
        S_min, S_max: entropy range covered by both phases [J/kg/K].
    """

    @in_float64
    def __init__(self, eos_dir, strict_range: bool = False):
        self.directory = Path(eos_dir).expanduser().resolve()
        self.strict_range = bool(strict_range)
        tables = load_table_set(self.directory)
        self._tables = packed_tables(tables).to_jax()
        self._material = _QUERY_MATERIAL
        self._host = NumpyEOS(packed_tables(tables), self._material.matprop_smooth_width)
        melt, solid = tables.melt, tables.solid
        self.P_min = float(max(melt.P[0], solid.P[0]))
        self.P_max = float(min(melt.P[-1], solid.P[-1]))
        self.S_min = float(min(melt.S[0], solid.S[0]))
        self.S_max = float(max(melt.S[-1], solid.S[-1]))

    def __repr__(self) -> str:
        return f"EntropyEOS({str(self.directory)!r})"

    # ------------------------------------------------------------------ evaluation
    @in_float64
    def _state(self, P, S):
        P, S = np.broadcast_arrays(np.asarray(P, dtype=float), np.asarray(S, dtype=float))
        P = np.clip(P, self.P_min, self.P_max)
        return _evaluate(self._tables, self._material, P, S), P.shape

    def _field(self, name: str, P, S):
        state, shape = self._state(P, S)
        value = np.asarray(getattr(state, name), dtype=float).reshape(shape)
        return float(value) if value.ndim == 0 else value

    def _host_field(self, k: int, P, S):
        P, S = np.broadcast_arrays(np.asarray(P, dtype=float), np.asarray(S, dtype=float))
        value = self._host(np.clip(P, self.P_min, self.P_max), S)[k]
        return float(value) if value.ndim == 0 else value

    def temperature(self, P, S):
        """Temperature [K] at pressure ``P`` [Pa] and entropy ``S`` [J/kg/K] (arrays broadcast)."""
        return self._host_field(0, P, S)

    def temperature_scalar(self, P: float, S: float) -> float:
        """Temperature [K] at one (P [Pa], S [J/kg/K]) point."""
        return float(self._host_field(0, float(P), float(S)))

    def melt_fraction(self, P, S):
        """Mass melt fraction in [0, 1]."""
        return self._field("phi", P, S)

    def density(self, P, S):
        """Density [kg/m³]."""
        return self._host_field(1, P, S)

    def heat_capacity(self, P, S):
        """Isobaric heat capacity [J/kg/K]."""
        return self._field("cp", P, S)

    def thermal_expansivity(self, P, S):
        """Thermal expansivity [1/K]."""
        return self._field("alpha", P, S)

    def dTdPs(self, P, S):
        """Adiabatic temperature gradient (dT/dP)_S [K/Pa]."""
        return self._field("dTdPs", P, S)

    def solidus_entropy(self, P):
        """Entropy of the solidus at ``P`` [J/kg/K]."""
        return self._field("S_sol", P, 0.0)

    def liquidus_entropy(self, P):
        """Entropy of the liquidus at ``P`` [J/kg/K]."""
        return self._field("S_liq", P, 0.0)

    # ------------------------------------------------------------------ inversion
    def invert_temperature(self, P: float, T_target: float) -> float:
        """Entropy [J/kg/K] with T(P, S) = ``T_target`` [K]; ``P`` is clamped to the tables.

        Raises:
            EOSError: ``T_target`` is outside the temperatures the tables reach at ``P``.
        """
        P = float(np.clip(float(P), self.P_min, self.P_max))
        T_target = float(T_target)
        lo, hi = self.S_min, self.S_max
        f_lo = self.temperature_scalar(P, lo) - T_target
        f_hi = self.temperature_scalar(P, hi) - T_target
        if not (np.isfinite(f_lo) and np.isfinite(f_hi)) or f_lo * f_hi > 0.0:
            raise EOSError(f"{self.directory}: T = {T_target} K at P = {P} Pa is outside the tables' range "
                           f"[{f_lo + T_target:.6g}, {f_hi + T_target:.6g}] K")
        return entropy_of_temperature(T_target, P, self._host)

    def entropy_at_temperature(self, P: float, T: float) -> float:
        """Same as :meth:`invert_temperature` (the upstream has both names)."""
        return self.invert_temperature(P, T)
