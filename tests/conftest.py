"""Shared fixtures: paths of the repository, its demo configs and the reference data."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
INPUT = REPO / "input"
# Third-party reference tables live beside the project, never inside it (shared/data/README.md).
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture
def earth_config() -> Path:
    return INPUT / "earth.toml"


@pytest.fixture
def rtmelt_dir() -> Path:
    path = SHARED_DATA / "spider-RTmelt"
    if not path.is_dir():
        pytest.skip(f"reference table set not available at {path}")
    return path
