"""The layers hold: surface → core → backends → stores, and no module imports from a layer above its own."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "ask_fable"
RANK = {"stores": 0, "backends": 1, "core": 2, "surface": 3}
MODULES = sorted(path for layer in RANK for path in (PACKAGE / layer).rglob("*.py"))


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_from_a_higher_layer(path: Path) -> None:
    """Lazy imports inside functions count too: a lower layer never reaches up."""
    layer = path.relative_to(PACKAGE).parts[0]
    upward = sorted(
        name for name in _imported(path)
        if name.startswith("ask_fable.") and RANK.get(name.split(".")[1], -1) > RANK[layer]
    )
    assert not upward, f"{path.relative_to(PACKAGE)} ({layer}) imports {upward}"
