"""The Typer application every command module adds its commands to.

Help is plain text, as spaCy's own CLI writes it (`rich_markup_mode=None`): an
option that takes no value shows none. With no command, the help is shown and
the exit status is 0.
"""

import typer

app = typer.Typer(
    name="spacy-elmo",
    help="ELMo for spaCy: embed text, train and export a biLM, inspect layer mixes.",
    invoke_without_command=True,
    add_completion=False,
    rich_markup_mode=None,
)


@app.callback()
def _show_help_without_a_command(ctx: typer.Context) -> None:
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())
        raise typer.Exit()
