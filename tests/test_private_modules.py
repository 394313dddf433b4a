"""The private-module convention (docs/design.md, "Conventions"): inside every package of
aragog the implementation modules are ``_name.py`` and the package re-exports the public
names; tools, docs and tests import an exported name from its package, never from the
``_name`` module that defines it. Files are read with :mod:`ast` / text; nothing of
aragog is imported except the packages whose ``__all__`` is checked.
"""

from __future__ import annotations

import ast
import importlib
import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "aragog"

#: modules inside packages that are public as a whole: the upstream aragog's import
#: paths, which PROTEUS imports by name (docs/compat.md)
PUBLIC_MODULES = {"eos/entropy.py", "solver/cvode_jax.py", "solver/entropy_solver.py", "jax/eos.py", "jax/nondim.py",
                  "jax/phase.py", "jax/solver.py"}


def test_package_modules_are_private_or_listed():
    public = sorted(
        str(path.relative_to(SRC)) for path in SRC.rglob("*.py")
        if path.parent != SRC and not path.name.startswith("_")
        and not any(part.startswith("_") for part in path.relative_to(SRC).parts[:-1]))  # a private package's
    assert public == sorted(PUBLIC_MODULES), (
        "modules of aragog's packages without a leading underscore (name them _module.py and "
        f"re-export their public names, or list them in PUBLIC_MODULES): {sorted(set(public) - PUBLIC_MODULES)}")


def _private_imports(path: pathlib.Path):
    """(package, private module, names, line) of every ``from aragog.pkg._mod import ...``."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".md":  # the Python code blocks of a doc
        blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
        text = "\n".join(blocks)
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            pkg, _, mod = node.module.rpartition(".")
            if pkg.startswith("aragog.") and mod.startswith("_") and not mod.startswith("__"):
                yield pkg, mod, [a.name for a in node.names], node.lineno


def _consumer_files():
    for folder in ("tools", "tests", "docs"):
        yield from sorted((REPO / folder).rglob("*.py" if folder != "docs" else "*.md"))
    yield REPO / "README.md"


def test_exported_names_are_imported_from_their_package():
    wrong = []
    for path in _consumer_files():
        if not path.is_file():
            continue
        for pkg, mod, names, line in _private_imports(path):
            exported = set(getattr(importlib.import_module(pkg), "__all__", ()))
            public = sorted(set(names) & exported)
            if public:
                wrong.append(f"{path.relative_to(REPO)}:{line}: {', '.join(public)} from {pkg}.{mod} "
                             f"(import them from {pkg})")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("package", sorted(
    ".".join(("aragog",) + p.parent.relative_to(SRC).parts) for p in SRC.rglob("__init__.py") if p.parent != SRC))
def test_every_exported_name_exists(package):
    """``__all__`` lists only names the package gives (lazy ones included)."""
    mod = importlib.import_module(package)
    missing = [name for name in getattr(mod, "__all__", ()) if not hasattr(mod, name)]
    assert not missing, f"{package}.__all__ names what it does not have: {missing}"
