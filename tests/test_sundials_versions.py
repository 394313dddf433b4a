"""The CVODE binding speaks SUNDIALS 6 and 7 (aragog/solver/backends/_sundials.py,
docs/solver.md "The CVODE library").

CI has Debian's SUNDIALS 6.4.1 (64-bit indices, installed by scripts/setup.sh) and the
scikit-sundae wheel's 7.9 (32-bit indices, a dependency). Each library runs in a process of
its own (``ARAGOG_SUNDIALS_CVODE``): two SUNDIALS builds never share one process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

# private: library_info, wheel_library, load_library (_candidates patched)
from aragog.solver.backends import _sundials as sundials
from _configs import TOY_EARTH

#: One stiff problem through every part of the binding that differs between the majors:
#: the context, the error handler, band matrix and linear solver (index type), the checked
#: Newton test (the solver's content), an event, and a failure's message.
_BINDING_SCRIPT = textwrap.dedent("""
    import json, numpy as np
    from aragog.solver.backends import integrate, _sundials
    from aragog.solver.backends._common import OdeProblem
    n, d = 12, 50.0
    A = d * (np.diag(-2.0 * np.ones(n)) + np.diag(np.ones(n - 1), 1) + np.diag(np.ones(n - 1), -1))
    def rhs(t, y, out): out[:] = A @ y + np.sin(t)
    def jac(t, y, out):
        out[0, 1:] = np.diag(A, 1); out[1, :] = np.diag(A); out[2, :-1] = np.diag(A, -1)
    problem = OdeProblem(rhs, jac, n, 1, 1)
    y0 = np.linspace(1.0, 2.0, n)
    ok = integrate(problem, np.linspace(0.0, 2.0, 5), y0, rtol=1e-10, atol=1e-12)
    ev = integrate(problem, [0.0, 2.0], y0, rtol=1e-8, atol=1e-10, event=lambda t, y: y[0] - 0.5)
    bad = integrate(problem, [0.0, 2.0], y0, rtol=1e-8, atol=1e-10, max_steps=3)
    print(json.dumps({"library": _sundials.library_info(), "y": ok.y.tolist(), "status": ok.status,
                      "t_event": ev.t_event, "ev_status": ev.status, "bad_status": bad.status,
                      "bad_message": bad.message}))
""")

#: A short evolution of the demo planet on the toy model (tests/earth_toy.toml, 30 nodes, 100 yr:
#: ~7000 steps, the global melt fraction from 1 to 0.86).
_SOLVE_SCRIPT = textwrap.dedent("""
    import json, sys, numpy as np
    from aragog import EntropySolver, load_config
    from aragog.solver.backends import _sundials
    over = {"mesh.number_of_nodes": 30, "solver.end_time": 100.0, "solver.output_points": 3,
            "solver.newton": "compiled"}
    s = EntropySolver(load_config(sys.argv[1], overrides=over))
    s.initialize(); s.solve()
    out = s.get_state()
    print(json.dumps({"library": _sundials.library_info(), "status": int(out.status),
                      "S": np.asarray(out.S_final).tolist(), "nsteps": int(out.nsteps),
                      "newton": s.integration_result.info["newton"]}))
""")


def _run(script: str, library: str | None, *args: str, store: Path | None = None) -> dict:
    """``script`` in a process of its own with ``library`` as its CVODE; ``store``: aragog's
    persistent store for the process (default: the suite's shared one, tests/conftest.py)."""
    env = {k: v for k, v in os.environ.items() if k != "ARAGOG_SUNDIALS_CVODE"}
    if library is not None:
        env["ARAGOG_SUNDIALS_CVODE"] = library
    if store is not None:
        env["ARAGOG_JAX_CACHE_DIR"] = str(store)
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "[ERROR]" not in done.stderr, done.stderr[-2000:]  # SUNDIALS prints nothing itself
    return json.loads(done.stdout.strip().splitlines()[-1])


def _libraries() -> dict[str, str]:
    """The loadable libraries by major: the default one and the wheel's."""
    found = {}
    info = sundials.library_info()
    if info["available"]:
        found[info["version"].split(".")[0]] = info["path"]
    wheel = sundials.wheel_library()
    if wheel:
        found.setdefault("7", wheel)
    return found


def test_library_info_names_what_loaded():
    info = sundials.library_info()
    if not info["available"]:
        pytest.skip(info["error"])
    assert info["version"].split(".")[0] in ("6", "7")
    assert info["index_bits"] in (32, 64)
    assert info["source"] in ("ARAGOG_SUNDIALS_CVODE", "system", "scikit-sundae wheel")


def test_the_wheel_provides_a_library():
    """A plain pip install has a CVODE without a system SUNDIALS: scikit-sundae's."""
    path = sundials.wheel_library()
    assert path is not None and "scikit_sundae.libs" in path


def test_a_library_that_is_not_cvode_is_refused_with_what_was_tried(monkeypatch):
    sundials.load_library.cache_clear()
    monkeypatch.setattr(sundials, "_candidates", lambda: [("libm.so.6", "system")])
    try:
        with pytest.raises(OSError, match=r"libm\.so\.6: .*pip install scikit-sundae"):
            sundials.load_library()
    finally:
        monkeypatch.undo()
        sundials.load_library.cache_clear()


def test_binding_agrees_between_sundials_6_and_7():
    """Same stiff problem through each major: the same answer to the tolerance (rtol 1e-10:
    the two are different builds, so not bitwise), the same event time to 1e-7, and a
    failure with CVODE's own message in both."""
    libs = _libraries()
    results = {major: _run(_BINDING_SCRIPT, path) for major, path in libs.items()}
    for major, r in results.items():
        assert r["library"]["version"].startswith(major + ".")
        assert r["status"] == 0 and r["ev_status"] == 1 and r["t_event"] is not None
        assert r["bad_status"] == -1 and "too many steps" in r["bad_message"], r["bad_message"]
    if len(results) < 2:
        pytest.skip(f"only SUNDIALS {', '.join(results)} here; compared with itself")
    a, b = results["6"], results["7"]
    np.testing.assert_allclose(a["y"], b["y"], rtol=1e-8, atol=1e-10)
    assert a["t_event"] == pytest.approx(b["t_event"], rel=1e-7)


def test_demo_planet_agrees_between_sundials_6_and_7():
    """100 yr of the demo planet (30 nodes) with each major: end entropy to 1e-7 relative
    (the integrators' tolerance is rtol 1e-8; the two builds take different steps). The
    second process loads the first one's compiled programs from the suite's shared store
    (tests/conftest.py): XLA's programs do not depend on the CVODE library, so only the
    integration differs. Both solve each step's corrector in one compiled call (the
    nonlinear solver of aragog's own, whose place in SUNDIALS' operations table differs
    between 6.4 and 7.9), in nearly the same steps (within 2 %)."""
    libs = _libraries()
    if len(libs) < 2:
        pytest.skip(f"only SUNDIALS {', '.join(libs)} here")
    config = str(TOY_EARTH)
    a, b = (_run(_SOLVE_SCRIPT, libs[m], config) for m in ("6", "7"))
    assert a["status"] == 0 and b["status"] == 0
    assert a["newton"] == b["newton"] == "compiled"
    assert abs(a["nsteps"] - b["nsteps"]) <= 0.02 * a["nsteps"]
    np.testing.assert_allclose(a["S"], b["S"], rtol=1e-7)
