#!/usr/bin/env bash
# Install what aragog needs, only what is missing, and nothing at run time:
#   1. SUNDIALS (its CVODE shared library, called through ctypes) from the system
#      package manager;
#   2. a virtual environment in .venv;
#   3. the package itself, editable, with its test extras.
# Idempotent: a second call with nothing missing takes about a second.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

log() { printf '[setup] %s\n' "$*" >&2; }

# ---- 1. system packages --------------------------------------------------------------
need_apt=()
[ -f /usr/include/cvode/cvode.h ] || need_apt+=(libsundials-dev)
if [ ${#need_apt[@]} -gt 0 ]; then
    if ! command -v apt-get >/dev/null 2>&1; then
        log "missing system packages (${need_apt[*]}) and no apt-get: install SUNDIALS 6.x development files by hand"
        exit 1
    fi
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    log "installing system packages: ${need_apt[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# ---- 2. virtual environment ------------------------------------------------------------
py="${PYTHON:-}"
if [ -z "$py" ]; then
    for cand in python3.11 python3 python; do
        if command -v "$cand" >/dev/null 2>&1; then py="$cand"; break; fi
    done
fi
if [ ! -x .venv/bin/python ]; then
    log "creating .venv with $("$py" --version 2>&1)"
    "$py" -m venv .venv
    .venv/bin/python -m pip install -q --upgrade pip
fi

# ---- 3. the package ---------------------------------------------------------------------
# Reinstall when pyproject.toml changed since the last install (stamp holds its hash).
stamp=.venv/.aragog-installed
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || ! .venv/bin/python -c "import aragog, jax, netCDF4" 2>/dev/null; then
    log "installing aragog and its dependencies into .venv (first time: a few minutes)"
    .venv/bin/python -m pip install -q -e ".[test]" 2>&1 | grep -v -E "^WARNING: Location|^\s*$" >&2 || true
    .venv/bin/python -c "import aragog, jax, netCDF4" || { log "installation failed"; exit 1; }
    echo "$want" > "$stamp"
fi
.venv/bin/python -c "from aragog.solver.backends._sundials import load_library; load_library()" \
    || { log "the SUNDIALS CVODE library (libsundials-dev) does not load"; exit 1; }
