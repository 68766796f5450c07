"""The command line: ``python -m spacy_elmo COMMAND`` (or ``spacy-elmo COMMAND``).

Each command module registers itself on `app`; the functions they wrap are
plain Python, callable from tests.
"""
import typer

app = typer.Typer(
    name="spacy-elmo",
    help="ELMo for spaCy: embed text, train and export a biLM, inspect layer mixes.",
    no_args_is_help=True,
    add_completion=False,
)

# Command modules (each adds its commands to `app`).
from . import embed  # noqa: E402,F401
from . import pretrain, perplexity, export  # noqa
from . import mix_weights  # noqa: E402,F401
