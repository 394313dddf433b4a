#!/usr/bin/env bash
# The test suite: set up (if needed), then the default pytest run (slow and gpu tests
# are deselected; pass e.g. `-m slow` to run those). Tests run in parallel on the
# machine's cores (pytest-xdist; most of their time is XLA compiling, one core each), a
# module's tests on one worker (--dist loadscope), so that what a module builds once (its
# module fixtures, the programs its tests jit) is built once per run, not once per worker.
# Extra arguments go to pytest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
exec .venv/bin/python -m pytest -n auto --dist loadscope "$@"
