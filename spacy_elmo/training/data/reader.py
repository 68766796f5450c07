"""Raw text files and folders to lines of text, bad bytes counted and skipped.

A line ends at "\n", "\r\n" or a lone "\r" (`spacy_elmo.util.split_lines`, the rule
every reader follows). A line that is not valid UTF-8, or holds a NUL byte (binary data), is skipped
whole and counted; it never stops the run. A file whose first 8 KiB are
almost all such lines (an executable, an image, a compressed file) is binary:
it is skipped whole and counted, so that none of its bytes pass for text.
Lines longer than ``max_bytes`` are
read in pieces cut at a space or tab, so a file with one enormous line streams in
bounded memory. Empty lines are counted and skipped.

`pretrain` refuses a binary file outright (E319, before the run folder is
touched); `perplexity` skips one beside text files and warns, and gives E504
when nothing but binary is left.
"""
import codecs
import stat
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Iterator, List, Optional, Union

from ...errors import InputError
from ...util import split_lines

MAX_LINE_BYTES = 100_000
# A file is binary when more than this share of its first BINARY_SAMPLE bytes
# is in lines that are not text (binary files score 0.99 and up).
BINARY_SAMPLE = 8192
BINARY_SHARE = 0.9


@dataclass
class ReadStats:
    """What reading found; bytes_read grows as the lines are consumed."""

    files: int = 0
    lines: int = 0
    empty_lines: int = 0
    skipped_lines: int = 0  # not UTF-8 or binary
    binary_files: int = 0  # skipped whole
    skipped_bytes: int = 0
    bytes_read: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


def find_files(paths: Iterable[Union[str, Path]]) -> List[Path]:
    """The text files under `paths` (files, or folders read recursively), in a fixed order.

    Hidden files and folders (a name starting with ".") inside a folder are left out.
    A path that does not exist is E301; one that is a pipe, a socket or a device E321.
    """
    found: List[Path] = []
    for path in map(Path, paths):
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(
                p for p in sorted(path.rglob("*"))
                if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
        elif path.exists():
            raise InputError("E321", path=path, kind=_kind(path))
        else:
            raise InputError("E301", path=path)
    return found


def _kind(path: Path) -> str:
    """What a path that exists but is neither a file nor a folder is."""
    mode = path.stat().st_mode
    for test, kind in ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return kind
    return "neither a file nor a folder"


def read_lines(files: List[Path], stats: ReadStats, max_bytes: int = MAX_LINE_BYTES) -> Iterator[str]:
    """The non-empty lines of `files`, stripped of surrounding whitespace."""
    for path in files:
        stats.files += 1
        if is_binary(path):
            size = path.stat().st_size
            stats.binary_files += 1
            stats.bytes_read += size
            stats.skipped_bytes += size
            continue
        with path.open("rb") as f:
            first = True
            for raw in split_lines(f, max_bytes):
                stats.bytes_read += len(raw)
                if first and raw.startswith(b"\xef\xbb\xbf"):  # byte-order mark
                    raw = raw[3:]
                first = False
                text = _text(raw)
                if text is None:
                    stats.skipped_lines += 1
                    stats.skipped_bytes += len(raw)
                    continue
                text = text.strip()
                if not text:
                    stats.empty_lines += 1
                    continue
                stats.lines += 1
                yield text


def is_binary(path: Union[str, Path]) -> bool:
    """Whether the file is binary: more than BINARY_SHARE of its first
    BINARY_SAMPLE bytes are in lines that `_text` refuses."""
    with open(path, "rb") as f:
        sample = f.read(BINARY_SAMPLE)
    if sample.startswith(b"\xef\xbb\xbf"):
        sample = sample[3:]
    lines = sample.split(b"\n")
    # The last line may stop inside a character: only the sample ends there.
    bad = sum(len(line) + 1 for line in lines[:-1] if _text(line) is None)
    bad += len(lines[-1]) if _text(lines[-1], final=False) is None else 0
    return bad > BINARY_SHARE * len(sample)


def _text(raw: bytes, final: bool = True) -> Optional[str]:
    """The line as text, or None when it holds a NUL byte (binary data) or is
    not UTF-8. final=False: it may end inside a character."""
    if b"\x00" in raw:
        return None
    try:
        return raw.decode("utf-8") if final else codecs.getincrementaldecoder("utf-8")().decode(raw, final=False)
    except UnicodeDecodeError:
        return None
