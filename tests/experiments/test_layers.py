"""The workflow's code imports one way: each part of ``experiments`` imports only the parts below it
(`LAYERS`), so the structure drawn from its imports has no circle and no arrow back up. Every import
counts, those inside a function too.

    python -m pytest -q -p no:cacheprovider tests/experiments/test_layers.py
"""

import ast
from collections import defaultdict
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from typing import Dict, Set

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "experiments"
# The parts of the package, lowest first: a folder, or a module at the top.
LAYERS = ("errors", "files", "records", "data", "convert", "engine", "report", "demo", "studies", "pretrain_for_budget")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> Set[str]:
    """The modules of the package that ``path`` imports."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
        elif isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
    return {name for name in names if name.split(".")[0] == PACKAGE}


def import_graph() -> Dict[str, Set[str]]:
    """{module: the package's modules it imports}, each name cut to a module that exists."""
    modules = {module_name(path): path for path in sorted((ROOT / PACKAGE).rglob("*.py"))}
    graph = defaultdict(set)
    for module, path in modules.items():
        for name in imported(path):
            while name not in modules:
                name = name.rsplit(".", 1)[0]
            if name != module:
                graph[module].add(name)
    return {module: graph[module] for module in modules}


def part(module: str) -> str:
    return module.split(".")[1] if "." in module else module


def test_every_part_of_the_workflows_code_is_placed():
    assert {part(module) for module in import_graph() if module != PACKAGE} == set(LAYERS)


def test_no_module_imports_a_part_above_its_own():
    upward = sorted(
        (module, name)
        for module, names in import_graph().items()
        for name in names
        if module != PACKAGE and LAYERS.index(part(name)) > LAYERS.index(part(module))
    )
    assert upward == []


def test_the_imports_between_modules_draw_no_circle():
    try:
        TopologicalSorter(import_graph()).prepare()
    except CycleError as err:
        raise AssertionError(f"a circle of imports: {' -> '.join(err.args[1])}") from None
