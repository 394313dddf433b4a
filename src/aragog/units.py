"""Unit conversions shared from the config to the physics, each defined once.

A base module (it imports nothing): the config checks, the physics, the solver and the
upstream adapter read these, so none of them keeps a copy of its own.
"""

from __future__ import annotations

__all__ = ["PPM", "SECONDS_PER_YEAR"]

#: Julian year [s] (docs/design.md, "Conventions").
SECONDS_PER_YEAR = 31_557_600.0
#: One part per million as a mass fraction [kg/kg]: a radionuclide's ``concentration``
#: [ppm] times this is the element's mass fraction (docs/physics.md, radiogenic heating).
PPM = 1.0e-6
