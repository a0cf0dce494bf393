"""Imports go one way: entry points → surface → core → contract → backends → stores → settings → bottom.

Every module of the package has a rank: the layer packages by their directory, the top-level modules
by name. No module imports from a module of a higher rank, and every top-level module is ranked, so
a new one has to say where it belongs.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "ask_fable"

#: The shared bottom (errors, clock, value models, redaction, private files) imports nothing above it.
BOTTOM = 0
SETTINGS = 1
RANK_OF_LAYER = {"stores": 2, "backends": 3, "core": 5, "surface": 6}
RANK_OF_MODULE = {
    "__init__": BOTTOM,
    "errors": BOTTOM,
    "clock": BOTTOM,
    "values": BOTTOM,
    "redact": BOTTOM,
    "files": BOTTOM,
    # Effects, scopes, tenants and the caller: read by the stores and every layer above.
    "access": BOTTOM,
    "config_sources": SETTINGS,
    "config": SETTINGS,
    # The result models: built by the core's modes and pipeline, published by the surface.
    "contract": 4,
    # Entry points: nothing imports them.
    "config_docs": 7,
    "backend_docs": 7,
    "cli": 7,
    "__main__": 7,
}
MODULES = sorted(PACKAGE.rglob("*.py"))


def _rank(module: str) -> int | None:
    """The rank of a dotted ``ask_fable.…`` module name, None when it is not one of ours."""
    parts = module.split(".")
    if parts[0] != "ask_fable":
        return None
    if len(parts) == 1:
        return RANK_OF_MODULE["__init__"]
    return RANK_OF_LAYER.get(parts[1], RANK_OF_MODULE.get(parts[1]))


def _module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE).with_suffix("")
    return ".".join(("ask_fable", *relative.parts))


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            # ``from ask_fable import config`` imports the module ``ask_fable.config``.
            if node.module == "ask_fable":
                names.update(f"ask_fable.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_every_top_level_module_has_a_rank() -> None:
    """A new top-level module must be placed in a layer before it can be imported."""
    top_level = {path.stem for path in PACKAGE.glob("*.py")}
    assert top_level == set(RANK_OF_MODULE)
    assert {path.name for path in PACKAGE.iterdir() if path.is_dir() and path.name != "__pycache__"} == set(
        RANK_OF_LAYER
    )


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_from_a_higher_layer(path: Path) -> None:
    """Lazy and type-checking-only imports count too: a lower layer never reaches up."""
    own = _rank(_module_name(path))
    assert own is not None
    upward = sorted(
        name for name in _imported(path)
        if (rank := _rank(name)) is not None and rank > own
    )
    assert not upward, f"{path.relative_to(PACKAGE)} (rank {own}) imports {upward}"

