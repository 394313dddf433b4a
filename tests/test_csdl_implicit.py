"""aragog.csdl implicit operation: Newton forward, implicit-function-theorem derivatives
(first and second order) in PySimulator, JaxSimulator, derivative() and compress.

Tolerance: Newton to tol=1e-13 on O(1) residuals, compared with closed forms (rtol 1e-10)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from aragog import csdl

RTOL = 1e-10


def sqrt_residual(x, p):
    return x**2 - p


@pytest.mark.parametrize("loop", [True, False])
def test_scalar_sqrt_values_first_second(loop):
    rec = csdl.Recorder()
    with rec:
        p = csdl.Variable(value=np.array([4.0, 2.0, 9.0]), name="p")
        x = csdl.solve_implicit(sqrt_residual, (3,), [p], initial_guess=np.ones(3), tol=1e-13)
        y = csdl.sum(x * p)  # downstream use
        d = csdl.derivative(x, p, loop=loop)
        g = csdl.derivative(y, p, loop=loop)
        h = csdl.derivative(g, p, loop=loop)
    assert isinstance(x.op, csdl.ImplicitOperation)
    P = p.value
    ref_x = np.sqrt(P)
    ref_d = np.diag(1 / (2 * np.sqrt(P)))
    ref_g = (np.sqrt(P) + P / (2 * np.sqrt(P)))[None]  # d/dp (p^1.5) = 1.5 sqrt p
    ref_h = np.diag(0.75 / np.sqrt(P))[None]
    py = csdl.PySimulator(rec)
    py.run()
    jx = csdl.JaxSimulator(rec, [p], [x, d, g, h])
    jx.run()
    for sim in (py, jx):
        np.testing.assert_allclose(sim[x], ref_x, rtol=RTOL)
        np.testing.assert_allclose(sim[d], ref_d, rtol=RTOL, atol=1e-14)
        np.testing.assert_allclose(sim[g], ref_g, rtol=RTOL)
        np.testing.assert_allclose(np.reshape(sim[h], (3, 3)), ref_h[0], rtol=RTOL, atol=1e-14)
    # changing the parameter changes the solve
    jx[p] = np.array([16.0, 1.0, 0.25])
    jx.run()
    np.testing.assert_allclose(jx[x], [4.0, 1.0, 0.5], rtol=RTOL)


M = np.array([[3.0, 0.5, 0.0], [0.2, 2.0, 0.3], [0.0, -0.4, 4.0]])
X_STAR = np.array([0.7, -0.3, 1.1])


def cubic_residual(x, m, p):
    return m @ x + x**3 - p


def test_vector_against_analytic():
    p0 = M @ X_STAR + X_STAR**3
    rec = csdl.Recorder(inline=True)
    with rec:
        m = csdl.Variable(value=M, name="m")
        p = csdl.Variable(value=p0, name="p")
        x = csdl.solve_implicit(cubic_residual, (3,), [m, p], tol=1e-13)
        d = csdl.derivative(x, [m, p])
    jac_x = M + np.diag(3 * X_STAR**2)
    inv = np.linalg.inv(jac_x)
    np.testing.assert_allclose(x.value, X_STAR, rtol=RTOL)
    np.testing.assert_allclose(d[(x, p)].value, inv, rtol=RTOL, atol=1e-13)
    # dR/dm_ij = x_j e_i  ->  dx/dm_ij = -inv[:, i] x_j
    ref_m = -np.einsum("ki,j->kij", inv, X_STAR).reshape(3, 9)
    np.testing.assert_allclose(np.reshape(d[(x, m)].value, (3, 9)), ref_m, rtol=RTOL, atol=1e-13)


def test_residual_as_graph_and_compress():
    res = csdl.graph_function(lambda x, p: x * x - p, (2,), (2,), name="sq")
    rec = csdl.Recorder()
    with rec:
        p = csdl.Variable(value=np.array([4.0, 0.25]), name="p")
        q = p * 1.0
        x = csdl.solve_implicit(res, (2,), [q], initial_guess=np.ones(2), tol=1e-13)
        y = csdl.sqrt(x) * 2.0
        op = csdl.compress([q], [y], name="blk")
        d = csdl.derivative(y, p)
        h = csdl.derivative(csdl.sum(d), p)
    assert not any(isinstance(o, csdl.ImplicitOperation) for o in rec.nodes)
    assert any(isinstance(o, csdl.ImplicitOperation) for o in op.region.nodes)
    P = p.value
    jx = csdl.JaxSimulator(rec, [p], [y, d, h])
    jx.run()
    py = csdl.PySimulator(rec)
    py.run()
    for sim in (py, jx):
        np.testing.assert_allclose(sim[y], 2 * P**0.25, rtol=RTOL)
        np.testing.assert_allclose(sim[d], np.diag(0.5 * P**-0.75), rtol=RTOL, atol=1e-14)
        np.testing.assert_allclose(np.ravel(sim[h]), -0.375 * P**-1.75, rtol=RTOL)


def test_not_converged():
    with csdl.Recorder(inline=True):
        p = csdl.Variable(value=2.0, name="p")
        with pytest.raises(RuntimeError, match="did not converge"):
            csdl.solve_implicit(sqrt_residual, (), [p], initial_guess=1.0, max_iter=1)
    rec = csdl.Recorder()
    with rec:
        p = csdl.Variable(value=2.0, name="p")
        x = csdl.solve_implicit(sqrt_residual, (), [p], initial_guess=1.0, max_iter=1)
    jx = csdl.JaxSimulator(rec, [p], [x])
    jx.run()
    assert np.isnan(jx[x])  # no exception inside a JAX program: NaN
    with pytest.raises(RuntimeError, match="max_iter = 1"):
        csdl.PySimulator(rec).run()


def test_bad_arguments():
    with csdl.Recorder():
        p = csdl.Variable(value=np.ones(2), name="p")
        with pytest.raises(ValueError, match="initial_guess"):
            csdl.solve_implicit(sqrt_residual, (2,), [p], initial_guess=np.ones(3))
        with pytest.raises(ValueError, match="residual has 1 elements"):
            csdl.solve_implicit(lambda x, p: jnp.sum(x - p), (2,), [p])
