"""Atomic file output for :mod:`aragog.io` and :mod:`aragog.grid`: a re-export of the one
implementation, :mod:`aragog._atomic` (which the EOS writer and the CLI use as well;
:mod:`aragog.eos` must not import :mod:`aragog.io`).
"""

from __future__ import annotations

from aragog import _atomic
from aragog._atomic import TEMP_SUFFIX, atomic_output, write_text_atomically

__all__ = ["atomic_output", "write_text_atomically", "TEMP_SUFFIX"]

#: The ``os`` module the helper calls (the same module object: patching
#: ``aragog.io._atomic.os.open`` patches the helper's call).
os = _atomic.os
