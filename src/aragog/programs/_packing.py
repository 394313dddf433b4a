"""How the leaves of an ``args`` pytree travel into compiled programs (JitPair, BlockPrograms)."""

from __future__ import annotations

import numpy as np

from aragog._jax import jax

__all__ = ["PackLayout"]


class PackLayout:
    """How the args leaves travel into the compiled programs.

    Every argument of a compiled call costs dispatch time (~0.3 us each on CPU), and an
    aragog ``args`` tree has dozens of small leaves (scales, boundary values, mesh arrays).
    So leaves with at most ``pack_max`` elements are packed, per dtype, into one flat
    buffer each and sliced back (static offsets) inside the program; larger leaves (EOS
    tables) are passed as they are, so no program ever slices a big table out of a buffer.
    """

    def __init__(self, specs, pack_max: int):
        self.specs = specs
        groups: dict[np.dtype, list[tuple[int, int, int, tuple]]] = {}
        totals: dict[np.dtype, int] = {}
        self.big: list[int] = []
        for index, (shape, dtype) in enumerate(specs):
            size = int(np.prod(shape, dtype=np.int64))
            if size <= pack_max:
                offset = totals.get(dtype, 0)
                groups.setdefault(dtype, []).append((index, offset, size, shape))
                totals[dtype] = offset + size
            else:
                self.big.append(index)
        self.groups = [(dtype, entries, totals[dtype]) for dtype, entries in groups.items()]
        self.n_inputs = len(self.groups) + len(self.big)

    def abstract_inputs(self) -> list:
        sds = jax.ShapeDtypeStruct
        out = [sds((total,), dtype) for dtype, _, total in self.groups]
        out += [sds(self.specs[i][0], self.specs[i][1]) for i in self.big]
        return out

    def pack(self, leaves: list) -> list:
        """Host-side: the list of call inputs from checked leaves."""
        out = []
        for dtype, entries, total in self.groups:
            buf = np.empty(total, dtype=dtype)
            for index, offset, size, _ in entries:
                buf[offset:offset + size] = np.ravel(np.asarray(leaves[index], dtype=dtype))
            out.append(buf)
        out += [leaves[i] for i in self.big]
        return out

    def unpack(self, inputs) -> list:
        """Traced: the leaves from the call inputs (static slices of the packed buffers)."""
        leaves = [None] * len(self.specs)
        for (dtype, entries, _), buf in zip(self.groups, inputs[: len(self.groups)]):
            for index, offset, size, shape in entries:
                leaves[index] = buf[offset:offset + size].reshape(shape)
        for index, arr in zip(self.big, inputs[len(self.groups):]):
            leaves[index] = arr
        return leaves
