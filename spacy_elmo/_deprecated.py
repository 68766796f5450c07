"""Old public names, still importable for a while, with a DeprecationWarning."""
import warnings
from typing import Any, Callable, Dict, Tuple


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
