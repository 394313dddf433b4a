"""Fixtures of the PROTEUS-compatibility tests: the generated inputs and the in-process runs.

Each (mode, backend, structure) sequence runs once per session against THIS package and is shared by
``test_proteus_sequence.py`` and ``test_upstream_parity.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import _tables  # noqa: E402
import proteus_sequence  # noqa: E402


@pytest.fixture(scope="session")
def sequence_inputs(tmp_path_factory) -> dict:
    """P-S tables, PROTEUS's P-T lookup directory and melting curves (written by this package)."""
    return _tables.prepare(tmp_path_factory.mktemp("proteus_inputs"))


class _Runs:
    """Lazily run and cache ``proteus_sequence.run_sequence`` per (mode, backend)."""

    def __init__(self, inputs, tmp_path_factory):
        self.inputs = inputs
        self.tmp = tmp_path_factory
        self.cache: dict = {}

    def get(self, mode: str, backend: str, structure: str = "dummy"):
        key = (mode, backend, structure)
        if key not in self.cache:
            try:
                record, solver = proteus_sequence.run_sequence(
                    mode=mode, backend=backend, structure=structure,
                    workdir=self.tmp.mktemp(f"seq_{mode}_{backend}_{structure}"),
                    return_solver=True, **self.inputs)
                self.cache[key] = (record, solver, None)
            except proteus_sequence.SequenceError as exc:
                self.cache[key] = (None, None, exc)
        record, solver, exc = self.cache[key]
        if exc is not None:
            raise AssertionError(f"the PROTEUS sequence ({mode}, {backend}, {structure}) failed at {exc}\n"
                                 + exc.__cause__.__class__.__name__ + ": " + str(exc.__cause__)) from exc
        return record, solver


@pytest.fixture(scope="session")
def sequence_runs(sequence_inputs, tmp_path_factory) -> _Runs:
    return _Runs(sequence_inputs, tmp_path_factory)
