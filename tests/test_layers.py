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



def _is_type_checking_block(node: ast.AST) -> bool:
    """``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``): its imports never run."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import that runs, at module level or inside a function, skipping type-checking blocks."""
    found: list[ast.Import | ast.ImportFrom] = []
    pending = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        if _is_type_checking_block(node):
            assert isinstance(node, ast.If)
            pending.extend(node.orelse)
            continue
        pending.extend(ast.iter_child_nodes(node))
    return found


def _dotted(path: Path) -> str:
    """The name a module is imported by (a package by its own name, not ``….__init__``)."""
    return _module_name(path).removesuffix(".__init__")


MODULE_NAMES = {_dotted(path) for path in MODULES}


def _import_graph() -> dict[str, set[str]]:
    """Module → the package modules it imports when it runs; ``from pkg import sub`` names ``pkg.sub``."""
    graph: dict[str, set[str]] = {}
    for path in MODULES:
        source = _dotted(path)
        targets: set[str] = set()
        for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif node.module:
                for alias in node.names:
                    submodule = f"{node.module}.{alias.name}"
                    targets.add(submodule if submodule in MODULE_NAMES else node.module)
        graph[source] = {target for target in targets if target in MODULE_NAMES and target != source}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(components)


def test_the_cycle_finder_finds_a_cycle_and_only_a_cycle() -> None:
    """A ring of three is one component; a tail hanging off it and a lone module are none."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycles() -> None:
    """No two modules import each other, directly or round a ring, even through a function-level import."""
    cycles = _cycles(_import_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" ↔ ".join(cycle) for cycle in cycles)


def test_the_import_graph_sees_function_level_imports_and_skips_type_checking_ones() -> None:
    """The HTTP app imports the web view only inside the function that mounts it, and names the MCP
    server only for type checking: the first is an edge, the second is not."""
    graph = _import_graph()
    assert "ask_fable.surface.ui.app" in graph["ask_fable.surface.http_app"]
    assert "ask_fable.surface.server" not in graph["ask_fable.surface.http_app"]
