"""The shape of the code base: layers that import only downwards, no circle, short functions.

The package is a house with named floors (README, "Architecture"). Each layer package may
import the shared vocabulary and the layers below it, never one above — at any depth: module
level, inside functions and under ``if TYPE_CHECKING``, since a deferred import is still a
dependency a reader has to follow. These guard the architecture the way the golden test
guards output: a change that points an import upwards, closes a circle or writes an 80-line
function fails here, with the place named.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "ctxcompact"
#: The floors, lowest first. Modules directly in ``ctxcompact/`` are the shared vocabulary
#: (``ir``, ``errors``, ``status``, ``names``, ``markers``, ``config``, ``caches``), floor 0.
LAYERS = (
    "transcripts",
    "llm",
    "accounting",
    "offload",
    "compaction",
    "batch",
    "evaluation",
    "agents",
    "output",
    "cli",
)
#: The library facade and the entry point stand above every floor.
TOP = {"ctxcompact", "ctxcompact.__main__"}
MAX_FUNCTION_LINES = 80
#: A module past this holds two concepts; split it by concept (not to pass this bar).
MAX_MODULE_LINES = 600


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def floor(module: str) -> int:
    parts = module.split(".")
    if len(parts) > 2 or (len(parts) == 2 and (PACKAGE / parts[1]).is_dir()):
        return LAYERS.index(parts[1]) + 1
    return 0


def imports_at_any_depth(name: str, path: Path) -> set[str]:
    """Every ctxcompact module ``name`` imports anywhere in its text. ``from ctxcompact import
    __version__`` is vocabulary (the root package's own constant), not an import of the facade."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert not node.level, f"{name}: relative import (use absolute ctxcompact.… paths)"
            base = node.module or ""
            if base == "ctxcompact" and all(a.name == "__version__" for a in node.names):
                continue
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: imports_at_any_depth(name, path) for name, path in MODULES.items()}


def test_every_layer_is_a_package_with_a_charter() -> None:
    for layer in LAYERS:
        init = PACKAGE / layer / "__init__.py"
        assert init.is_file(), f"ctxcompact/{layer}/ is not a package"
        if layer != "cli":
            assert ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))), f"{layer}: no charter"
    vocabulary = sorted(m for m in MODULES if floor(m) == 0 and m not in TOP)
    assert vocabulary == [
        "ctxcompact.caches",
        "ctxcompact.config",
        "ctxcompact.errors",
        "ctxcompact.ir",
        "ctxcompact.markers",
        "ctxcompact.names",
        "ctxcompact.status",
    ], "a new module at the top of ctxcompact/ belongs in a layer package"


def test_imports_only_point_down() -> None:
    upward = [
        f"{name} (floor {floor(name)}) imports {target} (floor {floor(target)})"
        for name, targets in GRAPH.items()
        if name not in TOP
        for target in sorted(targets)
        if target in TOP or floor(target) > floor(name)
    ]
    assert not upward, "imports pointing up the layers:\n" + "\n".join(upward)


def test_no_import_circle_at_any_depth() -> None:
    # A package imports its parents implicitly; that edge is not a circle of ours.
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(GRAPH[node]):
            if node.startswith(nxt + "."):
                continue
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for name in sorted(GRAPH):
        if name not in state:
            visit(name)
    assert not cycles, "import circles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_layer_test_sees_deferred_and_type_checking_imports() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ctxcompact.output.json import eval_json\n"
        "def f():\n    import ctxcompact.cli\n"
    )
    path = ROOT / "tests" / "_layer_probe.py"
    try:
        path.write_text(source, encoding="utf-8")
        found = imports_at_any_depth("probe", path)
    finally:
        path.unlink()
    assert {"ctxcompact.output.json", "ctxcompact.cli"} <= found


def test_no_module_over_the_line_bar() -> None:
    over = {
        str(p.relative_to(ROOT)): n
        for p in MODULES.values()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not over, f"modules over {MAX_MODULE_LINES} lines: {over}"


def test_no_function_over_the_line_bar() -> None:
    """Typer command functions count their body only: their signature is option declarations."""
    long = []
    for path in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = node.body[0]
                if (
                    isinstance(first, ast.Expr)
                    and isinstance(first.value, ast.Constant)
                    and len(node.body) > 1
                ):
                    first = node.body[1]  # the docstring is prose, not code
                start = first.lineno if path.parent.name == "cli" else node.lineno
                length = (node.end_lineno or node.lineno) - start + 1
                if length > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({length} lines)")
    assert not long, "functions over the bar:\n" + "\n".join(long)


#: Citations a reader of the repository cannot open: the requirement notes' feature numbers,
#: the product spec's sections, the tracker's issue numbers.
UNOPENABLE = re.compile(r"\b(?:[Ss]eed 00\d|F-\d{3}|UC-\d{3}|FR-\d|SPEC §|[Ii]ssue \d+)")
DECISION = re.compile(r"docs/decisions/[\w.-]+\.md")


def test_the_code_states_its_rules_instead_of_citing_them() -> None:
    """A comment says the rule itself, or links a decision record that is in the repository."""
    cited = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in MODULES.values()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if UNOPENABLE.search(line)
    ]
    assert not cited, "state the rule, or link docs/decisions/:\n" + "\n".join(cited)
    linked = {m for p in MODULES.values() for m in DECISION.findall(p.read_text(encoding="utf-8"))}
    assert linked, "the decision records are linked from the code"
    assert all((ROOT / m).is_file() for m in linked), sorted(m for m in linked if not (ROOT / m).is_file())
