"""The package's import arrows point one way (docs: README "Layout").

cli → graphs → nodes → prompts/state/tools; ``eval`` uses graphs; tools never import nodes, graphs,
eval or the CLI; nodes never import eval; prompts (and their parsers) need no tool; state is plain
data; ``causalrag.text`` is a leaf; no backend imports the factory; and no import circle anywhere
(imports inside functions count: a lazy import still ties two modules).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "causalrag"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def import_nodes(name: str, *, runtime: bool = False) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of module ``name``; ``runtime=True`` leaves out those under ``if TYPE_CHECKING:``."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(), str(path))
    typing_only = {
        id(n)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
        for statement in block.body
        for n in ast.walk(statement)
    }
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom)) and not (runtime and id(n) in typing_only)
    ]


def imported(name: str, *, runtime: bool = False) -> set[str]:
    """The causalrag modules ``name`` imports (``from package import module`` names the module)."""
    found: set[str] = set()
    for node in import_nodes(name, runtime=runtime):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            targets = [f"{node.module}.{alias.name}" for alias in node.names]
        for target in targets:
            while target and target not in MODULES:  # a name imported from a module → that module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


GRAPH = {name: imported(name) for name in MODULES}
RUNTIME = {name: imported(name, runtime=True) for name in MODULES}
"""Without the imports that only type checkers run (``if TYPE_CHECKING:``)."""


def under(name: str, *prefixes: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def arrows(source: tuple[str, ...], target: tuple[str, ...]) -> list[str]:
    return sorted(f"{a} → {b}" for a, deps in GRAPH.items() if under(a, *source) for b in deps if under(b, *target))


@pytest.mark.parametrize(
    ("source", "forbidden"),
    [
        (("causalrag.tools",), ("causalrag.nodes", "causalrag.graphs", "causalrag.eval", "causalrag.cli")),
        (("causalrag.nodes",), ("causalrag.graphs", "causalrag.eval", "causalrag.cli")),
        (
            ("causalrag.prompts",),
            ("causalrag.tools", "causalrag.nodes", "causalrag.graphs", "causalrag.eval", "causalrag.cli"),
        ),
        (("causalrag.tools.backends",), ("causalrag.tools.llm",)),
    ],
    ids=["tools", "nodes", "prompts", "backends"],
)
def test_no_arrow_points_back_up(source, forbidden):
    assert arrows(source, forbidden) == []


def test_state_is_plain_data():
    allowed = (
        "causalrag.state",
        "causalrag.config",
        "causalrag.errors",
    )  # errors: a leaf (a context names an unknown field)
    found = [
        f"{a} → {b}"
        for a, deps in RUNTIME.items()
        if under(a, "causalrag.state")
        for b in deps
        if not under(b, *allowed)
    ]
    assert found == []


def test_state_names_tools_for_type_checkers_only():
    """A context's ``llm`` and ``store`` are typed by the tools' interfaces, imported only when type checking."""
    interfaces = ("causalrag.tools.backends.base", "causalrag.tools.store")
    typed = {b for a, deps in GRAPH.items() if under(a, "causalrag.state") for b in deps - RUNTIME[a]}
    assert typed == set(interfaces)


def test_absolute_imports_only():
    """Relative imports would hide arrows from this test (and backends/openai.py must never be taken for the pip
    package)."""
    assert [
        name for name in MODULES if any(isinstance(n, ast.ImportFrom) and n.level for n in import_nodes(name))
    ] == []


def test_text_is_a_leaf():
    assert GRAPH["causalrag.text"] == set()


def test_no_import_cycles():
    done: set[str] = set()
    cycles: list[list[str]] = []

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            cycles.append(path[path.index(name) :] + [name])
            return
        if name in done:
            return
        for dep in sorted(GRAPH[name]):
            visit(dep, path + [name])
        done.add(name)

    for name in sorted(GRAPH):
        visit(name, [])
    assert [" → ".join(c) for c in cycles] == []
