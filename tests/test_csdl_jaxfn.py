"""aragog.csdl JAX-function operation: any pure JAX function recorded as one operation,
differentiable (its VJP is another such operation) to second order.

Tolerance: same float64 arithmetic on both sides up to operation order (rtol 1e-10)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aragog import csdl
from conftest import in_x64

RTOL, ATOL = 1e-10, 1e-12


def physics(a, b):
    """Two outputs of different shapes, mixing both inputs."""
    return jnp.tanh(a) * jnp.sum(b**2), jnp.cumsum(a) @ jnp.sin(b[:3])


def whole(a, b):
    """The recorded model below, in plain JAX."""
    u, w = physics(a, b)
    return jnp.sum(u * a) + w**2


A0 = np.array([0.3, -0.2, 0.5])
B0 = np.array([0.1, 0.7, -0.4, 0.9])


def build(inline):
    rec = csdl.Recorder(inline=inline)
    with rec:
        a = csdl.Variable(value=A0, name="a")
        b = csdl.Variable(value=B0, name="b")
        u, w = csdl.jax_function(physics, a, b)
        out = csdl.sum(u * a) + w**2
    return rec, a, b, u, w, out


def test_values_and_shapes():
    rec, a, b, u, w, out = build(inline=True)
    assert u.shape == (3,) and w.shape == ()
    np.testing.assert_allclose(out.value, in_x64(whole)(A0, B0), rtol=RTOL)
    single = None
    with rec:
        single = csdl.jax_function(lambda x: 2.0 * x, a)
    assert isinstance(single, csdl.Variable) and single.shape == (3,)
    np.testing.assert_allclose(single.value, 2.0 * A0)


@pytest.mark.parametrize("loop", [True, False])
def test_first_and_second_derivatives(loop):
    rec, a, b, u, w, out = build(inline=False)
    with rec:
        g = csdl.derivative(out, [a, b], loop=loop)
        h_ab = csdl.derivative(g[(out, a)], b, loop=loop)
        h_aa = csdl.derivative(g[(out, a)], a, loop=loop)
    py = csdl.PySimulator(rec)
    py.run()
    jx = csdl.JaxSimulator(rec, [a, b], [g[(out, a)], g[(out, b)], h_ab, h_aa])
    jx.run()
    refs = in_x64(jax.jit(lambda a_, b_: {
        "a": jax.grad(whole, 0)(a_, b_)[None], "b": jax.grad(whole, 1)(a_, b_)[None],
        "ab": jax.jacfwd(jax.grad(whole, 0), 1)(a_, b_), "aa": jax.hessian(whole)(a_, b_),
    }))(A0, B0)
    for var, key in [(g[(out, a)], "a"), (g[(out, b)], "b"), (h_ab, "ab"), (h_aa, "aa")]:
        np.testing.assert_allclose(py[var], refs[key], rtol=RTOL, atol=ATOL, err_msg=key)
        np.testing.assert_allclose(jx[var], refs[key], rtol=RTOL, atol=ATOL, err_msg=key)


def test_vjp_is_a_jax_function_operation():
    rec, a, b, u, w, out = build(inline=False)
    n = len(rec.nodes)
    with rec:
        csdl.derivative(w, a)
    vjp_ops = [op for op in rec.nodes[n:] if isinstance(op, csdl.JaxFunctionOperation)]
    assert len(vjp_ops) == 1 and vjp_ops[0].label == "vjp(physics)"


def test_shape_error_is_reported():
    with csdl.Recorder():
        a = csdl.Variable(shape=(3,))
        b = csdl.Variable(shape=(2,))
        with pytest.raises(ValueError, match="jax_function 'physics'"):
            csdl.jax_function(physics, a, b)
