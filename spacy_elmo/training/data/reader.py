"""Raw text files and folders to lines of text, bad bytes counted and skipped.

A line that is not valid UTF-8, or holds a NUL byte (binary data), is skipped
whole and counted; it never stops the run. Lines longer than ``max_bytes`` are
read in pieces cut at whitespace, so a file with one enormous line streams in
bounded memory. Empty lines are counted and skipped.

A whole file is binary when its first block holds a NUL byte (UTF-8 text
never does; UTF-16 text, an executable or an archive do): `is_binary`.
"""
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator, List, Union

from ...errors import ElmoError, Errors

MAX_LINE_BYTES = 100_000
SNIFF_BYTES = 8192  # how much of a file `is_binary` reads
_WHITESPACE = b" \t\x0b\x0c\r"


@dataclass
class ReadStats:
    """What reading found; bytes_read grows as the lines are consumed."""

    files: int = 0
    lines: int = 0
    empty_lines: int = 0
    skipped_lines: int = 0  # not UTF-8 or binary
    skipped_bytes: int = 0
    bytes_read: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


def find_files(paths: Iterable[Union[str, Path]]) -> List[Path]:
    """The text files under `paths` (files, or folders read recursively), in a fixed order.

    Hidden files and folders (a name starting with ".") inside a folder are left out.
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
        else:
            raise ElmoError("E301", Errors.E301.format(path=path))
    return found


def is_binary(path: Union[str, Path]) -> bool:
    """Whether the file holds binary data (a NUL byte in its first SNIFF_BYTES)."""
    with open(path, "rb") as f:
        return b"\x00" in f.read(SNIFF_BYTES)


def read_lines(files: List[Path], stats: ReadStats, max_bytes: int = MAX_LINE_BYTES) -> Iterator[str]:
    """The non-empty lines of `files`, stripped of surrounding whitespace."""
    for path in files:
        stats.files += 1
        with path.open("rb") as f:
            first = True
            for raw in _raw_pieces(f, max_bytes):
                stats.bytes_read += len(raw)
                if first and raw.startswith(b"\xef\xbb\xbf"):  # byte-order mark
                    raw = raw[3:]
                first = False
                if b"\x00" in raw:
                    stats.skipped_lines += 1
                    stats.skipped_bytes += len(raw)
                    continue
                try:
                    text = raw.decode("utf-8").strip()
                except UnicodeDecodeError:
                    stats.skipped_lines += 1
                    stats.skipped_bytes += len(raw)
                    continue
                if not text:
                    stats.empty_lines += 1
                    continue
                stats.lines += 1
                yield text


def _raw_pieces(f: BinaryIO, max_bytes: int) -> Iterator[bytes]:
    """Lines of a binary file; a line longer than `max_bytes` comes in pieces
    of at most `max_bytes`, each cut after its last whitespace (or, with none,
    at a UTF-8 character boundary)."""
    carry = b""
    while True:
        wanted = max_bytes - len(carry)
        chunk = f.readline(wanted)
        data = carry + chunk
        carry = b""
        if len(chunk) < wanted or chunk.endswith(b"\n"):  # a whole line, or the end
            if data:
                yield data
            if not chunk:
                return
            continue
        cut = max(data.rfind(bytes([b])) for b in _WHITESPACE) + 1
        if cut <= 0:
            cut = len(data)
            # Back off over UTF-8 continuation bytes (10xxxxxx) to a character start.
            for _ in range(3):
                if cut > 1 and data[cut - 1] & 0xC0 == 0x80:
                    cut -= 1
            if cut > 0 and data[cut - 1] >= 0xC0:
                cut -= 1
            cut = cut or len(data)
        yield data[:cut]
        carry = data[cut:]
