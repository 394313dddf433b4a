"""aragog.csdl._compress (basic form): a region replaced by one JaxCompressedOperation.

Compressed and uncompressed graphs evaluate the same float64 operations, in the same
order, so values agree to rounding (rtol 1e-12); derivatives are compared with
jax.grad / jax.hessian of the same model in plain JAX (rtol 1e-10)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aragog import csdl
from conftest import in_x64

RTOL, ATOL = 1e-10, 1e-12
X0 = np.array([0.1, -0.2, 0.3])
P0 = 0.7


def layers(h, p, n):
    for _ in range(n):
        h = csdl.tanh(0.9 * h * p + 0.1) + 0.05 * csdl.sin(h)
    return h


def model_jax(x, p):
    h = x
    for _ in range(6):
        h = jnp.tanh(0.9 * h * p + 0.1) + 0.05 * jnp.sin(h)
    h = h + jnp.exp(-h) * jnp.sum(h)  # the jax_function part below
    return jnp.sum(h * h) + jnp.sum(h * x)


# the plain-JAX reference in float64; csdl is called without x64, as a user's process runs it
REF = in_x64(jax.jit(lambda x, p: (model_jax(x, p), jax.grad(model_jax)(x, p)[None],
                                   jax.grad(model_jax, 1)(x, p).reshape(1, 1), jax.hessian(model_jax)(x, p))))


def build(compress, sep=True, nested=False):
    """x -> 3 layers -> [nested: 3 layers compressed first] -> jax_function -> y.
    p is a parameter never passed to compress."""
    rec = csdl.Recorder(inline=True)
    with rec:
        x = csdl.Variable(value=X0, name="x")
        p = csdl.Variable(value=P0, name="p")
        h1 = layers(x, p, 3)
        h2 = layers(h1, p, 3)
        if nested and compress:
            csdl.compress([h1], [h2], name="inner", compile_separately=sep)
        h3 = csdl.jax_function(lambda h: h + jnp.exp(-h) * jnp.sum(h), h2, name="tail")
        op = csdl.compress([x], [h3], name="outer", compile_separately=sep) if compress else None
        y = csdl.sum(h3 * h3) + csdl.sum(h3 * x)
    return rec, x, p, y, op


@pytest.mark.parametrize("loop,sep,nested", [
    (True, True, False), (True, False, False), (False, True, False), (False, False, False),
    (True, True, True), (False, False, True),
])
def test_compressed_matches_uncompressed(loop, sep, nested):
    y_plain = build(False)[3].value
    rec, x, p, y, op = build(True, sep, nested)
    np.testing.assert_allclose(y.value, y_plain, rtol=1e-12)
    assert sum(isinstance(n, csdl.JaxCompressedOperation) for n in rec.nodes) == 1
    assert p not in op.inputs[:1] and len(op.extra_inputs) >= 1  # p's broadcasts read at run time
    with rec:
        g = csdl.derivative(y, [x, p], loop=loop)
        H = csdl.derivative(g[(y, x)], x, loop=loop)
    ref = REF(X0, P0)
    for got, want in [(y, ref[0]), (g[(y, x)], ref[1]), (g[(y, p)], ref[2]), (H, ref[3])]:
        np.testing.assert_allclose(got.value, want, rtol=RTOL, atol=ATOL)  # inline

    py = csdl.PySimulator(rec)
    jx = csdl.JaxSimulator(rec, [x], [y, g[(y, x)], g[(y, p)], H], loop=loop)
    p1 = 0.55
    for sim in (py, jx):
        sim[p] = p1  # changing the parameter changes the result: nothing frozen
        sim.run()
    ref = REF(X0, p1)
    for k, var in enumerate([y, g[(y, x)], g[(y, p)], H]):
        np.testing.assert_allclose(py[var], ref[k], rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(jx[var], ref[k], rtol=RTOL, atol=ATOL)
    assert ("pure_callback" in str(jx.jaxpr())) == sep

    js = csdl.JaxSimulator(rec, [x], [y], loop=loop)  # totals: first derivatives only
    for k, xv in enumerate([X0, 2 * X0]):
        js[x] = xv
        js.run()
        tot = js.compute_totals()
        np.testing.assert_allclose(js[y], REF(xv, p1)[0], rtol=RTOL)
        np.testing.assert_allclose(tot[(y, x)], REF(xv, p1)[1], rtol=RTOL, atol=ATOL)
    assert js.trace_count == 2  # forward + totals programs, never retraced


def test_separate_block_under_vmap_is_one_host_call():
    with csdl.Recorder() as rec:
        x = csdl.Variable(value=np.linspace(0.1, 0.5, 5), name="x")
        h = layers(x, 1.0, 2)
        op = csdl.compress([x], [h], name="blk")
        J = csdl.derivative(h, x, loop=False)  # vmapped over 5 rows
    sim = csdl.JaxSimulator(rec, [x], [J])
    sim.run()
    back = op.region.vjp_region((0,), (0,))
    assert back.host_calls == 1  # one batched call, not one per row
    f = lambda x_: layers_jax(x_, 2)  # noqa: E731
    np.testing.assert_allclose(sim[J], in_x64(jax.jacfwd(f))(x.value), rtol=RTOL, atol=ATOL)


def layers_jax(h, n):
    for _ in range(n):
        h = jnp.tanh(0.9 * h + 0.1) + 0.05 * jnp.sin(h)
    return h


def _small():
    rec = csdl.Recorder()
    rec.start()
    x = csdl.Variable(value=[0.1, 0.2], name="x")
    q = csdl.Variable(value=[1.0, 2.0], name="q")
    a = csdl.sin(x)
    b = a * q
    c = csdl.exp(b)
    return rec, x, q, a, b, c


def test_intermediates_options():
    rec, x, q, a, b, c = _small()
    d = a + 1.0  # a escapes
    n = len(rec.nodes)
    with pytest.raises(ValueError, match="intermediates='used'"):
        csdl.compress([x], [c])
    assert len(rec.nodes) == n and a.op.name == "sin"  # untouched
    op = csdl.compress([x], [c], intermediates="used")
    assert op.extra_outputs == [a] and a.op is op and c.op is op and op.extra_inputs == [q]
    sim = csdl.PySimulator(rec)
    sim.run()
    np.testing.assert_allclose(sim[d], np.sin([0.1, 0.2]) + 1.0)
    rec.stop()

    rec, x, q, a, b, c = _small()
    op = csdl.compress([x], [c], intermediates="all")
    assert op.extra_outputs == [a, b]
    rec.stop()


def test_validation_errors_leave_graph_untouched():
    rec, x, q, a, b, c = _small()
    n = len(rec.nodes)
    z = csdl.Variable(value=1.0, name="z")
    cases = [
        (dict(inputs=[x], outputs=[c], intermediates="some"), ValueError, "intermediates='some'"),
        (dict(inputs=[x], outputs=[c], device="tpu9"), ValueError, "unknown device"),
        (dict(inputs=[x], outputs=[c], share_with=object()), TypeError, "not a compressed operation"),
        (dict(inputs=[x], outputs=[c], jit_kwargs={"bogus": 1}), ValueError, "jit_kwargs"),
        (dict(inputs=[z], outputs=[c]), ValueError, "do not affect"),
        (dict(inputs=[x, a], outputs=[c]), ValueError, "depends on another input"),
    ]
    for kwargs, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            csdl.compress(**kwargs)
        assert len(rec.nodes) == n and c.op.name == "exp" and b.op.name == "mul"
    rec.stop()


def test_compressed_op_is_topologically_placed():
    """A parameter computed *after* part of the region must still come first."""
    with csdl.Recorder(inline=True) as rec:
        x = csdl.Variable(value=[0.3, 0.4], name="x")
        a = csdl.sin(x)
        k = csdl.Variable(value=2.0, name="k")
        kk = csdl.exp(k)  # recorded between region ops
        c = a * kk
        op = csdl.compress([x], [c])
        y = csdl.sum(c)
    pos = {id(o): i for i, o in enumerate(rec.nodes)}
    assert pos[id(kk.op)] < pos[id(op)] < pos[id(y.op)]
    sim = csdl.JaxSimulator(rec, [x, k], [y])
    sim.run()
    np.testing.assert_allclose(sim[y], np.sum(np.sin([0.3, 0.4])) * np.exp(2.0))


def test_separate_block_compiles_once_inline_and_in_simulator():
    with csdl.Recorder(inline=True) as rec:
        x = csdl.Variable(value=[0.2, 0.4], name="x")
        h = layers(x, 1.0, 2)
        op = csdl.compress([x], [h], name="blk")
        y = csdl.sum(h)
    sim = csdl.JaxSimulator(rec, [x], [y])
    for xv in ([0.2, 0.4], [0.5, 0.1]):
        sim[x] = xv
        sim.run()
    py = csdl.PySimulator(rec)
    py.run()
    # inline, PySimulator and the host callback share one compiled function
    assert op.region.compile_count == 1
    assert op.region.host_calls == 2
    np.testing.assert_allclose(py[y], np.sum(in_x64(layers_jax)(np.array([0.5, 0.1]), 2)), rtol=RTOL)


#: what csdl may import from the rest of aragog: the compile service and the float64 helper,
#: which import only JAX and set nothing
COMPILE_SERVICE = ("._compiling", "._executable_store", "._float64")


def test_csdl_imports_nothing_else_from_aragog():
    import pathlib
    import re

    root = pathlib.Path(csdl.__file__).parent
    for path in root.rglob("*.py"):
        pattern = r"^\s*(?:from|import)\s+aragog(\.\w+)?(?:\s+import\s+(\w+))?"
        for m in re.finditer(pattern, path.read_text(), re.M):
            names = (m.group(1), "." + str(m.group(2)))
            assert ".csdl" in names or any(n in COMPILE_SERVICE for n in names), f"{path}: {m.group(0)!r}"
    for path in (root.parent / "_compiling.py", root.parent / "_executable_store.py", root.parent / "_float64.py"):
        assert not re.search(r"^\s*(?:from|import)\s+aragog\.(?!_compiling|_executable_store)", path.read_text(),
                             re.M), f"{path} imports more than JAX and the compile service"


def test_jit_kwargs_are_used_and_inherited_by_derivatives():
    with csdl.Recorder(inline=True):
        x = csdl.Variable(value=[0.2, 0.4], name="x")
        h = layers(x, 1.0, 1)
        op = csdl.compress([x], [h], jit_kwargs={"keep_unused": True})
        d = csdl.derivative(csdl.sum(h), x)
    assert op.region.jit_kwargs == {"keep_unused": True}
    assert op.region.vjp_region((0,), (0,)).jit_kwargs == {"keep_unused": True}
    ref = in_x64(jax.grad(lambda v: jnp.sum(layers_jax(v, 1))))(x.value)[None]
    np.testing.assert_allclose(d.value, ref, rtol=RTOL)
