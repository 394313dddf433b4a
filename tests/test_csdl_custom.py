"""aragog.csdl CustomExplicitOperation: user NumPy compute + compute_derivatives.

References: the same function in jax.numpy (float64; rtol 1e-10 allows for operation
order)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aragog import csdl
from conftest import in_x64

RTOL, ATOL = 1e-10, 1e-12
X0, Y0 = np.array([0.3, 0.5, 0.9]), np.array([1.5, -0.5, 2.0])


class SinProduct(csdl.CustomExplicitOperation):
    """f = sin(x) * y (elementwise), g = sum(x * y)."""

    def compute(self, inputs, outputs):
        outputs["f"] = np.sin(inputs["x"]) * inputs["y"]
        outputs["g"] = np.sum(inputs["x"] * inputs["y"])

    def compute_derivatives(self, inputs, outputs, derivatives):
        x, y = inputs["x"], inputs["y"]
        derivatives["f", "x"] = np.diag(np.cos(x) * y)
        derivatives["f", "y"] = np.diag(np.sin(x))
        derivatives["g", "x"] = y[None, :]
        derivatives["g", "y"] = x[None, :]


def ref(x, y):
    f, g = jnp.sin(x) * y, jnp.sum(x * y)
    return jnp.sum(f * f) + g * x[0]


def build(compress=None):
    rec = csdl.Recorder(inline=True)
    with rec:
        x = csdl.Variable(value=X0, name="x")
        y = csdl.Variable(value=Y0, name="y")
        out = SinProduct().apply({"x": x, "y": y}, {"f": (3,), "g": ()})
        f, g = out["f"], out["g"]
        z = csdl.sum(f * f)
        if compress is not None:
            csdl.compress([x, y], [z, g], compile_separately=compress)
        s = z + g * x[0]
    return rec, x, y, s


@pytest.mark.parametrize("compress", [None, True, False])
@pytest.mark.parametrize("loop", [True, False])
def test_values_and_first_derivatives(loop, compress):
    rec, x, y, s = build(compress)
    with rec:
        d = csdl.derivative(s, [x, y], loop=loop)
    # the jax.numpy reference in float64; csdl is called without x64, as a user's process runs it
    want = in_x64(jax.jit(lambda a, b: (ref(a, b), jax.grad(ref, 0)(a, b), jax.grad(ref, 1)(a, b))))(X0, Y0)
    np.testing.assert_allclose(s.value, want[0], rtol=RTOL)
    np.testing.assert_allclose(d[(s, x)].value, want[1][None], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(d[(s, y)].value, want[2][None], rtol=RTOL, atol=ATOL)
    sim = csdl.JaxSimulator(rec, [x, y], [s, d[(s, x)], d[(s, y)]])
    sim.run()
    np.testing.assert_allclose(sim[d[(s, x)]], want[1][None], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(sim[d[(s, y)]], want[2][None], rtol=RTOL, atol=ATOL)


def test_second_derivative_is_a_clear_error():
    rec, x, y, s = build()
    with rec:
        d = csdl.derivative(s, x)
        with pytest.raises(NotImplementedError, match="SinProduct.*first derivatives only"):
            csdl.derivative(d, x)


def test_missing_output_is_reported():
    class Bad(csdl.CustomExplicitOperation):
        def compute(self, inputs, outputs):
            pass

    with csdl.Recorder(inline=True):
        x = csdl.Variable(value=[1.0])
        with pytest.raises(ValueError, match=r"did not set outputs \['f'\]"):
            Bad().apply({"x": x}, {"f": (1,)})
