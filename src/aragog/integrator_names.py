"""The integrator back ends' names: one table shared by the configuration and the solver.

``aragog.config`` must not import the solver (``aragog.solver`` loads NumPy on import, and
the configuration is imported by ``import aragog``), so the names live here, below both:
this module imports nothing. :data:`aragog.solver.backends.BACKENDS` holds one callable
per name (same names, same order; checked when it is built), and the schema's
``solver.method`` choices are the short names.
"""

from __future__ import annotations

__all__ = ["INTEGRATORS", "CONFIG_METHODS"]

#: back end name (``IntegrationResult.integrator``, the key of ``BACKENDS``) -> its short
#: name, which ``integrate(method=...)`` also accepts and the configuration's
#: ``solver.method`` takes. Adding a back end: one entry here, one in ``BACKENDS``.
INTEGRATORS: dict[str, str] = {
    "cvode": "cvode",
    "scipy-bdf": "bdf",
    "scipy-radau": "radau",
}

#: the configuration's ``solver.method`` choices, in registry order
CONFIG_METHODS: tuple[str, ...] = tuple(INTEGRATORS.values())
