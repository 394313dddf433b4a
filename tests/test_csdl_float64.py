"""``aragog.csdl`` computes in float64 in a user's process, where JAX's x64 mode is off, and
leaves that process's JAX settings as they were (docs/csdl.md, "float64").

One fresh process (tests/_csdl_float64_paths.py, started without ``JAX_ENABLE_X64``)
imports only ``aragog.csdl``, records a two-block chain through the public API and runs
it: both compile modes, the blocks sharing compiled functions (automatically and by
``find_repeats``), inline recording with a recorded derivative, ``PySimulator``,
``JaxSimulator`` (its host callbacks, under ``vmap`` too) and ``BlockSimulator``. The suite
itself no longer runs in x64 mode (tests/conftest.py), but a process of its own is the
state a user's script starts in: no test fixture, no earlier test's programs.

Tolerance 1e-12 relative: csdl and the NumPy reference evaluate the same float64 formula
(20 layers of tanh, sin and their derivatives), only with other implementations of the
elementary functions (XLA's and libm's, each within a few ulps), so they agree to about
20 layers x a few ulps ~ 1e-14 (measured: at most 4e-15); anything computed in float32
would differ by 1e-8 to 1e-6.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RTOL = 1e-12


def test_compressed_model_is_float64_with_x64_off_and_leaves_jax_settings_alone():
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    proc = subprocess.run([sys.executable, str(HERE / "_csdl_float64_paths.py")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    # The caller's own JAX: x64 off and float32 before, after importing csdl and after
    # everything; csdl sets no process setting (not even aragog's synchronous dispatch).
    default = {"x64": False, "dtype": "float32", "async_dispatch": True}
    assert res.pop("before") == res.pop("imported") == res.pop("after") == default
    assert len(res) == 4  # both compile modes, with and without find_repeats
    for case, out in res.items():
        assert out.pop("shared"), case  # the second block uses the first one's compiled functions
        assert len(out) == 10, case
        for path, got in out.items():
            where = f"{case}: {path}"
            assert got["err"] < RTOL, (where, got["err"])
            assert got["dtype"] == "float64", where
            # NumPy handed back (BlockSimulator.call: the device arrays it documents)
            assert got["type"] == ("ArrayImpl" if path == "block_call" else "ndarray") or \
                got["type"] == "float64", where
