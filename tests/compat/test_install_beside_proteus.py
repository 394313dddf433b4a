"""Installing this package in a PROTEUS environment (docs/compat.md, "Using this package in
PROTEUS"): PROTEUS requires the upstream's distribution, fwl-aragog, which installs the same
import package; this package says so at import when both are installed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import aragog
# private: the import-time check and its warning class, called directly
from aragog._environment import SharedImportPackageWarning, other_distributions, warn_if_shared


def _fake_distribution(root: Path, name="fwl_aragog", version="26.10.22") -> Path:
    """A dist-info folder as pip leaves it for fwl-aragog (metadata only: what the check reads)."""
    info = root / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fwl-aragog\nVersion: {version}\n")
    (info / "top_level.txt").write_text("aragog\n")
    return root


def test_no_warning_without_the_upstream_distribution(recwarn):
    if other_distributions():
        pytest.skip("fwl-aragog is installed in this environment")
    warn_if_shared(aragog.__version__, "here")
    assert not [w for w in recwarn if issubclass(w.category, SharedImportPackageWarning)]


def test_import_warns_when_fwl_aragog_is_installed_too(tmp_path):
    """A fresh interpreter that sees an fwl-aragog distribution beside this package warns
    once at ``import aragog``, naming both, with the way out; the import still works."""
    site = _fake_distribution(tmp_path / "site")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), *sys.path]))
    code = "import warnings; warnings.simplefilter('always'); import aragog; print('imported', aragog.__version__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"imported {aragog.__version__}" in out.stdout
    assert out.stderr.count("SharedImportPackageWarning") == 1
    for needle in (f"aragog {aragog.__version__}", "fwl-aragog 26.10.22", "pip uninstall fwl-aragog",
                   "Using this package in PROTEUS"):
        assert needle in out.stderr, needle
