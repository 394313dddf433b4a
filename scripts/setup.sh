#!/usr/bin/env bash
# Install what aragog needs, only what is missing, and nothing at run time:
#   1. SUNDIALS 6 (its CVODE shared library) from the system package manager, where apt-get
#      can be used (root, or password-less sudo); without it, the SUNDIALS 7 library of the
#      scikit-sundae wheel (a dependency) is used: no root needed;
#   2. a virtual environment in .venv;
#   3. the package itself, editable, with its test extras.
# Idempotent: a second call with nothing missing takes about a second.
# ARAGOG_NO_APT=1 skips step 1 (the wheel's library, as on a machine without root).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

log() { printf '[setup] %s\n' "$*" >&2; }

# ---- 1. system packages (optional) ---------------------------------------------------------
if [ ! -f /usr/include/cvode/cvode.h ] && [ "${ARAGOG_NO_APT:-0}" != "1" ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo -n"
    if command -v apt-get >/dev/null 2>&1 && { [ -z "$sudo" ] || sudo -n true 2>/dev/null; }; then
        log "installing system packages: libsundials-dev"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends libsundials-dev >/dev/null \
            || log "apt-get could not install libsundials-dev: the scikit-sundae wheel's SUNDIALS will be used"
    else
        log "no system SUNDIALS and no apt-get as root: the scikit-sundae wheel's SUNDIALS will be used"
    fi
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
    # pip byte-compiles what it installs one file after another (about 30 of a clean
    # install's 50 s on 2 cores); compileall does it on every core. The .pyc files must be
    # written here: with PYTHONDONTWRITEBYTECODE set, no process writes them later, and each
    # would compile jax, scipy and dask from source again (~2 s a process start). A file
    # that does not compile (a package's own test data) only costs its .pyc.
    .venv/bin/python -m pip install -q --no-compile -e ".[test]" 2>&1 | grep -v -E "^WARNING: Location|^\s*$" >&2 || true
    .venv/bin/python -m compileall -q -j 0 "$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
        src >/dev/null 2>&1 || true
    .venv/bin/python -c "import aragog, jax, netCDF4" || { log "installation failed"; exit 1; }
    echo "$want" > "$stamp"
fi
.venv/bin/python -c "from aragog.solver.backends._sundials import load_library; print('[setup] CVODE:', load_library().describe())" >&2 \
    || { log "no SUNDIALS CVODE library loads (neither the system's nor the scikit-sundae wheel's)"; exit 1; }
