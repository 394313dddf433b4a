"""Classes of the solver and of the compiled programs talk through methods, not each other's
private attributes (docs/design.md, "Conventions").

Every module under ``src/aragog/solver`` and ``src/aragog/programs`` is parsed with
:mod:`ast` (nothing is imported). A *private read* is an attribute access ``X._name``
(``_name`` with one leading underscore; dunders like ``__name__`` are not private) where
``X`` is anything but ``self`` or ``cls`` — ``self.pair._program``, ``warm._end``,
``type(self)._x`` all count, reads and writes alike — unless ``X`` is a module the file
imports (``import aragog.solver.backends._sundials as sd``; ``from aragog.solver import
_from_config``), whose private names are the module's own business.

The few that remain are listed in :data:`ALLOWED` with the reason each is there; any
other fails, and so does an entry of :data:`ALLOWED` that no longer occurs (it goes).
Issue 39 cut them from 24 (this checker on the tree before ``aragog.programs`` existed)
to 0.

``python tests/test_private_reads.py`` prints every private read with its file and line.
"""

from __future__ import annotations

import ast
import pathlib

SRC = pathlib.Path(__file__).resolve().parents[1] / "src"
ROOMS = ("aragog/solver", "aragog/programs")

#: the most private reads the rooms may hold (issue 39's target)
MOST = 5

#: ``(file relative to src/, the access as ast.unparse writes it) -> why`` for each private
#: read that stays. Empty: none is left.
ALLOWED: dict[tuple[str, str], str] = {}


def _module_names(tree: ast.Module) -> set[str]:
    """Names the file binds to modules: ``import a.b`` (``a``), ``import a.b as m``
    (``m``) and ``from a import m`` where ``a.m`` is a module under ``src/`` (a ``.py``
    file or a package)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            base = SRC.joinpath(*node.module.split("."))
            for alias in node.names:
                if base.joinpath(alias.name).with_suffix(".py").is_file() or \
                        base.joinpath(alias.name, "__init__.py").is_file():
                    names.add(alias.asname or alias.name)
    return names


def private_reads(path: pathlib.Path) -> list[tuple[int, str]]:
    """``(line, access)`` of every private read of another object in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    modules = _module_names(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        name = node.attr
        if not name.startswith("_") or (name.startswith("__") and name.endswith("__")):
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and (owner.id in ("self", "cls") or owner.id in modules):
            continue
        found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


def all_private_reads() -> list[tuple[str, int, str]]:
    """``(file relative to src/, line, access)`` over both rooms."""
    out = []
    for room in ROOMS:
        for path in sorted(SRC.joinpath(room).rglob("*.py")):
            rel = str(path.relative_to(SRC))
            out += [(rel, line, access) for line, access in private_reads(path)]
    return out


def test_few_private_reads_each_with_a_reason():
    reads = all_private_reads()
    unlisted = [f"{rel}:{line}: {access}" for rel, line, access in reads if (rel, access) not in ALLOWED]
    assert not unlisted, ("reads of another object's private attribute (give its class a method or a "
                          "property, or list it in ALLOWED with why):\n" + "\n".join(unlisted))
    assert len(reads) <= MOST, f"{len(reads)} private reads, at most {MOST}"
    stale = sorted(set(ALLOWED) - {(rel, access) for rel, _, access in reads})
    assert not stale, f"ALLOWED lists private reads that are gone: drop them: {stale}"


def test_the_checker_sees_what_it_should(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import numpy as np\n"
        "from aragog.solver import _from_config\n"
        "class A:\n"
        "    def f(self, other):\n"
        "        self._a = other._b\n"          # 5: other._b
        "        self.pair._program('rhs')\n"   # 6: self.pair._program
        "        other._c = 1\n"                # 7: a write counts too
        "        np._x; _from_config._y\n"      # module aliases: no
        "        return type(self).__name__, cls_._d\n"  # 9: dunder no, cls_._d yes
    )
    assert private_reads(probe) == [(5, "other._b"), (6, "self.pair._program"), (7, "other._c"), (9, "cls_._d")]


if __name__ == "__main__":
    reads = all_private_reads()
    for rel, line, access in reads:
        print(f"{rel}:{line}: {access}" + (f"  ({ALLOWED[rel, access]})" if (rel, access) in ALLOWED else ""))
    print(f"{len(reads)} private reads (at most {MOST})")
