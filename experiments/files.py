"""Atomic file writes for the workflow's scripts.

``write_atomic`` goes through the package's ``spacy_elmo.util.atomic_path`` (a
temporary sibling, then ``os.replace``), so an interrupted step never leaves a
half-written output and there is one implementation of the swap.
"""
from pathlib import Path
from typing import Union

from spacy_elmo.util import atomic_path


def write_atomic(path: Union[str, Path], data: Union[bytes, str]) -> None:
    """Write ``data`` to ``path`` through the package's ``atomic_path`` (a temporary
    sibling, then ``os.replace``). Text is encoded as UTF-8; parent folders are created."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
