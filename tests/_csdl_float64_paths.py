"""Build and run a compressed model through the public ``aragog.csdl`` API in this process,
as a user does (JAX's x64 mode off), and print what came back as JSON.

Used by tests/test_csdl_float64.py, which starts it in a fresh process without
``JAX_ENABLE_X64``. The model is a chain of layers ``h <- tanh(0.9 h + 0.1) + 0.05 sin h``
on 8 values in two blocks of ``LAYERS`` layers, ``y = sum(h)``, with a NumPy float64
reference (``d y / d x`` is the product of the layers' diagonal derivatives). Paths: both
compile modes (``compile_separately`` True and False), the second block sharing the first
one's compiled functions (automatically, and by ``find_repeats``); inline recording with a
recorded derivative; ``PySimulator``; ``JaxSimulator`` (``loop=True`` totals, and a
``loop=False`` Jacobian, whose host callback runs under ``vmap``); ``BlockSimulator``
(``run``, ``compute_totals``, ``call`` with NumPy arrays). The caller's own JAX code and
settings are recorded before and after. JAX's warning about a float64 request it truncates
to float32 is an error here.
"""

from __future__ import annotations

import json
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np

warnings.filterwarnings("error", message="Explicitly requested dtype")

LAYERS = 10
X0 = np.linspace(-0.7, 0.9, 8)
X1 = np.linspace(0.8, -0.4, 8)


def callers_jax() -> dict:
    return {"x64": bool(jax.config.jax_enable_x64), "dtype": str(jnp.arange(3.0).dtype),
            "async_dispatch": bool(jax.config.read("jax_cpu_enable_async_dispatch"))}


def reference(x, n_layers: int):
    """NumPy float64: y = sum(h_N) and dy/dx (shape (1, size))."""
    h, g = np.array(x, dtype=np.float64), np.ones(len(x))
    for _ in range(n_layers):
        t = np.tanh(0.9 * h + 0.1)
        g = g * (0.9 * (1.0 - t * t) + 0.05 * np.cos(h))
        h = t + 0.05 * np.sin(h)
    return float(np.sum(h)), g[None, :]


def layers(csdl, h, n):
    for _ in range(n):
        h = csdl.tanh(0.9 * h + 0.1) + 0.05 * csdl.sin(h)
    return h


res: dict = {"before": callers_jax()}
from aragog import csdl  # noqa: E402

res["imported"] = callers_jax()


def rel(got, want) -> float:
    got, want = np.asarray(got), np.asarray(want)
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


def check(out: dict, name: str, value, want) -> None:
    """Record the relative error of a value handed back, and its type and dtype."""
    out[name] = {"err": rel(value, want), "type": type(value).__name__, "dtype": str(np.asarray(value).dtype)}


def model(separate: bool, repeats: bool):
    """The inline-recorded chain, compressed; returns (recorder, x, y, d y/d x, ops)."""
    rec = csdl.Recorder(inline=True)
    with rec:
        x = csdl.Variable(value=X0, name="x")
        h1 = layers(csdl, x, LAYERS)
        h2 = layers(csdl, h1, LAYERS)
        if repeats:
            first = csdl.compress([x], [h1], name="block", compile_separately=separate, find_repeats=True)
            ops = [first, *first.repeats]
        else:
            ops = [csdl.compress([h_in], [h_out], name="block", compile_separately=separate)
                   for h_in, h_out in ((x, h1), (h1, h2))]
        y = csdl.sum(h2)
        d = csdl.derivative(y, x)  # recorded, evaluated inline
    return rec, x, y, d, ops


y0, g0 = reference(X0, 2 * LAYERS)
y1, g1 = reference(X1, 2 * LAYERS)
for separate in (True, False):
    for repeats in (False, True):
        out: dict = {}
        rec, x, y, d, ops = model(separate, repeats)
        out["shared"] = len(ops) == 2 and ops[1].shared_from is ops[0] and ops[1].region is ops[0].region
        check(out, "inline_y", y.value, y0)
        check(out, "inline_dydx", d.value, g0)

        py = csdl.PySimulator(rec)
        py[x] = X1
        py.run()
        check(out, "py_y", py[y], y1)
        check(out, "py_dydx", py[d], g1)

        jx = csdl.JaxSimulator(rec, [x], [y])
        jx[x] = X0
        jx.run()
        check(out, "jax_y", jx[y], y0)
        check(out, "jax_totals", jx.compute_totals()[(y, x)], g0)
        jv = csdl.JaxSimulator(rec, [x], [y], loop=False)  # the Jacobian's rows under vmap
        check(out, "jax_loop_false_totals", jv.compute_totals()[(y, x)], g0)

        bs = csdl.BlockSimulator(rec, [x], [y])
        bs[x] = X1
        bs.run()
        check(out, "block_y", bs[y], y1)
        check(out, "block_totals", bs.compute_totals()[(y, x)], g1)
        check(out, "block_call", bs.call(X0)[0], y0)
        res[f"separate={separate}, find_repeats={repeats}"] = out

res["after"] = callers_jax()
print(json.dumps(res))
sys.exit(0)
