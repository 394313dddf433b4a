#!/usr/bin/env bash
# The main job: set up (if needed), generate the bundled EOS tables, check the demo config.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
.venv/bin/aragog eos generate out/eos-default
.venv/bin/aragog eos check out/eos-default
.venv/bin/aragog validate input/earth.toml
