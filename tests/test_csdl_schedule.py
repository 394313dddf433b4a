"""BlockSimulator: separately compiled blocks called directly (no host callback), the
other operations as jitted glue; checked against the same model written in plain JAX.

Tolerances: the blocks and the reference run the same float64 arithmetic in different
XLA programs (different fusion), so values agree to rounding: rtol 1e-10, atol 1e-12.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from aragog import csdl

from test_csdl_compress import P0, REF, X0, build

RTOL, ATOL = 1e-10, 1e-12


@pytest.mark.parametrize("nested,loop", [(False, True), (True, True), (False, False), (True, False)])
def test_block_simulator_matches_reference_values_and_totals(nested, loop):
    rec, x, p, y, op = build(True, sep=True, nested=nested)
    sim = csdl.BlockSimulator(rec, [x], [y], loop=loop)
    assert [v.name for v in sim.arguments[:1]] == ["x"] and p in sim.parameters
    assert [s.kind for s in sim.schedule.steps].count("block") == 1
    for xv, pv in [(X0, P0), (2 * X0, 0.55)]:
        sim[x], sim[p] = xv, pv  # parameters are read at run time: nothing is frozen
        sim.run()
        tot = sim.compute_totals()
        ref = REF(xv, pv)
        np.testing.assert_allclose(sim[y], ref[0], rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(tot[(y, x)], ref[1], rtol=RTOL, atol=ATOL)
    # direct calls only: the region was never reached through a host callback
    assert op.region.host_calls == 0 and op.region.direct_calls == 4
    assert sim.trace_count == len(sim.schedule.glue_compile_records()) + len(
        sim.totals_schedule().glue_compile_records())  # each glue program traced once


def test_call_takes_arrays_and_leaves_variables_alone():
    rec, x, p, y, op = build(True, sep=True)
    sim = csdl.BlockSimulator(rec, [x], [y])
    with jax.enable_x64(True):  # the caller's own float64 device arrays
        args = [jax.numpy.asarray(v.value) for v in sim.arguments]
        args[0] = jax.numpy.asarray(2 * X0)
    (out,) = sim.call(*args)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, REF(2 * X0, P0)[0], rtol=RTOL)
    (out_np,) = sim.call(2 * X0, *[v.value for v in sim.arguments[1:]])  # NumPy arrays alike
    np.testing.assert_array_equal(out_np, out)
    np.testing.assert_array_equal(x.value, X0)
    with pytest.raises(TypeError, match="expected"):
        sim.call(*args[:-1])
    # a float32 array (what jnp.asarray makes with x64 off) is already rounded: refused, not used
    with pytest.raises(TypeError, match="is float32, not float64"):
        sim.call(jax.numpy.asarray(2 * X0, dtype=jax.numpy.float32), *args[1:])


def test_shared_region_compiles_once_across_simulators():
    rec = csdl.Recorder()
    with rec:
        x = csdl.Variable(value=X0, name="x")
        h = x
        ops = []
        for _ in range(3):
            h_in = h
            for _ in range(4):
                h = csdl.tanh(0.9 * h + 0.1) + 0.05 * csdl.sin(h)
            ops.append(csdl.compress([h_in], [h]))
        y = csdl.sum(h)
    assert len({id(o.region) for o in ops}) == 1
    before = csdl.compiled_function_count()
    a = csdl.BlockSimulator(rec, [x], [y])
    b = csdl.BlockSimulator(rec, [x], [y])
    a.run(), b.run()
    ta, tb = a.compute_totals(), b.compute_totals()
    # one forward and one derivative function, whatever the number of copies and simulators
    assert csdl.compiled_function_count() - before == 2
    assert len(ops[0].region.compile_records) == 1
    np.testing.assert_array_equal(ta[(y, x)], tb[(y, x)])
    h_ref = np.array(X0)
    g = np.ones_like(h_ref)
    for _ in range(12):
        t = np.tanh(0.9 * h_ref + 0.1)
        g = g * (0.9 * (1 - t * t) + 0.05 * np.cos(h_ref))
        h_ref = t + 0.05 * np.sin(h_ref)
    np.testing.assert_allclose(a[y], h_ref.sum(), rtol=1e-13)
    np.testing.assert_allclose(ta[(y, x)], g[None], rtol=1e-12)


def test_compile_records_say_compiled():
    rec, x, p, y, op = build(True, sep=True)
    sim = csdl.BlockSimulator(rec, [x], [y])
    sim.run()
    (record,) = op.region.compile_records
    assert record.source in ("compiled", "disk") and record.compile_seconds > 0


def test_loop_false_jacobian_is_one_batched_call_per_block():
    """d h / d x (3 rows) through a separate block: with loop=False the block's VJP runs
    once, vmapped over the rows, by a direct call (no host callback)."""
    rec = csdl.Recorder()
    with rec:
        x = csdl.Variable(value=X0, name="x")
        h = x
        for _ in range(5):
            h = csdl.tanh(0.9 * h + 0.1) + 0.05 * csdl.sin(h)
        op = csdl.compress([x], [h])
    sim = csdl.BlockSimulator(rec, [x], [h], loop=False)
    tot = sim.compute_totals()[(h, x)]
    sched = sim.totals_schedule()
    (jac_step,) = [s for s in sched.steps if s.kind == "jacobian"]
    (vjp_block,) = jac_step.inner.blocks
    assert vjp_block.axes is not None and vjp_block.size == 3  # one batched call for 3 rows
    calls = vjp_block.region.direct_calls
    sim.compute_totals()
    assert vjp_block.region.direct_calls == calls + 1 and vjp_block.region.host_calls == 0
    h_ref, g = np.array(X0), np.ones(3)
    for _ in range(5):
        t = np.tanh(0.9 * h_ref + 0.1)
        g = g * (0.9 * (1 - t * t) + 0.05 * np.cos(h_ref))
        h_ref = t + 0.05 * np.sin(h_ref)
    np.testing.assert_allclose(tot, np.diag(g), rtol=1e-12, atol=1e-15)
    del op
