"""Atomic file writes and checked reads for the workflow's scripts.

``write_atomic`` goes through the package's ``spacy_elmo.util.atomic_path`` (a
temporary sibling, then ``os.replace``), so an interrupted step never leaves a
half-written output and there is one implementation of the swap. ``read_utf8`` and
``read_json`` read an input file and turn what can be wrong with it (missing, a folder,
not UTF-8, a cut JSON text) into an ``ExperimentError`` naming the file.
"""

import codecs
import json
from pathlib import Path
from typing import Any, Union

from experiments.errors import ExperimentError
from spacy_elmo.util import atomic_path


def write_atomic(path: Union[str, Path], data: Union[bytes, str]) -> None:
    """Write ``data`` to ``path`` through the package's ``atomic_path`` (a temporary
    sibling, then ``os.replace``). Text is encoded as UTF-8; parent folders are created."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)


def read_utf8(path: Union[str, Path], what: str, encoding: str = "utf-8") -> str:
    """A text file that should be ``what``, decoded strictly (``utf-8-sig`` also drops a BOM)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise ExperimentError(path, expected=what, found="a folder") from None
    except OSError as err:
        raise ExperimentError(path, expected=what, found=f"a file that cannot be read ({err.strerror})") from None
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as err:
        bom = encoding == "utf-8-sig" and data.startswith(codecs.BOM_UTF8)
        offset = err.start + (len(codecs.BOM_UTF8) if bom else 0)  # utf-8-sig counts after the BOM
        line = data[:offset].count(b"\n") + 1
        raise ExperimentError(
            f"{path}:{line}",
            expected=f"UTF-8 text ({what})",
            found=f"the byte {data[offset : offset + 1]!r} at offset {offset}",
            fix="convert the file to UTF-8 (e.g. `iconv -f latin1 -t utf-8`) or fetch it again",
        ) from None


def read_json(path: Union[str, Path], what: str) -> Any:
    """A JSON file that should be ``what``; a cut or damaged JSON text is an ``ExperimentError``."""
    text = read_utf8(path, what)
    try:
        return json.loads(text)
    except ValueError as err:  # json.JSONDecodeError: cut or not JSON
        raise ExperimentError(
            path,
            expected=what,
            found=f"text that is not complete JSON ({err})",
            fix="the file was cut or damaged: write or fetch it again",
        ) from None
