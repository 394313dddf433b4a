"""What a compiled XLA program runs: its kernels, read from the optimized HLO text.

XLA:CPU runs each instruction of the entry computation of an executable as one kernel
(a fused loop, a gather, a copy, ...); at the few hundred points of an aragog program a
kernel's fixed cost is comparable to its arithmetic, so the count is what the speed of the
right-hand side depends on (docs/solver.md, "Speed"). :func:`kernel_counts` counts them
for tests (a regression shows as a larger count) and for ``tools/profile_solves.py`` (stage first-solve).
"""

from __future__ import annotations

import re

__all__ = ["kernel_counts"]

# Instructions of the entry computation that are bookkeeping, not kernels.
_NOT_KERNELS = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}
_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*\S+\s+([\w\-]+)\(", re.MULTILINE)


def kernel_counts(compiled) -> dict[str, int]:
    """Kernels of a compiled program (a ``jax.stages.Compiled``, or its HLO text).

    Returns ``{"kernels": ..., "fusions": ..., "gathers": ..., "partitioned": ...}``:
    kernels run by the entry computation, how many of them are fusions, gather
    instructions anywhere in the program (each a memory lookup kernel or part of one),
    and kernels XLA split across threads (``outer_dimension_partitions``; each costs a
    hand-off to another thread per call).
    """
    text = compiled if isinstance(compiled, str) else compiled.as_text()
    start = text.find("\nENTRY")
    entry = text[start:] if start >= 0 else text
    end = entry.find("\n}")
    entry = entry[:end] if end >= 0 else entry
    ops = _INSTR.findall(entry)
    kernels = [op for op in ops if op not in _NOT_KERNELS]
    partitioned = len(re.findall(r'outer_dimension_partitions":\["[^\]]+\]', text))
    return {
        "kernels": len(kernels),
        "fusions": sum(op == "fusion" for op in kernels),
        "gathers": len(re.findall(r"\sgather\(", text)),
        "partitioned": partitioned,
    }
