"""Old public names, still importable for a while, with a DeprecationWarning."""
import importlib
import warnings
from typing import Any, Callable, Dict, Iterable, Tuple


def renamed(module: str, names: Dict[str, Tuple[str, Any]]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` serving each old name of `names`
    ({old: (new, object)}) with a warning that names the new one."""

    def __getattr__(name: str) -> Any:
        if name in names:
            new, value = names[name]
            warnings.warn(
                f"{module}.{name} is now called {new}; the old name will be removed in a later release.",
                DeprecationWarning,
                stacklevel=2,
            )
            return value
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


def moved(module: str, new_module: str, names: Iterable[str]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` serving each of `names` from
    `new_module` (imported only when an old name is asked for) with a
    warning that names its new home."""
    names = frozenset(names)

    def __getattr__(name: str) -> Any:
        if name in names:
            warnings.warn(
                f"{module}.{name} has moved to {new_module}.{name}; the old import path will be removed "
                "in a later release.",
                DeprecationWarning,
                stacklevel=2,
            )
            return getattr(importlib.import_module(new_module), name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
