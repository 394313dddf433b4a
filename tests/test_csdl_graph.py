"""aragog.csdl graph: values, recorded derivatives (1st and 2nd order), simulators.

References are the same model written in plain jax.numpy, differentiated with
jax.jacfwd / jax.hessian. Tolerances: both sides compute in float64 with the same
elementary functions, differing only in operation order, so agreement to ~1e-12
relative is expected; rtol=1e-10 leaves margin.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aragog import csdl
from conftest import in_x64

RTOL, ATOL = 1e-10, 1e-12

X0 = np.array([0.3, 0.1, 0.5])
A0 = np.array([[1.0, 0.2, -0.3], [0.4, 0.9, 0.1], [-0.2, 0.3, 1.1]])
P0 = np.array([0.7, -1.2, 0.4])


def model_csdl(x, A, p):
    """Every graph function at least once; returns (scalar s, vector v)."""
    y = A @ x
    z = csdl.tanh(y) * csdl.exp(-x) + csdl.sqrt(x * x + 1.0) + csdl.log(1.0 + x**2)
    w = (csdl.maximum(z, csdl.cos(x)) + csdl.minimum(z, 0.5 * x)
         + csdl.where(x > 0.2, csdl.sin(x), x**3))
    e = csdl.reshape(csdl.expand(x, (3, 2), "i->ij"), (6,))
    s = (csdl.sum(w * p) / csdl.norm(x) + csdl.sum(e[1:4]) + x[0] * x[2]
         + csdl.sum(csdl.matvec(A, x) / (2.0 + x)) + 2.0 ** x[1] + x[2] ** x[0])
    M = csdl.expand(x, (3, 3))  # rows are copies of x
    v = w[::2] * s + csdl.sum(M * A, axis=0)[np.array([0, 2])] - s
    return s, v


def model_jax(x, A, p):
    y = A @ x
    z = jnp.tanh(y) * jnp.exp(-x) + jnp.sqrt(x * x + 1.0) + jnp.log(1.0 + x**2)
    w = (jnp.maximum(z, jnp.cos(x)) + jnp.minimum(z, 0.5 * x)
         + jnp.where(x > 0.2, jnp.sin(x), x**3))
    e = jnp.reshape(jnp.broadcast_to(x[:, None], (3, 2)), (6,))
    s = (jnp.sum(w * p) / jnp.linalg.norm(x) + jnp.sum(e[1:4]) + x[0] * x[2]
         + jnp.sum(A @ x / (2.0 + x)) + 2.0 ** x[1] + x[2] ** x[0])
    M = jnp.broadcast_to(x, (3, 3))
    v = w[::2] * s + jnp.sum(M * A, axis=0)[np.array([0, 2])] - s
    return s, v


@in_x64  # the references in float64; csdl is called without x64, as a user's process runs it
@jax.jit
def reference(x, A, p):
    """Jacobians and second derivatives of model_jax by forward-mode JAX (jitted: eager
    nested jacfwd is slow)."""
    f_s = lambda x_, A_: model_jax(x_, A_, p)[0]  # noqa: E731
    f_v = lambda x_, A_: model_jax(x_, A_, p)[1]  # noqa: E731
    g_p = lambda p_: jax.jacfwd(lambda x_: model_jax(x_, A, p_)[1])(x)  # noqa: E731
    return {
        "s": f_s(x, A), "v": f_v(x, A),
        "s_x": jax.jacfwd(f_s)(x, A)[None, :], "v_x": jax.jacfwd(f_v)(x, A),
        "v_A": jax.jacfwd(f_v, 1)(x, A).reshape(2, 9), "s_xx": jax.hessian(f_s)(x, A),
        "v_xx": jax.jacfwd(jax.jacfwd(f_v))(x, A).reshape(6, 3),
        "v_xp": jax.jacfwd(g_p)(p).reshape(6, 3),
    }


def record(inline=False):
    rec = csdl.Recorder(inline=inline)
    with rec:
        x = csdl.Variable(value=X0, name="x")
        A = csdl.Variable(value=A0, name="A")
        p = csdl.Variable(value=P0, name="p")
        s, v = model_csdl(x, A, p)
    return rec, x, A, p, s, v


@pytest.mark.parametrize("loop", [True, False])
def test_docs_example(loop):
    with csdl.Recorder(inline=True):
        x = csdl.Variable(value=[0.1, 0.2], name="x")
        d = csdl.derivative(2 * csdl.sum(csdl.sin(x) * x), x, loop=loop)
    assert d.shape == (1, 2)
    np.testing.assert_allclose(d.value, [[0.39866767, 0.78936529]], rtol=1e-8)


def test_variable_truth_value_is_an_error():
    with csdl.Recorder():
        x = csdl.Variable(value=[1.0, 2.0])
        with pytest.raises(TypeError, match="no truth value"):
            if x > 0.0:
                pass
        with pytest.raises(TypeError, match="not iterable"):
            list(x)
        assert len(x) == 2


def test_values_inline_py_jax_agree_with_jnp():
    rec, x, A, p, s, v = record(inline=True)
    s_ref, v_ref = in_x64(jax.jit(model_jax))(X0, A0, P0)
    np.testing.assert_allclose(s.value, s_ref, rtol=RTOL)
    np.testing.assert_allclose(v.value, v_ref, rtol=RTOL)

    py = csdl.PySimulator(rec)
    jx = csdl.JaxSimulator(rec, [x], [s, v])
    x1 = np.array([0.25, 0.4, 0.8])
    py[x] = x1
    py.run()
    jx.run()
    s_ref, v_ref = in_x64(jax.jit(model_jax))(x1, A0, P0)
    np.testing.assert_allclose(py[s], s_ref, rtol=RTOL)
    np.testing.assert_allclose(py[v], v_ref, rtol=RTOL)
    np.testing.assert_allclose(jx[s], py[s], rtol=RTOL)
    np.testing.assert_allclose(jx[v], py[v], rtol=RTOL)


@pytest.mark.parametrize("loop", [True, False])
def test_first_and_second_derivatives(loop):
    rec, x, A, p, s, v = record(inline=False)
    with rec:
        d = csdl.derivative([s, v], [x, A], loop=loop)
        hs = csdl.derivative(d[(s, x)], x, loop=loop)           # Hessian of s
        hv = csdl.derivative(d[(v, x)], [x, p], loop=loop)      # 2nd derivatives of v
    sim = csdl.PySimulator(rec)
    sim.run()
    ref = reference(X0, A0, P0)
    for got, key in [(d[(s, x)], "s_x"), (d[(v, x)], "v_x"), (d[(v, A)], "v_A"), (hs, "s_xx"),
                     (hv[(d[(v, x)], x)], "v_xx"), (hv[(d[(v, x)], p)], "v_xp")]:
        np.testing.assert_allclose(sim[got], ref[key], rtol=RTOL, atol=ATOL, err_msg=key)

    # the same graph through the JAX program
    jx = csdl.JaxSimulator(rec, [x, A], [hs, d[(v, A)]])
    jx.run()
    np.testing.assert_allclose(jx[hs], sim[hs], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(jx[d[(v, A)]], sim[d[(v, A)]], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("loop", [True, False])
def test_jax_simulator_totals_and_no_retrace(loop):
    rec, x, A, p, s, v = record()
    sim = csdl.JaxSimulator(rec, [x], [s, v], loop=loop)
    assert sim.parameters == [A, p]
    for k, x_new in enumerate([X0, np.array([0.2, 0.6, 0.15]), np.array([0.9, 0.3, 0.35])]):
        sim[x] = x_new
        sim.run()
        tot = sim.compute_totals()
        ref = reference(x_new, A0, P0)
        np.testing.assert_allclose(sim[s], ref["s"], rtol=RTOL)
        np.testing.assert_allclose(tot[(s, x)], ref["s_x"], rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(tot[(v, x)], ref["v_x"], rtol=RTOL, atol=ATOL)
    assert sim.trace_count == 2  # one forward program, one totals program

    # a parameter not listed as input is read at run time, not frozen (and no retrace)
    sim[p] = 2.0 * P0
    sim.run()
    np.testing.assert_allclose(sim[s], reference(x_new, A0, 2.0 * P0)["s"], rtol=RTOL)
    assert sim.trace_count == 2


def test_scalar_broadcasting_and_constants():
    with csdl.Recorder(inline=True):
        x = csdl.Variable(value=[1.0, 2.0, 3.0])
        c = csdl.Variable(value=2.0)
        y = x * c + 1.0 - c / x + np.array([1.0, 1.0, 1.0]) + (-x)
        d = csdl.derivative(csdl.sum(y), c)
    xv = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(y.value, xv * 2 + 1 - 2 / xv + 1 - xv)
    np.testing.assert_allclose(d.value, [[np.sum(xv - 1 / xv)]])


def test_matmul_variants_and_transpose():
    rng = np.random.default_rng(0)
    a, b, u, w = rng.normal(size=(3, 4)), rng.normal(size=(4, 2)), rng.normal(size=3), rng.normal(size=4)
    with csdl.Recorder(inline=True):
        A, B, U, W = (csdl.Variable(value=z) for z in (a, b, u, w))
        out = csdl.sum((A @ B) ** 2) + csdl.sum(U @ A) + U @ (A @ W) + csdl.sum(A.T @ U) + W @ W
        d = csdl.derivative(out, [A, B, U, W])

    def f(a, b, u, w):
        return jnp.sum((a @ b) ** 2) + jnp.sum(u @ a) + u @ (a @ w) + jnp.sum(a.T @ u) + w @ w

    np.testing.assert_allclose(out.value, in_x64(f)(a, b, u, w), rtol=RTOL)
    for i, V in enumerate((A, B, U, W)):
        ref = in_x64(jax.grad(f, i))(a, b, u, w).reshape(1, -1)
        np.testing.assert_allclose(d[(out, V)].value, ref, rtol=RTOL, atol=ATOL)


def test_stack_getitem_fancy_and_sum_axes():
    with csdl.Recorder(inline=True):
        x = csdl.Variable(value=np.arange(12.0).reshape(3, 4) / 10)
        y = csdl.stack([x[0], x[2] * 2.0, x[1, ::-1]], axis=1)      # (4, 3)
        z = csdl.sum(csdl.sin(y), axis=(0,)) + csdl.sum(x[np.array([0, 0, 2]), 1:3], axis=1)
        t = csdl.sum(z * z)
        d = csdl.derivative(t, x)

    def f(x):
        y = jnp.stack([x[0], x[2] * 2.0, x[1, ::-1]], axis=1)
        z = jnp.sum(jnp.sin(y), axis=0) + jnp.sum(x[np.array([0, 0, 2]), 1:3], axis=1)
        return jnp.sum(z * z)

    xv = np.arange(12.0).reshape(3, 4) / 10
    np.testing.assert_allclose(t.value, in_x64(f)(xv), rtol=RTOL)
    np.testing.assert_allclose(d.value, in_x64(jax.grad(f))(xv).reshape(1, -1), rtol=RTOL)


def test_derivative_independent_and_identity():
    with csdl.Recorder(inline=True):
        x = csdl.Variable(value=[1.0, 2.0])
        q = csdl.Variable(value=3.0)
        y = csdl.sin(q)
        assert np.all(csdl.derivative(y, x).value == 0.0)
        np.testing.assert_array_equal(csdl.derivative(x, x).value, np.eye(2))
        np.testing.assert_array_equal(csdl.derivative(x, x, loop=False).value, np.eye(2))
        np.testing.assert_allclose(csdl.derivative(x * q, x, loop=False).value, 3.0 * np.eye(2))


def test_errors():
    with pytest.raises(RuntimeError, match="no active csdl Recorder"):
        csdl.sin(csdl.Variable(value=1.0))
    with csdl.Recorder():
        x = csdl.Variable(shape=(3,), name="x")
        y = csdl.Variable(shape=(2,), name="y")
        with pytest.raises(ValueError, match=r"shape mismatch \(3,\) vs \(2,\)"):
            x + y
        with pytest.raises(ValueError, match="matmul: shape mismatch"):
            csdl.Variable(shape=(2, 2)) @ x
        with pytest.raises(ValueError, match="cannot reshape"):
            csdl.reshape(x, (2, 2))
        with pytest.raises(ValueError, match="cannot broadcast"):
            csdl.broadcast_to(x, (3, 2))
        with pytest.raises(IndexError, match="invalid"):
            x[5]
        with pytest.raises(NotImplementedError, match="indexing by a Variable"):
            x[y]
        with pytest.raises(ValueError, match="out of range"):
            csdl.sum(x, axis=1)
        with pytest.raises(ValueError, match="does not fit"):
            csdl.Variable(shape=(3,), value=[1.0, 2.0])
        z = x * 2.0
    with pytest.raises(ValueError, match="without a value"):
        csdl.JaxSimulator(csdl.Recorder(), [x], [z]).run()
    sim = csdl.PySimulator(csdl.Recorder())
    with pytest.raises(KeyError, match="not an input"):
        sim[z] = 1.0
    with pytest.raises(ValueError, match="does not fit"):
        sim[x] = [1.0, 2.0]
