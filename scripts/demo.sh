#!/usr/bin/env bash
# The main job: set up (if needed), then run the demo (input/earth.toml: an Earth-size
# magma ocean on the MgSiO3 tables, cooling until it is solid; log-spaced output times)
# and write out/earth.nc and out/earth.png. The first run generates and caches the tables
# and compiles the programs; a second run loads both.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
mkdir -p out
.venv/bin/aragog validate input/earth.toml
.venv/bin/aragog run input/earth.toml --out out/earth.nc --plot "$@"
