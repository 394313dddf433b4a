"""aragog.csdl loop: a scan recorded as one operation, against the same computation
unrolled with graph operations (values, first and second derivatives), a body built as a
graph (containing a compressed block), and compress of a region containing the loop.

Tolerance: same float64 arithmetic up to operation order (rtol 1e-10)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from aragog import csdl

RTOL, ATOL = 1e-10, 1e-12
N = 6
U0 = np.array([0.3, -0.2, 0.5])
V0 = np.array([0.1, 0.4, -0.3])
A0 = np.array([0.9, 0.7, 1.1])


def body(u, v, a, b):  # two carries, two params
    return jnp.tanh(a * u + b * v), v + 0.1 * jnp.sin(u)


def unrolled(u, v, a, b):
    for _ in range(N):
        u, v = csdl.tanh(a * u + b * v), v + 0.1 * csdl.sin(u)
    return u, v


def build(looped, inline=False):
    rec = csdl.Recorder(inline=inline)
    with rec:
        u = csdl.Variable(value=U0, name="u")
        v = csdl.Variable(value=V0, name="v")
        a = csdl.Variable(value=A0, name="a")
        b = csdl.Variable(value=0.6, name="b")
        if looped:
            uf, vf = csdl.loop(body, (u, v), N, a, b)
        else:
            uf, vf = unrolled(u, v, a, b)
        out = csdl.sum(uf * vf) + csdl.sum(uf)
    return rec, (u, v, a, b), out


def test_one_operation_and_values():
    rec, _, out = build(True, inline=True)
    loops = [op for op in rec.nodes if isinstance(op, csdl.LoopOperation)]
    assert len(loops) == 1 and loops[0].n_iter == N
    _, _, ref = build(False, inline=True)
    np.testing.assert_allclose(out.value, ref.value, rtol=RTOL)


@pytest.mark.parametrize("loop", [True, False])
def test_derivatives_match_unrolled(loop):
    res = {}
    for looped in (True, False):
        rec, ins, out = build(looped)
        with rec:
            g = csdl.derivative(out, list(ins), loop=loop)
            h = csdl.derivative(g[(out, ins[2])], ins[3], loop=loop)
        wanted = [g[(out, x)] for x in ins] + [h]
        py = csdl.PySimulator(rec)
        py.run()
        jx = csdl.JaxSimulator(rec, list(ins), wanted)
        jx.run()
        res[looped] = ([py[w] for w in wanted], [jx[w] for w in wanted])
    for k in range(2):
        for got, ref in zip(res[True][k], res[False][0]):
            np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL)


def test_compress_region_containing_loop():
    rec, (u, v, a, b), out = build(True)
    ref_rec, ref_ins, ref_out = build(False)
    with rec:
        op = csdl.compress([u, v, a], [out], name="with_loop")
        g = csdl.derivative(out, [a, b])
    with ref_rec:
        gr = csdl.derivative(ref_out, [ref_ins[2], ref_ins[3]])
    assert any(isinstance(o, csdl.LoopOperation) for o in op.region.nodes)
    assert not any(isinstance(o, csdl.LoopOperation) for o in rec.nodes)
    py, pr = csdl.PySimulator(rec), csdl.PySimulator(ref_rec)
    py.run()
    pr.run()
    jx = csdl.JaxSimulator(rec, [u, v, a, b], [out, g[(out, a)], g[(out, b)]])
    jx.run()
    for sim in (py, jx):
        np.testing.assert_allclose(sim[out], pr[ref_out], rtol=RTOL)
        np.testing.assert_allclose(sim[g[(out, a)]], pr[gr[(ref_out, ref_ins[2])]], rtol=RTOL)
        np.testing.assert_allclose(sim[g[(out, b)]], pr[gr[(ref_out, ref_ins[3])]], rtol=RTOL)


def graph_body(u, v, a, b):
    """The same step built from graph operations, its first half compressed."""
    w = a * u + b * v
    csdl.compress([u, v, a, b], [w], name="step_half")
    return csdl.tanh(w), v + 0.1 * csdl.sin(u)


def test_graph_body_with_compress_inside():
    fn = csdl.graph_function(graph_body, (3,), (3,), (3,), ())
    assert any(isinstance(o, csdl.JaxCompressedOperation) for o in fn.region.nodes)
    rec = csdl.Recorder()
    with rec:
        u = csdl.Variable(value=U0, name="u")
        v = csdl.Variable(value=V0, name="v")
        a = csdl.Variable(value=A0, name="a")
        b = csdl.Variable(value=0.6, name="b")
        uf, vf = csdl.loop(fn, (u, v), N, a, b)
        out = csdl.sum(uf * vf) + csdl.sum(uf)
        g = csdl.derivative(out, [a, b])
    ref_rec, ref_ins, ref_out = build(False)
    with ref_rec:
        gr = csdl.derivative(ref_out, [ref_ins[2], ref_ins[3]])
    pr = csdl.PySimulator(ref_rec)
    pr.run()
    py = csdl.PySimulator(rec)
    py.run()
    jx = csdl.JaxSimulator(rec, [u, v, a, b], [out, g[(out, a)], g[(out, b)]])
    jx.run()
    for sim in (py, jx):
        np.testing.assert_allclose(sim[out], pr[ref_out], rtol=RTOL)
        np.testing.assert_allclose(sim[g[(out, a)]], pr[gr[(ref_out, ref_ins[2])]], rtol=RTOL)
        np.testing.assert_allclose(sim[g[(out, b)]], pr[gr[(ref_out, ref_ins[3])]], rtol=RTOL)


def test_errors():
    with csdl.Recorder():
        u = csdl.Variable(value=U0, name="u")
        with pytest.raises(ValueError, match="n_iter"):
            csdl.loop(lambda c: c, u, -1)
        with pytest.raises(ValueError, match="body must return 1 carry"):
            csdl.loop(lambda c: c[:2], u, 3)
        outside = csdl.Variable(value=1.0, name="outside")
    with pytest.raises(ValueError, match="not one of its arguments"):
        csdl.graph_function(lambda c: c * outside, (3,))
