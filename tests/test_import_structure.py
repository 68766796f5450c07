"""The library imports one way: each part of ``spacy_elmo`` imports only the parts below it (`LAYERS`),
and no module imports one that imports it back, so the structure drawn from its imports has no circle
and no arrow back up. Every import counts: those inside a function and under ``TYPE_CHECKING`` too.

    python -m pytest -q -p no:cacheprovider tests/test_import_structure.py
"""

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from typing import Dict, Set

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "spacy_elmo"
PACKAGE = PACKAGE_DIR.name
# The parts of the package, lowest first: a folder, or a module at the top ("" the package's __init__).
LAYERS = (
    "pretrained", "errors", "data_classes", "device", "disk", "distributed", "util", "extensions", "",
    "shipped_models", "published_models", "bilm", "embed", "models", "training", "elmo_embedder",
    "layer_mixes", "pipeline", "cli", "__main__",
)  # fmt: skip


def module_name(path: Path) -> str:
    parts = (PACKAGE, *path.relative_to(PACKAGE_DIR).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(module: str, path: Path, modules: Set[str]) -> Set[str]:
    """The package's modules that `module` (the file `path`) imports: ``from . import x`` of a
    submodule x names that submodule, not the package."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    names: Set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rsplit(".", 1)[0]
            target = (f"{base}.{node.module}" if node.module else base) if node.level else node.module
            submodules = {f"{target}.{alias.name}" for alias in node.names} & modules
            names |= submodules if len(submodules) == len(node.names) else {target, *submodules}
        elif isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
    return {name for name in names if name.split(".")[0] == PACKAGE}


def import_graph() -> Dict[str, Set[str]]:
    """{module: the package's modules it imports}, each name cut to a module that exists."""
    paths = {module_name(path): path for path in sorted(PACKAGE_DIR.rglob("*.py"))}
    graph: Dict[str, Set[str]] = {module: set() for module in paths}
    for module, path in paths.items():
        for name in imported(module, path, set(paths)):
            while name not in paths:
                name = name.rsplit(".", 1)[0]
            if name != module:
                graph[module].add(name)
    return graph


def part(module: str) -> str:
    return module.split(".")[1] if "." in module else ""


def test_every_part_of_the_library_is_placed():
    assert {part(module) for module in import_graph()} == set(LAYERS)


def test_no_module_imports_a_part_above_its_own():
    upward = sorted(
        (module, name)
        for module, names in import_graph().items()
        for name in names
        if LAYERS.index(part(name)) > LAYERS.index(part(module))
    )
    assert upward == []


def test_the_imports_between_modules_draw_no_circle():
    try:
        TopologicalSorter(import_graph()).prepare()
    except CycleError as err:
        raise AssertionError(f"a circle of imports: {' -> '.join(err.args[1])}") from None


def test_the_checks_see_relative_imports_and_circles(tmp_path, monkeypatch):
    """The graph is read from relative imports as the library writes them, and a circle is found."""
    package = tmp_path / PACKAGE
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .sub import b\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "b.py").write_text("def f():\n    from ..a import g\n")
    monkeypatch.setattr(__import__(__name__, fromlist=["_"]), "PACKAGE_DIR", package)
    graph = import_graph()
    assert graph[f"{PACKAGE}.a"] == {f"{PACKAGE}.sub.b"} and graph[f"{PACKAGE}.sub.b"] == {f"{PACKAGE}.a"}
    try:
        test_the_imports_between_modules_draw_no_circle()
    except AssertionError as err:
        assert "a circle of imports" in str(err)
    else:
        raise AssertionError("the circle a -> sub.b -> a was not found")
