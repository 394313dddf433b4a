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


def _private_module(module: str) -> bool:
    """Whether ``module`` (dotted) is aragog's and has a ``_name`` part below ``aragog``."""
    parts = module.split(".")
    return parts[0] == "aragog" and any(p.startswith("_") and not p.startswith("__") for p in parts[1:])


def _private_module_imports(path: pathlib.Path):
    """(line, module) of every import of a private aragog module in ``path``, at any depth
    (inside functions too): ``import aragog.x._y``, ``from aragog.x._y import ...`` and
    ``from aragog.x import _y`` where ``_y`` is a module (``_y.py`` or ``_y/``), not a
    private name of the module ``aragog.x``. One entry per statement."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module] if _private_module(node.module) else [
                f"{node.module}.{alias.name}" for alias in node.names
                if SRC.joinpath(*node.module.split(".")[1:], alias.name).with_suffix(".py").is_file()
                or SRC.joinpath(*node.module.split(".")[1:], alias.name, "__init__.py").is_file()]
        else:
            continue
        private = [module for module in modules if _private_module(module)]
        if private:
            found.append((node.lineno, private[0]))
    return sorted(found)


def test_private_imports_in_tools_and_tests_say_why():
    """docs/design.md, "Private implementation modules": a test or a tool reaches into a
    ``_name`` module only for what is deliberately not public, and says which: every import
    of a private aragog module in tools/ and tests/ carries a ``# private: <why>`` comment
    on the statement's first line or on the line just above it. Nothing is exempt; the
    private imports that tests/test_imports.py and this file name are inside string literals
    and docstrings, which are no import statements to :mod:`ast`."""
    bare = []
    for folder in ("tools", "tests"):
        for path in sorted((REPO / folder).rglob("*.py")):
            lines = path.read_text(encoding="utf-8").splitlines()
            for line, module in _private_module_imports(path):
                above = lines[line - 2].strip() if line > 1 else ""
                if "# private:" not in lines[line - 1] and not above.startswith("# private:"):
                    bare.append(f"{path.relative_to(REPO)}:{line}: {module}")
    assert not bare, ("imports of private modules without a `# private: <why>` comment on the line or the "
                      "line above (import the name from its package if it is exported):\n" + "\n".join(bare))
