#!/usr/bin/env bash
# The main job: set up (if needed), then run the demo (input/earth.toml: an Earth-size
# magma ocean cooling until it is largely solid) and write out/earth.nc and out/earth.png.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
mkdir -p out
.venv/bin/aragog validate input/earth.toml
# log-spaced output times: the figure's time axes then show every decade of the evolution
.venv/bin/aragog run input/earth.toml --out out/earth.nc --plot --set solver.output_spacing=log "$@"
