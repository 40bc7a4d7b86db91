"""The packages' imports point one way (DESIGN.md §3): store ← adapters ← interventions ← engine,
and analysis reads store. A backward import compiles and runs, so nothing else would catch it
until the layers had grown into each other; this reads every module's imports, also those made
inside functions, and names each one that crosses a line it should not."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("store", "adapters", "interventions", "engine", "analysis")

# What each package may import of the project's own packages (itself always).
ALLOWED = {
    "store": set(),
    "adapters": {"store"},
    "interventions": {"store", "adapters"},
    "engine": {"store", "adapters", "interventions", "analysis"},
    "analysis": {"store"},
}
# The log is the foundation every other part and every future tool reads: it stays light.
STORE_THIRD_PARTY = {"msgspec", "lmdb"}


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, top-level module) of each import in a file; relative imports resolved against
    the file's package."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = path.relative_to(ROOT).parent.parts
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)] or package
                found.append((node.lineno, base[0]))
            elif node.module:
                found.append((node.lineno, node.module.split(".")[0]))
    return found


def modules_of(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def test_every_package_has_modules():
    for package in PACKAGES:
        assert modules_of(package), f"no modules found under {package}/"


@pytest.mark.parametrize("package", PACKAGES)
def test_imports_point_one_way(package):
    others = set(PACKAGES) - {package} - ALLOWED[package]
    wrong = [f"{path.relative_to(ROOT)}:{line} imports {module}"
             for path in modules_of(package)
             for line, module in imported_modules(path) if module in others]
    assert not wrong, f"{package} may import only {sorted(ALLOWED[package]) or 'itself'}:\n" \
        + "\n".join(wrong)


def test_store_needs_only_msgspec_lmdb_and_the_standard_library():
    allowed = set(sys.stdlib_module_names) | STORE_THIRD_PARTY | {"store", "__future__"}
    wrong = [f"{path.relative_to(ROOT)}:{line} imports {module}"
             for path in modules_of("store")
             for line, module in imported_modules(path) if module not in allowed]
    assert not wrong, "\n".join(wrong)


def test_the_checker_sees_a_backward_import(tmp_path, monkeypatch):
    """The checker itself: an import inside a function and a relative one are both found."""
    fake_root = tmp_path
    (fake_root / "store" / "sub").mkdir(parents=True)
    module = fake_root / "store" / "sub" / "m.py"
    module.write_text("def f():\n    import engine.cli\nfrom .. import chain\nfrom . import x\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", fake_root)
    assert sorted(imported_modules(module)) == [(2, "engine"), (3, "store"), (4, "store")]
