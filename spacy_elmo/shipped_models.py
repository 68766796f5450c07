"""The biLMs that ship inside the package, found by name.

    shipped_model("elmo-en-small")  # its folder in the installed package, its files checked

Each is a folder of its own name under ``spacy_elmo/pretrained/``, package
data that the wheel carries (setup.cfg) and that is found through
`importlib.resources`, so nothing depends on the current folder. A folder holds
what `pretrain` exports (options.json, weights.hdf5, vocab.txt, softmax.hdf5,
pretrain.json), the model card (README.md) and SHA256SUMS: the SHA-256 of
each of the other files, one ``<SHA-256>  <file name>`` line each, as
``sha256sum`` writes them.

Every file SHA256SUMS lists is checked against it when the model is asked
for. A file is hashed once per process for each stamp (size and modification
time) it has: a second load of an unchanged model costs one ``stat`` per
file. A file that is missing or differs, or a SHA256SUMS that does not read,
is E710, and nothing is loaded.
"""

import importlib.resources
import re
from pathlib import Path
from typing import Dict, List, Tuple, Union

from .errors import DamagedFileError, InputError
from .util import file_digest

ELMO_EN_SMALL = "elmo-en-small"  # the project's English biLM, the configs' default
SHIPPED_MODELS = (ELMO_EN_SMALL,)
SUMS_NAME = "SHA256SUMS"
PRETRAINED_PACKAGE = "spacy_elmo.pretrained"  # the shipped models' folder, a package of data
# A line of SHA256SUMS: the digest, a space, " " (text) or "*" (binary), a file name in the folder.
_SUM_LINE = re.compile(r"(?P<sha256>[0-9a-fA-F]{64}) [ *](?P<name>[^/\\]+)")
# (file, its expected SHA-256) -> (size, mtime_ns) of the file when it was found to match.
_VERIFIED: Dict[Tuple[Path, str], Tuple[int, int]] = {}


def is_shipped(name_or_path: Union[str, Path]) -> bool:
    """Whether `name_or_path` is the name of a shipped model (a str, never a Path)."""
    return isinstance(name_or_path, str) and name_or_path in SHIPPED_MODELS


def pretrained_dir() -> Path:
    """The folder of the shipped models in the installed package (installed as
    files, as pip installs a wheel)."""
    return Path(str(importlib.resources.files(PRETRAINED_PACKAGE)))


def shipped_model(name: str) -> Path:
    """The folder of the shipped model `name`, once each file its SHA256SUMS
    lists is found to match it (E710 otherwise; E701 for a name that is not one
    of SHIPPED_MODELS)."""
    if not is_shipped(name):
        raise InputError("E701", found=name, names=", ".join(SHIPPED_MODELS))
    folder = pretrained_dir() / name
    for path, sha256 in _listed_files(name, folder):
        _check_file(name, path, sha256)
    return folder


def _listed_files(name: str, folder: Path) -> List[Tuple[Path, str]]:
    """(path, SHA-256) of each file the folder's SHA256SUMS lists."""
    sums = folder / SUMS_NAME
    try:
        lines = sums.read_text(encoding="utf8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise _damaged(name, sums, f"cannot be read ({getattr(err, 'strerror', None) or err})") from err
    listed = []
    for number, line in enumerate(lines, start=1):
        match = _SUM_LINE.fullmatch(line.rstrip("\r"))
        if match:
            listed.append((folder / match["name"], match["sha256"].lower()))
        elif line.strip():
            raise _damaged(name, sums, f"has a line {number} that is not '<SHA-256>  <file name>': {line[:80]!r}")
    if not listed:
        raise _damaged(name, sums, "lists no files")
    return listed


def _check_file(name: str, path: Path, sha256: str) -> None:
    """E710 unless the file's SHA-256 is `sha256`; hashed only when its stamp
    is not one it was found to match at before."""
    try:
        stat = path.stat()
    except OSError as err:
        raise _damaged(name, path, f"cannot be read ({err.strerror or err})") from err
    stamp = (stat.st_size, stat.st_mtime_ns)
    if _VERIFIED.get((path, sha256)) == stamp:
        return
    try:
        found = file_digest(path)["sha256"]
    except OSError as err:
        raise _damaged(name, path, f"cannot be read ({err.strerror or err})") from err
    if found != sha256:
        raise _damaged(name, path, f"has the SHA-256 {found}, expected {sha256}")
    _VERIFIED[(path, sha256)] = stamp


def _damaged(name: str, path: Path, problem: str) -> DamagedFileError:
    folder = path.parent
    return DamagedFileError("E710", name=name, path=path, problem=problem, sums=folder / SUMS_NAME, folder=folder)
