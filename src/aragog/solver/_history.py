"""The :class:`RunHistory` of a solver's run (:meth:`aragog.EntropySolver.history`).

The solver evaluates its states (:func:`aragog.solver._results.history_rows`: the output
fields at every output time it kept) and hands them here, where the run record is
assembled: scalar series, profiles at the snapshot times, the mesh, the file attributes.
The record type lives below the solver (:mod:`aragog._run_history`, beside
:mod:`aragog.fields`), so the solver builds it without importing ``aragog.io``, the layer
above it, which writes and reads it.
"""

from __future__ import annotations

import numpy as np

from aragog._run_history import RunHistory, select_snapshots
from aragog.fields import BASIC_FIELDS, SCALAR_FIELDS, STAGGERED_FIELDS

__all__ = ["run_history"]


def run_history(times, outputs, step_scalars, mesh, params, *, status: int, message: str,
                integrator: str) -> RunHistory:
    """A :class:`RunHistory` of a solver's output times.

    Args:
        times: every output time kept [yr] (K,), in order.
        outputs: per time, the :class:`aragog.solver.SolverOutput` fields (profiles and
            scalars; ``None`` for a scalar the run does not have).
        step_scalars: further scalar series (K,) (the energy step fields).
        mesh: the mesh of the latest solve (``r_stag``, ``r_basic``).
        params: the run's :class:`aragog.config.Config` (``output.snapshots``; written
            as the ``config`` attribute).
        status, message: the last solve's status and message.
        integrator: the name of the integrator (an attribute of the file).
    """
    from aragog._version import __version__
    from aragog.config import to_toml

    times = np.asarray(times)
    scalars = {k: np.array([o[k] for o in outputs]) for k in SCALAR_FIELDS if outputs[0].get(k) is not None}
    scalars.update(step_scalars)
    snap = select_snapshots(times, int(params.output.snapshots))
    profiles = {k: np.stack([outputs[i][k] for i in snap]) for k in STAGGERED_FIELDS + BASIC_FIELDS}
    attrs = {
        "aragog_version": __version__,
        "integrator": integrator,
        "status": int(status),
        "message": str(message),
        "config": to_toml(params),
    }
    return RunHistory(time=times, scalars=scalars, snapshot_time=times[snap], profiles=profiles,
                      r_stag=np.asarray(mesh.r_stag), r_basic=np.asarray(mesh.r_basic), attrs=attrs)
