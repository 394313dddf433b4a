"""Shape operations: reshape, broadcast_to / expand, sum, indexing (and its adjoint,
scatter-add), transpose, stack."""

from __future__ import annotations

import numpy as np

from aragog.csdl._operation import Operation
from aragog.csdl._variable import Variable, as_variable, normalize_shape


class Reshape(Operation):
    name = "reshape"

    def __init__(self, x, shape):
        super().__init__([x], [shape], shape=shape)

    def compute(self, xp, x):
        return (xp.reshape(x, self.params["shape"]),)

    def vjp(self, cots, needs):
        return [reshape(cots[0], self.inputs[0].shape)]


class BroadcastTo(Operation):
    """NumPy broadcasting of ``x`` to ``shape``."""

    name = "broadcast_to"

    def __init__(self, x, shape):
        super().__init__([x], [shape], shape=shape)

    def compute(self, xp, x):
        return (xp.broadcast_to(x, self.params["shape"]),)

    def vjp(self, cots, needs):
        xs, out = self.inputs[0].shape, self.params["shape"]
        lead = len(out) - len(xs)
        axes = tuple(range(lead)) + tuple(
            lead + i for i, n in enumerate(xs) if n == 1 and out[lead + i] != 1
        )
        g = cots[0]
        if axes:
            g = sum(g, axis=axes)
        return [reshape(g, xs)]


class Sum(Operation):
    name = "sum"

    def __init__(self, x, axis):
        out = np.sum(np.empty(x.shape), axis=axis).shape
        super().__init__([x], [out], axis=axis)

    def compute(self, xp, x):
        return (xp.sum(x, axis=self.params["axis"]),)

    def vjp(self, cots, needs):
        xs = self.inputs[0].shape
        axis = self.params["axis"]
        axes = range(len(xs)) if axis is None else axis
        keep = list(xs)
        for a in axes:
            keep[a] = 1
        return [broadcast_to(reshape(cots[0], tuple(keep)), xs)]


def _normalize_index(index):
    if not isinstance(index, tuple):
        index = (index,)
    out = []
    for item in index:
        if isinstance(item, Variable):
            raise NotImplementedError(
                "indexing by a Variable is not supported; index with ints, slices or "
                "constant integer arrays"
            )
        if isinstance(item, (list, np.ndarray)):
            arr = np.asarray(item)
            if arr.dtype.kind not in "iu":
                raise TypeError(f"index arrays must be integer, got dtype {arr.dtype}")
            item = arr
        out.append(item)
    return tuple(out)


class GetItem(Operation):
    name = "getitem"

    def __init__(self, x, index):
        try:
            out = np.empty(x.shape)[index].shape
        except IndexError as e:
            raise IndexError(f"index {index!r} invalid for {x!r} of shape {x.shape}: {e}") from None
        super().__init__([x], [out], index=index)

    def compute(self, xp, x):
        return (x[self.params["index"]],)

    def vjp(self, cots, needs):
        return [ScatterAdd(cots[0], self.inputs[0].shape, self.params["index"]).output]


class ScatterAdd(Operation):
    """zeros(shape) with ``g`` added at ``index`` (the adjoint of indexing)."""

    name = "scatter_add"

    def __init__(self, g, shape, index):
        super().__init__([g], [shape], shape=shape, index=index)

    def compute(self, xp, g):
        shape, index = self.params["shape"], self.params["index"]
        if xp is np:
            out = np.zeros(shape)
            np.add.at(out, index, g)
            return (out,)
        return (xp.zeros(shape, dtype=g.dtype).at[index].add(g),)

    def vjp(self, cots, needs):
        return [GetItem(cots[0], self.params["index"]).output]


class Transpose(Operation):
    name = "transpose"

    def __init__(self, x, axes):
        super().__init__([x], [tuple(x.shape[a] for a in axes)], axes=axes)

    def compute(self, xp, x):
        return (xp.transpose(x, self.params["axes"]),)

    def vjp(self, cots, needs):
        return [transpose(cots[0], tuple(int(a) for a in np.argsort(self.params["axes"])))]


class Stack(Operation):
    name = "stack"

    def __init__(self, xs, axis):
        shape = list(xs[0].shape)
        shape.insert(axis, len(xs))
        super().__init__(xs, [tuple(shape)], axis=axis)

    def compute(self, xp, *xs):
        return (xp.stack(xs, axis=self.params["axis"]),)

    def vjp(self, cots, needs):
        axis = self.params["axis"]
        return [
            getitem(cots[0], (slice(None),) * axis + (i,)) if needs[i] else None
            for i in range(len(self.inputs))
        ]


# --- functional API -----------------------------------------------------------------
def reshape(x, shape):
    x = as_variable(x)
    shape = normalize_shape(shape)
    if -1 in shape:
        shape = np.empty(x.shape).reshape(shape).shape
    if int(np.prod(shape, dtype=np.int64)) != x.size:
        raise ValueError(f"reshape: cannot reshape {x.shape} (size {x.size}) to {shape}")
    if shape == x.shape:
        return x
    return Reshape(x, shape).output


def broadcast_to(x, shape):
    """NumPy broadcasting of ``x`` to ``shape`` (``ValueError`` when impossible)."""
    x = as_variable(x)
    shape = normalize_shape(shape)
    try:
        np.broadcast_shapes(x.shape, shape)
        if np.broadcast_shapes(x.shape, shape) != shape:
            raise ValueError
    except ValueError:
        raise ValueError(f"broadcast_to: cannot broadcast {x.shape} to {shape}") from None
    if shape == x.shape:
        return x
    return BroadcastTo(x, shape).output


def expand(x, out_shape, action: str | None = None):
    """Broadcast ``x`` to ``out_shape``.

    Without ``action``: NumPy broadcasting. With an einsum-like ``action`` such as
    ``'i->ij'`` (new axes are the letters missing on the left; the letters on the left
    must keep their order on the right), ``x`` is repeated along the new axes.
    """
    x = as_variable(x)
    out_shape = normalize_shape(out_shape)
    if action is None:
        return broadcast_to(x, out_shape)
    try:
        src, dst = (s.strip() for s in action.split("->"))
    except ValueError:
        raise ValueError(f"expand: action {action!r} is not of the form 'ij->ijk'") from None
    if len(src) != x.ndim or len(dst) != len(out_shape) or len(set(dst)) != len(dst):
        raise ValueError(f"expand: action {action!r} does not fit {x.shape} -> {out_shape}")
    if [c for c in dst if c in src] != list(src):
        raise NotImplementedError(f"expand: action {action!r} reorders axes; only insertion is supported")
    inter = tuple(x.shape[src.index(c)] if c in src else 1 for c in dst)
    for c, n, m in zip(dst, inter, out_shape):
        if c in src and n != m:
            raise ValueError(f"expand: axis {c!r} has size {n} in {x.shape} but {m} in {out_shape}")
    return broadcast_to(reshape(x, inter), out_shape)


_builtin_sum = sum


def sum(x, axis=None):  # noqa: A001 - CSDL-style name
    """Sum over all elements (``axis=None``), an axis, or a tuple of axes."""
    x = as_variable(x)
    if axis is not None:
        axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
        if any(not -x.ndim <= int(a) < x.ndim for a in axes):
            raise ValueError(f"sum: axis {axis!r} out of range for shape {x.shape}")
        axis = tuple(sorted(int(a) % x.ndim for a in axes))
        if len(set(axis)) != len(axis):
            raise ValueError(f"sum: repeated axis in {axes!r}")
    return Sum(x, axis).output


def getitem(x, index):
    x = as_variable(x)
    return GetItem(x, _normalize_index(index)).output


def transpose(x, axes=None):
    x = as_variable(x)
    axes = tuple(reversed(range(x.ndim))) if axes is None else tuple(int(a) for a in axes)
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError(f"transpose: axes {axes} invalid for shape {x.shape}")
    if axes == tuple(range(x.ndim)):
        return x
    return Transpose(x, axes).output


def stack(xs, axis: int = 0):
    xs = [as_variable(x) for x in xs]
    if not xs:
        raise ValueError("stack: nothing to stack")
    if any(x.shape != xs[0].shape for x in xs):
        raise ValueError(f"stack: shapes differ: {[x.shape for x in xs]}")
    if not 0 <= axis <= xs[0].ndim:
        raise ValueError(f"stack: axis {axis} out of range")
    return Stack(xs, axis).output
