"""What every data command (fetch, the corpora, the converters) does with a bad input: one line, exit 1.

The readers (``experiments.data.tasks``, ``experiments.files.read_utf8``) raise
``experiments.errors.ExperimentError`` naming the file and line, what was expected and what
was found; a data command's body runs inside `exit_on_bad_input`, which prints it as
``error: PATH:LINE: expected ..., found ...`` and exits with 1, so a wrong file never ends
in a traceback or in empty splits reported as written.
"""

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sized, Union

import typer

from experiments.errors import ExperimentError


def require_items(items: Sized, path: Union[str, Path], what: str) -> None:
    """An ``ExperimentError`` when the input held nothing to convert (an empty or wrong file)."""
    if len(items) == 0:
        raise ExperimentError(
            path,
            expected=f"{what} to convert",
            found=f"no {what}",
            fix="the file is empty or not in the expected format",
        )


@contextmanager
def exit_on_bad_input() -> Iterator[None]:
    """A data command's body: an ``ExperimentError`` or an unwritable output ends it in one line, exit 1."""
    try:
        yield
    except (ExperimentError, OSError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(code=1)
