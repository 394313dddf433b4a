"""The integrator registry: one ``BACKENDS`` mapping behind ``integrate``, the configuration's
``solver.method`` choices and the solver's method names; ``aragog.solver.backends`` imports
without JAX and ``aragog.config`` without the solver."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from aragog.config import SCHEMA
from aragog.integrator_names import CONFIG_METHODS, INTEGRATORS
from aragog.solver import backends
from aragog.solver.backends import BACKENDS, METHODS, Backend, IntegrationResult, OdeProblem, integrate
from aragog.solver.backends import BandConverter, band_to_dense, dense_to_band

BACKENDS_DIR = Path(backends.__file__).parent


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_import_backends_does_not_load_jax():
    assert _run("import sys, aragog.solver.backends; print('jax' in sys.modules)") == "False"


def test_import_config_does_not_load_the_solver():
    # the schema's choices come from aragog.integrator_names, not from the solver
    code = ("import sys, aragog.config; "
            "print(sorted(m for m in ('numpy', 'jax', 'aragog.solver') if m in sys.modules))")
    assert _run(code) == "[]"


def _imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


# the back ends' modules and the band storage they import from aragog.programs
@pytest.mark.parametrize("path", sorted(BACKENDS_DIR.glob("*.py")) + [BACKENDS_DIR.parents[1] / "programs" / "_band.py"],
                         ids=lambda p: p.name)
def test_backend_modules_import_no_jax(path: Path):
    jaxy = {m for m in _imported_modules(path)
            if m.split(".")[0] == "jax" or m in ("aragog._jax", "aragog.programs._jacobian", "aragog.jax")}
    assert not jaxy, f"{path.name} imports {sorted(jaxy)}"


def test_names_are_one_table():
    assert list(BACKENDS) == list(INTEGRATORS) == ["cvode", "scipy-bdf", "scipy-radau"]
    assert SCHEMA["solver"]["method"].choices == CONFIG_METHODS == ("cvode", "bdf", "radau")
    for short in CONFIG_METHODS:
        assert METHODS[short] in BACKENDS
    # exactly the accepted names (and order, which the error message lists) of before
    assert list(METHODS.items()) == [
        ("cvode", "cvode"), ("scipy-bdf", "scipy-bdf"), ("bdf", "scipy-bdf"),
        ("scipy-radau", "scipy-radau"), ("radau", "scipy-radau"),
    ]


def test_every_backend_has_the_protocol_signature():
    want = inspect.signature(Backend.__call__)
    want_kw = [p.name for p in want.parameters.values() if p.kind is p.KEYWORD_ONLY]
    want_pos = [p.name for p in want.parameters.values() if p.kind is p.POSITIONAL_OR_KEYWORD][1:]  # no self
    for name, backend in BACKENDS.items():
        params = inspect.signature(backend).parameters.values()
        assert [p.name for p in params if p.kind is p.KEYWORD_ONLY] == want_kw, name
        assert [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD] == want_pos, name


@pytest.mark.parametrize("method", [None, 3, "rk45", "scipy-rk45", ""])
def test_unknown_method_error_unchanged(method):
    problem = OdeProblem.from_functions(lambda t, y: -y, None, 2)
    text = f"integrate: unknown method {method!r} (choose from cvode, scipy-bdf, bdf, scipy-radau, radau)"
    with pytest.raises(ValueError) as info:
        integrate(problem, [0.0, 1.0], np.ones(2), method=method)
    assert str(info.value) == text


def _recorder(calls: list):
    def backend(problem, t_eval, y0, **options):
        calls.append(options)
        return IntegrationResult(np.asarray(t_eval), np.tile(y0, (len(t_eval), 1)), 0, "ok", None,
                                 0, 0, 0, "recorded", 0.0, {})

    return backend


@pytest.mark.parametrize("method, name", list(METHODS.items()) + [("BDF", "scipy-bdf")])
def test_integrate_dispatches_through_backends(monkeypatch, method, name):
    monkeypatch.setattr(backends, "cvode_available", lambda: True)
    calls: list = []
    monkeypatch.setitem(BACKENDS, name, _recorder(calls))
    problem = OdeProblem.from_functions(lambda t, y: -y, None, 2)
    res = integrate(problem, [0.0, 1.0], np.ones(2), method=method, rtol=1e-7, nonlin_conv_coef=0.01)
    assert res.integrator == "recorded"
    assert calls == [dict(rtol=1e-7, atol=1e-9, max_steps=5000, event=None, linsolver="band",
                          first_step=None, max_step=None, nonlin_conv_coef=0.01, newton_check=None,
                          warm=None, trace=False, newton="auto", max_step_growth=None)]


def test_cvode_fallback_goes_through_backends(monkeypatch):
    monkeypatch.setattr(backends, "cvode_available", lambda: False)
    calls: list = []
    monkeypatch.setitem(BACKENDS, "scipy-bdf", _recorder(calls))
    problem = OdeProblem.from_functions(lambda t, y: -y, None, 2)
    with pytest.warns(backends.IntegratorFallbackWarning):
        integrate(problem, [0.0, 1.0], np.ones(2), method="cvode")
    assert len(calls) == 1


def test_band_storage_has_one_copy_and_round_trips():
    """aragog.programs._jacobian re-exports the back ends' NumPy band helpers (one copy);
    dense -> band -> dense keeps the band and zeroes the rest."""
    from aragog.programs import _jacobian as jacobian  # private: the module whose band helpers must be _band's
    from aragog.programs import _band as band  # private: the module defining them (its __all__)

    for name in band.__all__:
        assert getattr(jacobian, name) is getattr(band, name), name
    rng = np.random.default_rng(0)
    n, ml, mu = 7, 2, 1
    J = rng.standard_normal((n, n))
    band = dense_to_band(J, ml, mu)
    i, j = np.indices((n, n))
    np.testing.assert_array_equal(band_to_dense(band, ml, mu), np.where((i - j <= ml) & (j - i <= mu), J, 0.0))
    conv = BandConverter(n, ml, mu)
    dense = conv.new_dense()
    conv.to_dense_into(band, dense)
    np.testing.assert_array_equal(dense, band_to_dense(band, ml, mu))
    back = conv.new_band()
    conv.to_band_into(dense, back)
    np.testing.assert_array_equal(back, band)
