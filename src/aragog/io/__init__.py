"""Output of aragog runs: the run record, netCDF files, plots and summaries.

* :class:`RunHistory` — what one run writes: scalar time series at every output time,
  profiles at snapshot times, the radial mesh, global attributes.
* :func:`write_netcdf` / :func:`read_netcdf` — a CF-1.8-style netCDF-4 file, written
  atomically; the round trip is exact.
* :func:`plot_run` — a four-panel PNG overview of a run.
* :func:`summarize` — a short text summary (``aragog inspect``).

The file layout is documented in ``docs/output.md``. Matplotlib is imported only when a
plot is made.
"""

from __future__ import annotations

from aragog._run_history import RunHistory, select_snapshots
from aragog.io._inspect import summarize
from aragog.io._netcdf import read_netcdf, write_netcdf
from aragog.io._plot import plot_run

__all__ = ["RunHistory", "select_snapshots", "write_netcdf", "read_netcdf", "plot_run", "summarize"]
