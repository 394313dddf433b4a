"""The output folder of a grid: what it holds, and the manifest of finished points.

Layout (docs/grid.md)::

    DIR/grid.json            the grid (spec identity, hash, points and their axis values)
    DIR/points/p00012.nc     one point's run (aragog.io netCDF), written when it ends
    DIR/points/p00012.json   its manifest record: status, message, wall, compile source
    DIR/grid.nc              `aragog grid collect`
    DIR/grid.png             `aragog grid plot`

Every file is written atomically (a temporary file in the same folder, then a rename), the
netCDF before its record, so a record always names a complete file and a killed grid
loses no finished point. The manifest is the set of records: each writer (a worker
process, on any machine that shares the folder) writes only its own point's, so writers
never contend. A point without a record is pending.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path
from typing import Any

from aragog.errors import ConfigError
from aragog.io._atomic import atomic_output

__all__ = ["GridFolder", "PointRecord", "write_json_atomically", "STATUSES"]

#: Statuses of a point record; a point without one is "pending".
STATUSES = ("done", "failed")


@dataclasses.dataclass
class PointRecord:
    """One point's manifest entry.

    Attributes:
        index, id, values: the point (see :class:`aragog.grid._spec.GridPoint`).
        status: ``"done"`` (the solve ended with status >= 0) or ``"failed"``.
        message: the solver's message, or the failure (one line).
        solver_status: the solver's status (``None`` when it never ran).
        wall_seconds: wall time of the point in its worker (config to written file) [s].
        integration_seconds: the integrator's wall time [s].
        compile: ``{"compiled": n, "loaded": n, "reused": n}``: programs this point
            compiled, loaded from the persistent cache, or found compiled in its worker;
            compile_seconds: its tracing + compiling/loading time [s] (threads overlap).
        setup_seconds, output_seconds, write_seconds: config + solver + initial state;
            the run's output (diagnostics and energy budget at every output time); the
            netCDF file [s].
        static_key: the hash of the point's static key (points with one key share programs).
        t_final: model time reached [yr]; ``stopped_early``: it is before the config's
            ``solver.end_time``.
        file: the netCDF file's name in ``points/`` (``None``: nothing was written).
        worker, attempts: the worker that ran it; how many times it was started.
        started, ended: when it started and ended in its worker [s since the epoch].
    """

    index: int
    id: str
    values: dict[str, Any]
    status: str
    message: str
    solver_status: int | None = None
    wall_seconds: float = 0.0
    integration_seconds: float = 0.0
    compile: dict[str, int] = dataclasses.field(default_factory=lambda: {"compiled": 0, "loaded": 0, "reused": 0})
    compile_seconds: float = 0.0
    setup_seconds: float = 0.0
    output_seconds: float = 0.0
    write_seconds: float = 0.0
    static_key: str = ""
    t_final: float | None = None
    stopped_early: bool = False
    file: str | None = None
    worker: str = ""
    attempts: int = 1
    started: float = 0.0
    ended: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "PointRecord":
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def write_json_atomically(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` through a temporary file in the same folder. Keys
    keep their order: the order of a grid's axes is its layout (the first varies slowest)."""
    with atomic_output(path, "grid record") as tmp:
        tmp.write_text(json.dumps(data, indent=1, allow_nan=True) + "\n")


class GridFolder:
    """The output folder ``root`` of one grid (see the module docstring)."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root).expanduser().resolve()
        self.points_dir = self.root / "points"

    # ------------------------------------------------------------------ paths
    @property
    def grid_file(self) -> Path:
        return self.root / "grid.json"

    def netcdf(self, point_id: str) -> Path:
        return self.points_dir / f"{point_id}.nc"

    def record_path(self, point_id: str) -> Path:
        return self.points_dir / f"{point_id}.json"

    # ------------------------------------------------------------------ the grid
    def exists(self) -> bool:
        return self.grid_file.is_file()

    def read_grid(self) -> dict[str, Any]:
        """The content of ``grid.json``.

        Raises:
            ConfigError: no grid here, or an unreadable file."""
        if not self.grid_file.is_file():
            raise ConfigError(f"{self.root}: not a grid output folder (no grid.json)")
        try:
            return json.loads(self.grid_file.read_text())
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{self.grid_file}: cannot read it ({exc})") from None

    def create(self, grid: dict[str, Any], *, force: bool = False) -> None:
        """Make the folder for ``grid`` (``grid.json`` content), removing an earlier grid's
        points when ``force``."""
        if force and self.points_dir.exists():
            shutil.rmtree(self.points_dir)
            for name in ("grid.nc", "grid.png"):
                (self.root / name).unlink(missing_ok=True)
        self.points_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomically(self.grid_file, grid)

    # ------------------------------------------------------------------ records
    def write_record(self, record: PointRecord) -> None:
        self.points_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomically(self.record_path(record.id), record.to_dict())

    def records(self) -> dict[int, PointRecord]:
        """Every readable record, by point index (a record being replaced is read whole: the
        rename is atomic)."""
        out = {}
        if not self.points_dir.is_dir():
            return out
        for path in sorted(self.points_dir.glob("p*.json")):
            try:
                record = PointRecord.from_dict(json.loads(path.read_text()))
            except (OSError, ValueError, TypeError):
                continue  # not ours, or vanished meanwhile: the point counts as pending
            out[record.index] = record
        return out

    def forget(self, point_id: str) -> None:
        """Remove a point's record and file (to run it again)."""
        self.record_path(point_id).unlink(missing_ok=True)
        self.netcdf(point_id).unlink(missing_ok=True)

    def summary(self) -> dict[str, Any]:
        """``{"done", "failed", "pending", "programs": {"compiled", "loaded", "reused"},
        "failures": [{"point", "id", "values", "message"}]}`` (the JSON of `aragog grid status`)."""
        grid = self.read_grid()
        n = len(grid["points"])
        records = self.records()
        done = sum(r.status == "done" for r in records.values())
        failed = [r for r in sorted(records.values(), key=lambda r: r.index) if r.status == "failed"]
        programs = {"compiled": 0, "loaded": 0, "reused": 0}
        for r in records.values():
            for k in programs:
                programs[k] += int(r.compile.get(k, 0))
        return {"grid": str(self.root), "spec_hash": grid.get("spec_hash"), "points": n, "done": done,
                "failed": len(failed), "pending": n - done - len(failed), "programs": programs,
                "failures": [{"point": r.index, "id": r.id, "values": r.values, "message": r.message}
                             for r in failed]}
