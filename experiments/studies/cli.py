"""What the studies' command lines share: a command group that runs the study by default, the seeds
option, and the end of a run (what ran; exit status 1 when a job failed)."""

from typing import List, Tuple

import click
import typer
from typer.core import TyperGroup

from experiments.engine.jobs import Summary
from experiments.errors import ExperimentError
from experiments.records import parse_seeds

RUN = "run"
SEEDS_HINT = "--seeds"


class RunByDefault(TyperGroup):
    """``STUDY [OPTIONS]`` means ``STUDY run [OPTIONS]``."""

    def parse_args(self, ctx: click.Context, args: List[str]) -> List[str]:
        if not args or (args[0].startswith("-") and args[0] not in ("--help", "-h")):
            args = [RUN, *args]
        return super().parse_args(ctx, args)


def study_app(doc: str) -> typer.Typer:
    """A study's command group (``run`` by default), its help the first paragraph of the study's docstring."""
    return typer.Typer(cls=RunByDefault, add_completion=False, help=doc.split("\n\n")[0])


def parse_seeds_option(text: str, where: str = SEEDS_HINT) -> Tuple[int, ...]:
    """A seeds option, ``"0 1 2"``, as ``experiments.records.parse_seeds`` reads it; anything else is a usage
    error naming the option (exit status 2)."""
    try:
        return tuple(parse_seeds(text, where))
    except ExperimentError as err:
        raise typer.BadParameter(f"expected {err.expected}, found {err.found}", param_hint=where) from None


def finish(summary: Summary, then: str = "") -> None:
    """Say what ran, was done already, failed or was left (and ``then``); exit status 1 when a job failed."""
    typer.echo(summary.describe() + then)
    if not summary.ok:
        raise typer.Exit(1)
