"""The planet config most tests load.

``TOY_EARTH`` (tests/earth_toy.toml) is the demo's Earth-size planet on the bundled toy EOS
model (constant density, heat capacity and expansivity) with linear output times: what
input/earth.toml was before the demo moved to the generated MgSiO3 tables (issue 36).
Tests load it for the toy model's speed and for the numbers they were written against; a
test whose subject is the demo config itself loads input/earth.toml.
"""

from __future__ import annotations

from pathlib import Path

TOY_EARTH = Path(__file__).resolve().with_name("earth_toy.toml")
