"""Using aragog leaves the caller's JAX configuration as it was (docs/design.md, "No global
side effects"), and aragog's own results are float64 all the same.

One fresh process (``tests/_x64_paths.py``) starts with JAX's default x64 mode (off), uses
JAX itself, then runs aragog's public paths with aragog's persistent cache on (JAX's own
cache settings must stay JAX's defaults): a native solve, reset and solve again, blocks
mode, ``check_inputs`` (the right-hand-side probe), ``EntropyEOS`` queries and PROTEUS's
coupled-call sequence through the upstream adapters. It runs them again inside
``jax.enable_x64(True)``, where no value can be float32. The two passes must agree to
1e-12 relative: the same compiled programs on the same float64 inputs give the same bits
(the margin only absorbs a different summation order, should XLA ever choose one); an
input made in float32 by a missed entry point would differ at about 1e-7.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RTOL = 1e-12


def _close(a, b, where: str) -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            _close(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{where}[{i}]")
    elif isinstance(a, float):
        assert math.isclose(a, b, rel_tol=RTOL, abs_tol=0.0), (where, a, b)
    else:
        assert a == b, (where, a, b)


def test_callers_jax_config_is_untouched_and_results_are_float64(tmp_path):
    # aragog's persistent cache on (the suite's shared store, tests/conftest.py): it must not
    # turn on JAX's own
    assert os.environ["ARAGOG_JAX_CACHE_DIR"] != "none"
    proc = subprocess.run([sys.executable, str(HERE / "_x64_paths.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res["off"]["stored"] and res["on"]["stored"]  # the store was used
    default = {"x64": False, "dtype": "float32", "cache_dir": None, "min_compile_s": 1.0, "cache_max_size": -1}
    # The caller's own JAX code sees JAX's defaults before, between and after aragog's work:
    # float32, and no persistent cache of JAX's own.
    assert res["before"] == res["during"] == res["after"] == default
    # The caller used JAX first, so its CPU backend had started: aragog left the dispatch
    # setting as it was (aragog._jax sets it only before the backends start).
    assert res["async_dispatch"] is True
    off, on = res["off"], res["on"]
    assert off["fused"]["status"] == 0 and off["fused"]["dtype"] == "float64"
    assert off["proteus"]["ok"] and len(off["proteus"]["T_magma"]) > 1
    _close(off, on, "results")
