"""Read and write one SPIDER-format lookup table file.

The format (SPIDER, Bower et al. 2018; ``docs/eos_tables.md`` has the full description)::

    # 5 NP NS                  <- 2-D table (``# 5 N`` for a 1-D table); 5 = header lines
    # any comment              <- lines 2-4: comments (must start with '#')
    # any comment
    # any comment
    # sP sS sQ                 <- line 5: one scale factor per column
    p s q                      <- data rows; column value * scale = SI value
    ...

2-D tables list (P, S, Q) rows with P varying fastest and S slowest, so there are NP*NS rows
and row ``j*NP + i`` holds (P[i], S[j], Q[j, i]). 1-D tables (solidus, liquidus) list
(P, S) rows.

Round trip: reading gives SI values ``column * scale`` (float64). Writing divides by the
scale and nudges each value by at most a few ulp so that ``written * scale`` reproduces the
SI value bit for bit; numbers are written with ``repr`` (the shortest string that parses
back to the same float64). A table read, written with the scales it was read with, and
read again is therefore bit-identical; with scale 1.0 (what aragog uses for the tables it
generates) the round trip is trivially exact.

All user-causable problems raise :class:`aragog.errors.EOSError` with a one-line message
naming the file and the offending line or value.
"""

from __future__ import annotations

import math
import os
import warnings
from pathlib import Path

import numpy as np

from aragog._atomic import write_text_atomically
from aragog.errors import EOSError

__all__ = ["read_table_2d", "read_table_1d", "write_table_2d", "write_table_1d", "exact_scaled"]

_HEADER_LINES = 5


def _short(text: str, limit: int = 60) -> str:
    """One-line, length-limited rendering of a piece of file text for an error message."""
    text = text.strip().replace("\t", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _read_header(path: Path, ndim: int) -> tuple[tuple[int, ...], np.ndarray, int]:
    """Parse the 5 header lines; return (dimensions, scales, number of characters read)."""
    ncols = ndim + 1
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            lines = [fh.readline() for _ in range(_HEADER_LINES)]
    except OSError as exc:
        raise EOSError(f"{path}: cannot read table file ({exc.strerror})") from None
    form = "'# 5 NP NS' (2-D table)" if ndim == 2 else "'# 5 N' (1-D table)"
    for k, line in enumerate(lines, start=1):
        if not line:
            raise EOSError(f"{path}: file ends in the header at line {k} (a table has 5 header lines)")
        if not line.startswith("#"):
            raise EOSError(f"{path}: header line {k} must start with '#', got '{_short(line)}'")
    tokens = lines[0][1:].split()
    try:
        ints = [int(t) for t in tokens]
    except ValueError:
        ints = []
    if len(ints) != ndim + 1 or ints[0] != _HEADER_LINES or any(n < 2 for n in ints[1:]):
        raise EOSError(f"{path}: line 1 must be {form} with sizes >= 2, got '{_short(lines[0])}'")
    try:
        scales = np.array([float(t) for t in lines[4][1:].split()], dtype=np.float64)
    except ValueError:
        raise EOSError(
            f"{path}: line 5 must list {ncols} numeric column scale factors, got '{_short(lines[4])}'"
        ) from None
    if scales.shape != (ncols,):
        raise EOSError(
            f"{path}: line 5 must list {ncols} column scale factors, got {scales.size}: "
            f"'{_short(lines[4])}'"
        )
    bad = ~np.isfinite(scales) | (scales == 0.0)
    if bad.any():
        raise EOSError(f"{path}: scale factor {float(scales[bad][0])!r} on line 5 is not finite and non-zero")
    return tuple(ints[1:]), scales, ncols


def _diagnose_rows(path: Path, ncols: int) -> None:
    """Slow path after a fast parse failed: find the first malformed data line and raise."""
    with open(path, encoding="ascii", errors="replace") as fh:
        for lineno, line in enumerate(fh, start=1):
            if lineno <= _HEADER_LINES or not line.strip():
                continue
            tokens = line.split()
            if len(tokens) != ncols:
                raise EOSError(f"{path}: line {lineno} has {len(tokens)} columns, expected {ncols}")
            for col, tok in enumerate(tokens, start=1):
                try:
                    float(tok)
                except ValueError:
                    raise EOSError(
                        f"{path}: line {lineno} column {col}: '{_short(tok, 30)}' is not a number"
                    ) from None
    raise EOSError(f"{path}: cannot parse the data rows")  # pragma: no cover - defensive


def _data_line_numbers(path: Path) -> np.ndarray:
    """File line number (1-based) of each non-blank data row (used only for messages)."""
    with open(path, encoding="ascii", errors="replace") as fh:
        return np.array(
            [n for n, line in enumerate(fh, start=1) if n > _HEADER_LINES and line.strip()],
            dtype=np.int64,
        )


def _read_rows(path: Path, ndim: int) -> tuple[tuple[int, ...], np.ndarray, np.ndarray]:
    """Read header and data rows; return (dims, scales (ncols,), scaled data (nrows, ncols))."""
    dims, scales, ncols = _read_header(path, ndim)
    try:
        # np.loadtxt is a C parser (NumPy >= 1.23): ~50 ms for 40 000 rows of 3 columns.
        # comments=None: a stray '#' line among the data is an error, not silently skipped.
        with warnings.catch_warnings():  # an empty body warns; it is reported below instead
            warnings.simplefilter("ignore", UserWarning)
            data = np.loadtxt(path, dtype=np.float64, skiprows=_HEADER_LINES, comments=None, ndmin=2)
    except ValueError:
        _diagnose_rows(path, ncols)
        raise  # pragma: no cover - _diagnose_rows always raises
    if data.size == 0:
        raise EOSError(f"{path}: no data rows after the 5 header lines")
    if data.shape[1] != ncols:
        raise EOSError(f"{path}: data rows have {data.shape[1]} columns, expected {ncols}")
    nrows = math.prod(dims)
    if data.shape[0] != nrows:
        shape = " * ".join(str(d) for d in dims)
        raise EOSError(
            f"{path}: header '# 5 {' '.join(str(d) for d in dims)}' promises {shape} = {nrows} "
            f"rows, the file has {data.shape[0]}"
        )
    finite = np.isfinite(data)
    if not finite.all():
        row, col = np.argwhere(~finite)[0]
        line = _data_line_numbers(path)[row]
        raise EOSError(
            f"{path}: non-finite value {float(data[row, col])!r} on line {line} (data row {row + 1}, "
            f"column {col + 1})"
        )
    return dims, scales, data


def _check_increasing(path: Path, what: str, axis: np.ndarray, line_of) -> None:
    steps = np.diff(axis)
    if not (steps > 0).all():
        k = int(np.argmin(steps > 0))
        raise EOSError(
            f"{path}: {what} axis not strictly increasing: {float(axis[k + 1])!r} follows {float(axis[k])!r} "
            f"(line {line_of(k + 1)})"
        )


def read_table_2d(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Read a 2-D SPIDER table.

    Returns ``(P, S, Q, scales)`` in SI units: ``P`` (NP,) [Pa], ``S`` (NS,) [J kg-1 K-1],
    ``Q`` (NS, NP) with ``Q[j, i]`` the value at (P[i], S[j]), and ``scales`` (3,) the
    column scale factors of line 5. Raises :class:`EOSError` when the file is missing or
    malformed (header, column count, non-finite values, non-rectangular grid,
    non-increasing axes).
    """
    path = Path(path)
    (n_p, n_s), scales, data = _read_rows(path, 2)
    raw_p = data[:, 0].reshape(n_s, n_p)
    raw_s = data[:, 1].reshape(n_s, n_p)

    def line_of(row: int) -> int:  # file line of a data row (error messages only)
        return int(_data_line_numbers(path)[row])

    # Rectangular grid: the P column repeats identically in every S block; S is constant
    # within a block. Compare the scaled text values (exact, before multiplying by scales).
    p_bad = raw_p != raw_p[0]
    if p_bad.any():
        j, i = np.argwhere(p_bad)[0]
        raise EOSError(
            f"{path}: grid not rectangular: P = {float(raw_p[j, i])!r} on line {line_of(j * n_p + i)} "
            f"differs from {float(raw_p[0, i])!r} in the first S block (P must repeat identically "
            f"for every S)"
        )
    s_bad = raw_s != raw_s[:, :1]
    if s_bad.any():
        j, i = np.argwhere(s_bad)[0]
        raise EOSError(
            f"{path}: grid not rectangular: S = {float(raw_s[j, i])!r} on line {line_of(j * n_p + i)} "
            f"differs from {float(raw_s[j, 0])!r} at the start of its block (S must be constant "
            f"within each block of {n_p} rows)"
        )
    P = raw_p[0] * scales[0]
    S = raw_s[:, 0] * scales[1]
    _check_increasing(path, "pressure", P, line_of)
    _check_increasing(path, "entropy", S, lambda k: line_of(k * n_p))
    Q = data[:, 2].reshape(n_s, n_p) * scales[2]
    for name, arr in (("P", P), ("S", S), ("value", Q)):
        if not np.isfinite(arr).all():
            raise EOSError(f"{path}: {name} overflows float64 after scaling by line 5's factor")
    return P, S, Q, scales


def read_table_1d(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Read a 1-D SPIDER table (solidus or liquidus): ``(P (N,) [Pa], S (N,), scales (2,))``.

    P must be strictly increasing. Raises :class:`EOSError` on any defect.
    """
    path = Path(path)
    (_n,), scales, data = _read_rows(path, 1)
    P = data[:, 0] * scales[0]
    S = data[:, 1] * scales[1]
    _check_increasing(path, "pressure", P, lambda k: int(_data_line_numbers(path)[k]))
    if not (np.isfinite(P).all() and np.isfinite(S).all()):
        raise EOSError(f"{path}: values overflow float64 after scaling by line 5's factors")
    return P, S, scales


def exact_scaled(values: np.ndarray, scale: float) -> np.ndarray:
    """Column values ``c`` to write so that ``c * scale`` reproduces ``values`` bit for bit.

    ``values / scale`` is within an ulp or two of such a ``c`` whenever ``values`` was made
    as ``c * scale`` (which is how :func:`read_table_2d` makes it); each mismatching entry is
    nudged by one ulp toward the target, at most 4 times. Always exact for scale 1.0 or a
    power of two (barring overflow). Values that are not representable as a product with
    this scale keep the closest candidate.
    """
    values = np.asarray(values, dtype=np.float64)
    if scale == 1.0:
        return values
    c = values / scale
    for _ in range(4):
        prod = c * scale
        bad = prod != values
        if not bad.any():
            break
        c[bad] = np.nextafter(c[bad], np.where(prod[bad] < values[bad], np.inf, -np.inf))
    return c


def _format_rows(columns: list[np.ndarray]) -> str:
    """Rows of space-separated ``repr`` floats (shortest exact round-trip form)."""
    flat = np.column_stack(columns).ravel().tolist()
    row = " ".join(["%r"] * len(columns)) + "\n"
    return (row * (len(flat) // len(columns))) % tuple(flat)


def _write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (:mod:`aragog._atomic`); failures are EOSError."""
    write_text_atomically(path, text, "EOS table", encoding="ascii", error=EOSError)


def _header(dims: tuple[int, ...], scales, labels: str) -> str:
    return (
        f"# {_HEADER_LINES} {' '.join(str(d) for d in dims)}\n"
        f"# {labels}\n"
        "# column * scaling factor should be SI units\n"
        "# scaling factors (constant) for each column given on line below\n"
        f"# {' '.join(repr(float(s)) for s in scales)}\n"
    )


def write_table_2d(path, P, S, Q, scales=(1.0, 1.0, 1.0), quantity: str = "Quantity") -> None:
    """Write a 2-D SPIDER table; ``Q`` has shape (NS, NP) (``Q[j, i]`` at P[i], S[j]).

    Written atomically. See the module docstring for the bit-exact round trip.
    """
    path = Path(path)
    P = np.asarray(P, dtype=np.float64)
    S = np.asarray(S, dtype=np.float64)
    Q = np.asarray(Q, dtype=np.float64)
    if Q.shape != (S.size, P.size):
        raise EOSError(f"{path}: values have shape {Q.shape}, expected (NS, NP) = ({S.size}, {P.size})")
    sp, ss, sq = (float(s) for s in scales)
    cp = exact_scaled(P, sp)
    cs = exact_scaled(S, ss)
    cq = exact_scaled(Q.ravel(), sq)
    cols = [np.tile(cp, S.size), np.repeat(cs, P.size), cq]
    text = _header((P.size, S.size), (sp, ss, sq), f"Pressure, Entropy, {quantity}") + _format_rows(cols)
    _write_atomically(path, text)


def write_table_1d(path, P, S, scales=(1.0, 1.0)) -> None:
    """Write a 1-D SPIDER table (P, S columns), atomically."""
    path = Path(path)
    P = np.asarray(P, dtype=np.float64)
    S = np.asarray(S, dtype=np.float64)
    if P.shape != S.shape or P.ndim != 1:
        raise EOSError(f"{path}: P and S must be 1-D arrays of equal length, got {P.shape}, {S.shape}")
    sp, ss = (float(s) for s in scales)
    text = _header((P.size,), (sp, ss), "Pressure, Entropy") + _format_rows(
        [exact_scaled(P, sp), exact_scaled(S, ss)]
    )
    _write_atomically(path, text)
