"""What a solver keeps of its solves for the run history, in memory that grows by a state a solve.

:meth:`EntropySolver.history` (and ``write_netcdf``) reports every output time of the
latest solve and the final state of each earlier solve since ``initialize()``, each
evaluated with the inputs of its own solve. :class:`SolveRecords` keeps exactly that:

- the latest solve: its output times, its states at them and its inputs, as the solve
  left them (replaced by the next solve);
- each earlier solve: its final time and final state vector, appended to growing NumPy
  blocks (n + 1 floats a solve), and the values of the inputs that changed from solve to
  solve (a coupling loop's surface flux and equilibrium temperature: a few floats a solve).
  The inputs that did not change are kept once per *segment* of solves, by reference; a
  segment ends when the structure of the inputs, the state size, an EOS table or the set
  of changing inputs changes, so a run whose mesh changes every solve keeps the mesh's
  arrays of each solve (about 17 arrays of n values), which the history needs to evaluate
  those solves' states.

No integrator result, no output array of an earlier solve and no copy of an earlier
solve's inputs is kept (docs/solver.md, "Memory of a long coupling loop").
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from aragog._jax import jax

__all__ = ["SolveRecords"]

#: a solve's record: output times [yr] (K,), states (K, n), the inputs of the solve
Record = tuple[np.ndarray, np.ndarray, Any]


class _Growing:
    """A NumPy array that grows along its first axis (capacity doubles: amortised O(1))."""

    __slots__ = ("data", "size")

    def __init__(self, row_shape: tuple, capacity: int = 16):
        self.data = np.empty((capacity, *row_shape))
        self.size = 0

    def append(self, row) -> None:
        if self.size == self.data.shape[0]:
            grown = np.empty((2 * self.size, *self.data.shape[1:]))
            grown[: self.size] = self.data
            self.data = grown
        self.data[self.size] = row
        self.size += 1

    def view(self) -> np.ndarray:
        return self.data[: self.size]


def _same(a, b) -> bool:
    """Whether two leaves hold the same value: the same object, or NumPy float64 arrays of
    the same shape and the same bits (a reset rebuilds the small leaves each time)."""
    if a is b:
        return True
    return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype == np.float64
            and a.shape == b.shape and a.tobytes() == b.tobytes())


def _comparable(leaf) -> bool:
    """Whether a changed leaf may be kept as values (a NumPy float64 array; table arrays and
    other device arrays are kept by reference, and a change of them starts a segment)."""
    return isinstance(leaf, np.ndarray) and leaf.dtype == np.float64


class _Segment:
    """Consecutive earlier solves with the same inputs structure, state size and set of
    changing inputs: the first solve's input leaves (by reference), the indices of the
    leaves that change, and per solve its final time, final state and changed values."""

    def __init__(self, treedef, leaves: list, n: int):
        self.treedef, self.leaves, self.n = treedef, leaves, n
        self.varying: tuple[int, ...] | None = None  # set by the segment's second solve
        self.offsets: list[tuple[int, int]] = []  # (offset, size) in a values row, per varying leaf
        self.t = _Growing(())
        self.y = _Growing((n,))
        self.values: _Growing | None = None
        self._same_inputs = None  # the inputs of every solve when nothing changes (built once)

    def accepts(self, treedef, leaves: list, n: int) -> tuple[int, ...] | None:
        """The indices of the changed leaves if a solve with these leaves fits (else ``None``)."""
        if treedef != self.treedef or n != self.n or len(leaves) != len(self.leaves):
            return None
        changed = tuple(i for i, (a, b) in enumerate(zip(leaves, self.leaves)) if not _same(a, b))
        if any(not _comparable(leaves[i]) or np.shape(leaves[i]) != np.shape(self.leaves[i]) for i in changed):
            return None
        if self.varying is not None and not set(changed) <= set(self.varying):
            return None
        return changed

    def add(self, t: float, y, leaves: list, changed: tuple[int, ...]) -> None:
        if self.varying is None and self.t.size == 1:  # the second solve fixes what varies
            self.varying = changed
            sizes = [int(np.size(self.leaves[i])) for i in changed]
            starts = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
            self.offsets = [(int(s), int(k)) for s, k in zip(starts[:-1], sizes)]
            self.values = _Growing((int(starts[-1]),))
            self.values.append(self._row(self.leaves))  # the first solve's values
        if self.values is not None:
            self.values.append(self._row(leaves))
        self.t.append(t)
        self.y.append(y)

    def _row(self, leaves: list) -> np.ndarray:
        return np.concatenate([np.ravel(leaves[i]) for i in self.varying]) if self.varying else np.empty(0)

    def __len__(self) -> int:
        return self.t.size

    def inputs(self, j: int):
        """The inputs of the segment's ``j``-th solve (changed leaves rebuilt from their values;
        one object for every solve of a segment in which nothing changed)."""
        if not self.varying:
            if self._same_inputs is None:
                self._same_inputs = jax.tree_util.tree_unflatten(self.treedef, list(self.leaves))
            return self._same_inputs
        leaves = list(self.leaves)
        row = self.values.view()[j]
        for i, (start, size) in zip(self.varying, self.offsets):
            leaves[i] = row[start:start + size].reshape(np.shape(self.leaves[i])).copy()
        return jax.tree_util.tree_unflatten(self.treedef, leaves)


class SolveRecords:
    """The solves since ``initialize()`` as the history needs them (module docstring)."""

    def __init__(self):
        self._latest: Record | None = None
        self._segments: list[_Segment] = []

    def clear(self) -> None:
        """Forget every solve (a new run)."""
        self._latest = None
        self._segments = []

    def add(self, t, y, inputs) -> None:
        """Record a new solve (output times [yr] (K,), states (K, n), its inputs); the
        previous latest solve keeps only its final time and state."""
        if self._latest is not None:
            self._keep_final(*self._latest)
        self._latest = (np.asarray(t, dtype=np.float64), np.asarray(y), inputs)

    def _keep_final(self, t, y, inputs) -> None:
        leaves, treedef = jax.tree_util.tree_flatten(inputs)
        y_final = np.asarray(y)[-1]
        seg = self._segments[-1] if self._segments else None
        changed = None if seg is None else seg.accepts(treedef, leaves, y_final.shape[0])
        if changed is None:
            seg = _Segment(treedef, leaves, y_final.shape[0])
            self._segments.append(seg)
            changed = ()
        seg.add(float(t[-1]), y_final, leaves, changed)

    def __len__(self) -> int:
        """The number of solves recorded."""
        return sum(len(s) for s in self._segments) + (self._latest is not None)

    def __bool__(self) -> bool:
        return self._latest is not None

    @property
    def latest(self) -> Record:
        """``(t [yr] (K,), y (K, n), inputs)`` of the latest solve: every output time."""
        if self._latest is None:
            raise IndexError("no solve recorded")
        return self._latest

    def latest_final(self) -> Record | None:
        """``(t (1,), y (1, n), inputs)``: the latest solve's final state, or ``None``."""
        if self._latest is None:
            return None
        t, y, inputs = self._latest
        return t[-1:].copy(), np.array(np.asarray(y)[-1:]), inputs  # copies: not views of the solve's arrays

    def previous_final(self) -> Record | None:
        """``(t (1,), y (1, n), inputs)``: the final state of the solve before the latest,
        or ``None`` (fewer than two solves)."""
        if not self._segments:
            return None
        seg = self._segments[-1]
        j = len(seg) - 1
        return seg.t.view()[j:j + 1].copy(), seg.y.view()[j:j + 1].copy(), seg.inputs(j)

    def solves(self) -> Iterator[Record]:
        """Every solve, oldest first: ``(t (1,), y (1, n), inputs)`` for the earlier ones
        (their final state), then the latest with every output time."""
        for seg in self._segments:
            t, y = seg.t.view(), seg.y.view()
            for j in range(len(seg)):
                yield t[j:j + 1], y[j:j + 1], seg.inputs(j)
        if self._latest is not None:
            yield self._latest

    def nbytes(self) -> int:
        """Bytes of the NumPy blocks of the earlier solves (their capacity; the latest
        solve's arrays and the inputs kept by reference are not counted)."""
        blocks = [b for s in self._segments for b in (s.t, s.y, s.values) if b is not None]
        return int(sum(b.data.nbytes for b in blocks))
