"""The one error the workflow's commands raise for bad input, and how a command reports it.

The library's coded errors (``spacy_elmo.errors``) are for what a user of the library can
meet; the workflow's own scripts (``experiments``) report a bad file or argument with
`ExperimentError`: one line that names the file (or argument), what was expected there,
what was found, and how to fix it. A command's entry point runs through `run_app`, which
prints that line to stderr and exits with status 1 instead of a traceback.
"""

import sys
from pathlib import Path
from typing import Callable, List, Optional, Union


class ExperimentError(Exception):
    """Bad input to a workflow command: where, what was expected, what was found, the fix."""

    def __init__(self, where: Union[str, Path], *, expected: str, found: str, fix: str = "") -> None:
        self.where = str(where)
        self.expected = expected
        self.found = found
        self.fix = fix
        message = f"{self.where}: expected {expected}, found {found}"
        super().__init__(f"{message}; {fix}" if fix else message)


def run_app(app: Callable[[List[str]], object], argv: Optional[List[str]] = None) -> None:
    """Run a command (a typer app or any callable taking the argument list); an
    `ExperimentError` becomes one line on stderr and exit status 1."""
    try:
        app(sys.argv[1:] if argv is None else argv)
    except ExperimentError as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(1) from None


def run_main(main: Callable[..., object]) -> None:
    """`typer.run(main)` through `run_app`: a one-command script whose bad input is one line, exit 1."""
    import typer

    app = typer.Typer(add_completion=False)
    app.command()(main)
    run_app(app)
