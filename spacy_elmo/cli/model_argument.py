"""The MODEL of a command: a model's name, or the path of a model folder."""

from pathlib import Path
from typing import Optional

import typer

from ..published_models import CATALOGUE, is_model_name
from ..shipped_models import ELMO_EN_SMALL, SHIPPED_MODELS

MODEL_HELP = (
    f"a model folder, or a model's name ({ELMO_EN_SMALL}, shipped with the package; the models command "
    "lists the others)"
)


def model_name_or_folder(value: Optional[str]) -> Optional[str]:
    """A typer callback: `value` as it is when it is a model's name or an
    existing folder; otherwise a usage error (exit status 2), before anything
    is loaded."""
    if value is None or is_model_name(value) or Path(value).is_dir():
        return value
    names = ", ".join((*SHIPPED_MODELS, *CATALOGUE))
    raise typer.BadParameter(f"'{value}' is neither a folder nor a model's name ({names})")
