"""Old public names, still importable for a while, with a DeprecationWarning."""
import importlib
import warnings
from typing import Any, Callable, Dict, Optional, Tuple


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


def moved(
    module: str, new_module: str, renamed: Optional[Dict[str, str]] = None
) -> Tuple[Callable[[str], Any], Callable[[], Any]]:
    """A module-level ``__getattr__`` and ``__dir__`` for a module that moved
    to `new_module`: any name of the new module is served with a warning that
    names its new home; an old name of `renamed` ({old: new}) is served as its
    new name, with a warning that names both. The new module is imported on
    first use, so the old path costs nothing until it is read."""
    renamed = dict(renamed or {})

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):  # import machinery and tools probing the module
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        target = importlib.import_module(new_module)
        new = renamed.get(name, name)
        if not hasattr(target, new):
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        if name in renamed:
            message = f"{module}.{name} is now called {new} and lives in {new_module}"
        else:
            message = f"{module} has moved to {new_module}: import {name} from there"
        warnings.warn(f"{message}; the old path will be removed in a later release.", DeprecationWarning, stacklevel=2)
        return getattr(target, new)

    def __dir__() -> Any:
        return sorted(set(dir(importlib.import_module(new_module))) | set(renamed))

    return __getattr__, __dir__
