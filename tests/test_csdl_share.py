"""aragog.csdl._compress: sharing compiled functions, absorb_feeders, device.

References: the same model in plain JAX (float64, rtol 1e-10)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aragog import csdl
from aragog.csdl import compiled_function_count
from conftest import in_x64

RTOL, ATOL = 1e-10, 1e-12
XA, XB = np.array([0.1, -0.2, 0.3]), np.array([0.5, 0.4, -0.6])


def block(h, p, k=0.9, e=2.0):
    return csdl.tanh(k * h * p + 0.1) + 0.05 * h**e


def block_jax(h, p, k=0.9, e=2.0):
    return jnp.tanh(k * h * p + 0.1) + 0.05 * h**e


def two_blocks(**kw):
    """x_i -> block(x_i, p_i) compressed for i = a, b (the second may be listed with its
    inputs reversed); y = sum(h_a * h_b)."""
    rec = csdl.Recorder(inline=True)
    with rec:
        xa, pa = csdl.Variable(value=XA, name="xa"), csdl.Variable(value=0.7, name="pa")
        xb, pb = csdl.Variable(value=XB, name="xb"), csdl.Variable(value=1.3, name="pb")
        ha, hb = block(xa, pa), block(xb, pb, **kw.pop("second", {}))
        op_a = csdl.compress([xa, pa], [ha], name="a")
        ins_b = [pb, xb] if kw.pop("reverse", False) else [xb, pb]
        op_b = csdl.compress(ins_b, [hb], name="b", **kw)
        y = csdl.sum(ha * hb)
    return rec, (xa, pa, xb, pb), y, op_a, op_b


def ref(xa, pa, xb, pb):
    return jnp.sum(block_jax(xa, pa) * block_jax(xb, pb))


def check_model(rec, xs, y, ref_fn=ref):
    """Values, gradient (recorded, JaxSimulator) and one Hessian block (recorded)."""
    xa, pa, xb, pb = xs
    vals = [v.value for v in xs]
    np.testing.assert_allclose(y.value, in_x64(ref_fn)(*vals), rtol=RTOL)
    with rec:
        g = csdl.derivative(y, [xa, xb])
        h = csdl.derivative(g[(y, xa)], xb)  # second derivative through both blocks
    np.testing.assert_allclose(g[(y, xb)].value, in_x64(jax.grad(ref_fn, 2))(*vals)[None], rtol=RTOL, atol=ATOL)
    hess = in_x64(jax.jacfwd(jax.grad(ref_fn, 0), 2))(*vals)
    np.testing.assert_allclose(h.value, hess, rtol=RTOL, atol=ATOL)
    sim = csdl.JaxSimulator(rec, [xa, xb], [y])
    sim.run()
    totals = sim.compute_totals()
    np.testing.assert_allclose(totals[(y, xa)], in_x64(jax.grad(ref_fn, 0))(*vals)[None], rtol=RTOL, atol=ATOL)
    return h


def compressed_ops(rec):
    return [op for op in rec.nodes if isinstance(op, csdl.JaxCompressedOperation)]


def test_identical_blocks_share_and_compile_once():
    """Two copies, values, gradients, a second derivative through both blocks, inline
    and JaxSimulator: one forward, one first-reverse and one second-reverse function,
    each compiled exactly once (derivative operations of a and b share too)."""
    n0 = compiled_function_count()
    rec, xs, y, op_a, op_b = two_blocks()
    assert op_a.shared_from is None and op_b.shared_from is op_a
    assert op_b.region is op_a.region and op_a.region.compile_count == 1
    check_model(rec, xs, y)
    ops = compressed_ops(rec)
    regions = {id(op.region): op.region for op in ops}
    assert len(ops) > 6 and len(regions) == 3
    assert all(r.compile_count == 1 for r in regions.values())
    assert compiled_function_count() - n0 == 3


def test_second_derivatives_share_regions():
    rec, (xa, pa, xb, pb), y, op_a, op_b = two_blocks()
    first = set(id(op) for op in compressed_ops(rec))
    with rec:
        ha = csdl.derivative(csdl.sum(csdl.derivative(csdl.sum(op_a.outputs[0]), xa)), xa)
        hb = csdl.derivative(csdl.sum(csdl.derivative(csdl.sum(op_b.outputs[0]), xb)), xb)
    new = [op for op in compressed_ops(rec) if id(op) not in first]
    assert len(new) == 4 and len({id(op.region) for op in new}) == 2
    for p, x0, h in [(0.7, XA, ha), (1.3, XB, hb)]:
        hess = in_x64(jax.hessian(lambda v: jnp.sum(block_jax(v, p))))(x0)
        np.testing.assert_allclose(h.value, np.sum(hess, axis=0)[None], rtol=RTOL, atol=ATOL)
    assert all(op.region.compile_count == 1 for op in new)


def test_reordered_inputs_share_with_permuted_call():
    rec, xs, y, op_a, op_b = two_blocks(reverse=True)
    assert op_b.shared_from is op_a and op_b.perm == (1, 0)
    check_model(rec, xs, y)


@pytest.mark.parametrize("second", [dict(e=3.0), dict(k=0.8)])
def test_different_exponent_or_constant_does_not_share(second):
    rec, xs, y, op_a, op_b = two_blocks(second=second)
    assert op_b.shared_from is None and op_b.region is not op_a.region

    def ref2(xa, pa, xb, pb):
        return jnp.sum(block_jax(xa, pa) * block_jax(xb, pb, **second))

    np.testing.assert_allclose(y.value, in_x64(ref2)(*[v.value for v in xs]), rtol=RTOL)


def test_share_compiled_false_and_share_with():
    _, _, _, op_a, op_b = two_blocks(share_compiled=False)
    assert op_b.shared_from is None and op_b.region is not op_a.region
    rec, xs, y, op_a, op_b = two_blocks(share_compiled=False, reverse=True)
    with rec:
        xc = csdl.Variable(value=[1.0, 2.0, 3.0], name="xc")
        pc = csdl.Variable(value=0.5, name="pc")
        hc = block(xc, pc)
        hd = block(xc, pc, e=3.0)
        n = len(rec.nodes)
        with pytest.raises(ValueError, match="does not match"):
            csdl.compress([xc, pc], [hd], share_with=op_a)
        with pytest.raises(ValueError, match="jit_kwargs"):
            csdl.compress([xc, pc], [hc], share_with=op_a, jit_kwargs={"keep_unused": True})
        with pytest.raises(TypeError, match="not a compressed operation"):
            csdl.compress([xc, pc], [hc], share_with=hc.op)
        assert len(rec.nodes) == n and hd.op.name != "compressed"
        op_c = csdl.compress([pc, xc], [hc], share_with=op_b)  # op_b is not shared itself
        assert op_c.shared_from is op_b and op_c.region is op_b.region
    np.testing.assert_allclose(hc.value, in_x64(block_jax)(np.array([1.0, 2.0, 3.0]), 0.5), rtol=RTOL)


class Scale(csdl.CustomExplicitOperation):
    def compute(self, inputs, outputs):
        outputs["f"] = 2.0 * inputs["x"]

    def compute_derivatives(self, inputs, outputs, derivatives):
        derivatives["f", "x"] = 2.0 * np.eye(inputs["x"].size)


@pytest.mark.parametrize("assume", [False, True])
def test_custom_ops_share_only_when_asserted(assume):
    with csdl.Recorder(inline=True):
        xa, xb = csdl.Variable(value=XA, name="xa"), csdl.Variable(value=XB, name="xb")
        fa = csdl.sin(Scale().apply({"x": xa}, {"f": (3,)})["f"])
        fb = csdl.sin(Scale().apply({"x": xb}, {"f": (3,)})["f"])
        op_a = csdl.compress([xa], [fa])
        op_b = csdl.compress([xb], [fb], assume_custom_ops_match=assume)
        d = csdl.derivative(csdl.sum(fb), xb)
    assert (op_b.shared_from is op_a) == assume
    np.testing.assert_allclose(fb.value, np.sin(2 * XB), rtol=RTOL)
    np.testing.assert_allclose(d.value, (2 * np.cos(2 * XB))[None], rtol=RTOL)


def test_absorb_feeders():
    with csdl.Recorder(inline=True) as rec:
        x = csdl.Variable(value=XA, name="x")
        q = csdl.Variable(value=1.5, name="q")
        k = csdl.expand(csdl.Constant(2.0), (3,))  # broadcast of a scalar constant
        kq = csdl.exp(q)  # a feeder reading a parameter
        shared = csdl.expand(q, (3,))  # also read outside the region: not absorbed
        y = csdl.sin(x) * k * kq + shared
        z = csdl.sum(shared)
        plain = csdl.compress([x], [y], absorb_feeders=False, share_compiled=False,
                              intermediates="none")
    ids = {v.id for v in plain.extra_inputs}  # kq enters broadcast to (3,)
    assert len(ids) == 3 and {k.id, shared.id} <= ids and q.id not in ids
    with csdl.Recorder(inline=True) as rec:
        x = csdl.Variable(value=XA, name="x")
        q = csdl.Variable(value=1.5, name="q")
        k = csdl.expand(csdl.Constant(2.0), (3,))
        kq = csdl.exp(q)
        shared = csdl.expand(q, (3,))
        y = csdl.sin(x) * k * kq + shared
        z = csdl.sum(shared)
        op = csdl.compress([x], [y], absorb_feeders=True)
        d = csdl.derivative(csdl.sum(y), q)
    assert [v.id for v in op.extra_inputs] == [q.id, shared.id]
    assert k.op is None or k.op not in rec.nodes and kq.op not in rec.nodes
    assert shared.op in rec.nodes and z.op in rec.nodes
    np.testing.assert_allclose(y.value, np.sin(XA) * 2 * np.exp(1.5) + 1.5, rtol=RTOL)
    np.testing.assert_allclose(d.value, [[np.sum(np.sin(XA) * 2 * np.exp(1.5)) + 3.0]], rtol=RTOL)
    sim = csdl.PySimulator(rec)
    sim[q] = 0.5
    sim.run()
    np.testing.assert_allclose(sim[y], np.sin(XA) * 2 * np.exp(0.5) + 0.5, rtol=RTOL)


def test_device_cpu_and_unavailable_gpu():
    with csdl.Recorder(inline=True) as rec:
        x = csdl.Variable(value=XA, name="x")
        y = block(x, 1.0)
        op = csdl.compress([x], [y], device="cpu")
        d = csdl.derivative(csdl.sum(y), x)
    assert op.region.device == jax.devices("cpu")[0]
    vjp_ops = [o for o in compressed_ops(rec) if o is not op]
    assert vjp_ops and all(o.region.device == op.region.device for o in vjp_ops)
    np.testing.assert_allclose(y.value, in_x64(block_jax)(XA, 1.0), rtol=RTOL)
    np.testing.assert_allclose(d.value, in_x64(jax.grad(lambda v: jnp.sum(block_jax(v, 1.0))))(XA)[None], rtol=RTOL)
    sim = csdl.JaxSimulator(rec, [x], [y])
    sim.run()
    np.testing.assert_allclose(sim[y], in_x64(block_jax)(XA, 1.0), rtol=RTOL)
    # a jax.Device works too
    with csdl.Recorder(inline=True):
        x = csdl.Variable(value=XA, name="x")
        y = block(x, 1.0)
        assert csdl.compress([x], [y], device=jax.devices()[0]).region.device == jax.devices()[0]
    try:
        jax.devices("gpu")
        has_gpu = True
    except RuntimeError:
        has_gpu = False
    if not has_gpu:
        with csdl.Recorder(inline=True) as rec:
            x = csdl.Variable(value=XA, name="x")
            y = block(x, 1.0)
            n = len(rec.nodes)
            with pytest.raises(ValueError, match="no GPU"):
                csdl.compress([x], [y], device="gpu")
            assert len(rec.nodes) == n


def test_find_repeats_compresses_copies_and_skips_escaping_one():
    with csdl.Recorder(inline=True) as rec:
        x = csdl.Variable(value=XA, name="x")
        p = csdl.Variable(value=0.8, name="p")
        h1 = block(x, p)
        h2 = block(h1, p)
        t3 = csdl.tanh(0.9 * h2 * p + 0.1)  # block 3, its tanh also read outside
        h3 = t3 + 0.05 * h2**2.0
        h4 = block(h3, p)
        h5 = block(h4, p * 1.0)  # another parameter (p * 1.0): still a copy
        y = csdl.sum(h5) + csdl.sum(t3)
        n0 = compiled_function_count()
        op = csdl.compress([x], [h1], find_repeats=True)
        d = csdl.derivative(y, [x, p])
    assert [r.outputs[0].id for r in op.repeats] == [h2.id, h4.id, h5.id]
    assert all(r.shared_from is op and r.region is op.region for r in op.repeats)
    assert h3.op.name != "compressed" and t3.op in rec.nodes
    assert op.region.compile_count == 1

    def ref_fn(x, p):
        h = x
        for k in range(5):
            h_new = block_jax(h, p)
            if k == 2:
                t3 = jnp.tanh(0.9 * h * p + 0.1)
            h = h_new
        return jnp.sum(h) + jnp.sum(t3)

    np.testing.assert_allclose(y.value, in_x64(ref_fn)(XA, 0.8), rtol=RTOL)
    np.testing.assert_allclose(d[(y, x)].value, in_x64(jax.grad(ref_fn))(XA, 0.8)[None], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(d[(y, p)].value, in_x64(jax.grad(ref_fn, 1))(XA, 0.8).reshape(1, 1), rtol=RTOL)
    assert compiled_function_count() - n0 == 2  # one forward, one reverse function
