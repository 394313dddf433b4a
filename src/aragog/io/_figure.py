"""Writing a matplotlib figure as a PNG, the one way every aragog plot does it: the Agg
canvas (no pyplot, no display), a style context, and an atomic write."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from aragog.errors import AragogError
from aragog.io._atomic import atomic_output

__all__ = ["write_png"]


def write_png(out: Path, what: str, figsize: tuple[float, float], draw: Callable[[Any], None], *,
              style: Mapping[str, Any], dpi: int) -> Path:
    """Make a figure of ``figsize`` inches, let ``draw(fig)`` fill it under the rcParams
    ``style``, and write it to ``out`` as a PNG at ``dpi`` (atomically: a reader never sees
    half a file). ``what`` names the figure in errors. Raises :class:`AragogError` when
    matplotlib is missing or the file cannot be written."""
    try:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise AragogError(f"the {what} needs matplotlib: pip install matplotlib") from None

    with matplotlib.rc_context(dict(style)):
        fig = Figure(figsize=figsize, layout="constrained")
        FigureCanvasAgg(fig)
        draw(fig)
        with atomic_output(out, what) as tmp:
            fig.savefig(tmp, format="png", dpi=dpi, facecolor="white")
    return out
