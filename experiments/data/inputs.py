"""What every task converter checks in its input, with one error class for all of them.

A converter's command prints a ``FormatError`` as ``error: PATH:LINE: ...`` and
exits with 1, so a wrong file ends in one line saying what was expected and what
was found, never in a traceback or in empty splits reported as written.
"""
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sized, Union

import typer


class FormatError(ValueError):
    """A converter's input is not in the format that converter reads."""


def read_text(path: Union[str, Path], encoding: str = "utf-8") -> str:
    """A converter's input as text; bytes that are not UTF-8 are a ``FormatError`` naming the line."""
    data = Path(path).read_bytes()
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise FormatError(
            f"{path}:{line}: expected UTF-8 text, found the byte {data[err.start:err.start + 1]!r} "
            f"at offset {err.start}. Convert the file to UTF-8 (e.g. `iconv -f latin1 -t utf-8`) "
            f"or check that it is the right file."
        ) from None


def require_items(items: Sized, path: Union[str, Path], what: str) -> None:
    """A ``FormatError`` when the input held nothing to convert (an empty or wrong file)."""
    if len(items) == 0:
        raise FormatError(f"{path}: found no {what}: the file is empty or not in the expected format.")


@contextmanager
def exit_on_bad_input() -> Iterator[None]:
    """A converter command's body: a ``FormatError`` or an unreadable file ends it in one line, exit 1."""
    try:
        yield
    except (FormatError, OSError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(code=1)
