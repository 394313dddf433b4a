"""Internal heating [W/kg]: radiogenic decay and a prescribed tidal array.

Radiogenic heating (docs/physics.md, "Heating"; SPIDER's radiogenic heating, Bower et al.
2018 appendix, after Ruedas 2017 for the isotope data)::

    H(t) = sum_n h_n a_n c_n exp(ln 2 (t0_n - t) / tau_n),   c_n = ppm_n * 1e-6

h_n heat production per kg of isotope [W/kg], a_n isotope abundance (isotope/element),
c_n element mass fraction, tau_n half life, t0_n the model time at which c_n is given
(for the Earth defaults, the present day: 4.55 Gyr after the model start), t the model
time [s]. Its closed-form time integral is :func:`radiogenic_energy`.

An isotope with a zero amplitude h_n a_n c_n contributes exactly 0 at every time, even
where its decay factor overflows (an extinct isotope such as Al26 with abundance 0, given
at t0 = 4.55 Gyr with a 0.7 Myr half life: exp(4400)). A non-zero amplitude whose factor
overflows at the start time is rejected by the config check (docs/config.md).
"""

from __future__ import annotations

import math

import numpy as np

from aragog._jax import jnp
from aragog.physics._inputs import HeatingInputs
from aragog.units import PPM, SECONDS_PER_YEAR

__all__ = [
    "EARTH_RADIONUCLIDES",
    "earth_heating_inputs",
    "radiogenic_heating",
    "radiogenic_energy",
    "cell_heating",
]

_LN2 = math.log(2.0)

#: Earth-like defaults (docs/physics.md, "Heating"): name -> (h [W/kg], abundance,
#: concentration [ppm], half life [yr]); all given at t0 = 4.55e9 yr.
EARTH_RADIONUCLIDES = {
    "K40": (2.8761e-5, 1.1668e-4, 310.0, 1.248e9),
    "Th232": (2.6368e-5, 1.0, 0.124, 1.4e10),
    "U235": (5.68402e-4, 0.0072045, 0.031, 7.04e8),
    "U238": (9.4946e-5, 0.9927955, 0.031, 4.468e9),
}
EARTH_T0_YEARS = 4.55e9


def earth_heating_inputs(n_cells: int, tidal=0.0) -> HeatingInputs:
    """:class:`HeatingInputs` with the Earth-like isotopes of docs/physics.md, "Heating" (SI,
    seconds) and a tidal array of ``n_cells`` values (``tidal`` broadcast) [W/kg]."""
    data = np.array(list(EARTH_RADIONUCLIDES.values()), dtype=np.float64)
    k = data.shape[0]
    return HeatingInputs(
        tidal=jnp.broadcast_to(jnp.asarray(tidal, dtype=jnp.float64), (n_cells,)),
        heat_production=jnp.asarray(data[:, 0]),
        abundance=jnp.asarray(data[:, 1]),
        concentration=jnp.asarray(data[:, 2]),
        half_life=jnp.asarray(data[:, 3] * SECONDS_PER_YEAR),
        t0=jnp.full((k,), EARTH_T0_YEARS * SECONDS_PER_YEAR, dtype=jnp.float64),
    )


def _amplitude(heating: HeatingInputs):
    """h_n a_n c_n [W/kg] per isotope, shape (K,)."""
    return (jnp.asarray(heating.heat_production, dtype=jnp.float64) * heating.abundance
            * (jnp.asarray(heating.concentration, dtype=jnp.float64) * PPM))


def _masked(amplitude, x):
    """The decay exponent ``x`` where the amplitude is non-zero, else 0: an isotope with a
    zero amplitude (an extinct one, abundance = 0) contributes exactly 0, also where
    exp(x) overflows (0 × inf would be NaN; the mask keeps its derivatives finite too)."""
    return jnp.where(amplitude != 0.0, x, 0.0)


def radiogenic_heating(t_seconds, heating: HeatingInputs):
    """Radiogenic heating H(t) [W/kg] at model time ``t_seconds`` [s] (any shape: the sum
    over the K isotopes is taken on a trailing axis). K = 0 gives 0; an isotope with zero
    amplitude h a c gives exactly 0."""
    t = jnp.asarray(t_seconds, dtype=jnp.float64)[..., None]
    amplitude = _amplitude(heating)
    decay = jnp.exp(_masked(amplitude, _LN2 * (heating.t0 - t) / heating.half_life))
    return jnp.sum(amplitude * decay, axis=-1)


def radiogenic_energy(t0, t1, heating: HeatingInputs):
    """Closed-form ∫_{t0}^{t1} H(t) dt [J/kg] (t0, t1 model times in s).

    Per isotope: h a c (tau/ln 2) [e^{ln2 (T_n - t0)/tau} - e^{ln2 (T_n - t1)/tau}]
    (T_n = ``heating.t0``), evaluated as -e^{x0} expm1(ln2 (t0 - t1)/tau), so that short
    intervals keep full relative precision.
    """
    t0 = jnp.asarray(t0, dtype=jnp.float64)[..., None]
    t1 = jnp.asarray(t1, dtype=jnp.float64)[..., None]
    tau = heating.half_life
    amplitude = _amplitude(heating)
    x0 = _masked(amplitude, _LN2 * (heating.t0 - t0) / tau)
    dx = _masked(amplitude, _LN2 * (t0 - t1) / tau)  # x1 - x0 from the times themselves (no cancellation)
    per = amplitude * (tau / _LN2) * (-jnp.exp(x0) * jnp.expm1(dx))
    return jnp.sum(per, axis=-1)


def cell_heating(t_seconds, heating: HeatingInputs, n_cells: int, radionuclides: bool, tidal: bool):
    """Heating per cell [W/kg]: returns (H (N,), H_radio scalar, H_tidal (N,)).

    ``radionuclides`` and ``tidal`` are the static switches; a switched-off term is zero
    and not computed.
    """
    zero = jnp.zeros((n_cells,), dtype=jnp.float64)
    H_radio = radiogenic_heating(t_seconds, heating) if radionuclides else jnp.zeros((), jnp.float64)
    H_tidal = jnp.broadcast_to(jnp.asarray(heating.tidal, dtype=jnp.float64), (n_cells,)) if tidal else zero
    return H_radio + H_tidal, H_radio, H_tidal
