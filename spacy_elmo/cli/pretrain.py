"""``python -m spacy_elmo pretrain CONFIG OUTPUT_DIR [--section.key value …]``"""

from pathlib import Path
from typing import Optional

import typer
from wasabi import msg

# spaCy's own CLI takes these two from weasel (a dependency of spaCy >= 3.7);
# importing them from there keeps this command free of spaCy and Thinc.
from weasel.util import parse_config_overrides
from weasel.util.validation import show_validation_error

from ..errors import ElmoError
from ..training import load_config, pretrain
from ..training.run.config import CONFIG_OVERRIDES_ENV
from .app import app
from .model_argument import MODEL_HELP, model_name_or_folder


@app.command(
    "pretrain",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def pretrain_cli(
    # fmt: off
    ctx: typer.Context,  # holds the config overrides
    config_path: Path = typer.Argument(
        ..., help="The pretraining config (.cfg), e.g. configs/bilm_demo.cfg", exists=True, dir_okay=False
    ),
    output_dir: Path = typer.Argument(
        ..., help="Folder for the run: checkpoint, log, plot and the exported model in model/"
    ),
    resume: bool = typer.Option(False, "--resume", help="Continue the run in OUTPUT_DIR from its last checkpoint"),
    init_from: Optional[str] = typer.Option(
        None,
        "--init-from",
        metavar="MODEL",
        help=f"Start from this model, e.g. for a new domain: {MODEL_HELP}",
        callback=model_name_or_folder,
    ),
    device: str = typer.Option("auto", "--device", help="'auto' (a GPU when there is one), 'cpu' or 'cuda'"),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show progress bars"),
    # fmt: on
):
    """Train a biLM on raw text and export it.

    The forward and backward language models are trained jointly; the result
    goes to OUTPUT_DIR/model as options.json + weights.hdf5 (with vocab.txt
    and softmax.hdf5 for the perplexity command). Override any config setting
    with --section.key value, e.g. --paths.train corpus/train.txt
    --training.max_steps 1000. Runs on several processes under torchrun
    (DistributedDataParallel).
    """
    overrides = parse_config_overrides(ctx.args, env_var=CONFIG_OVERRIDES_ENV)
    try:
        with show_validation_error(config_path, hint_fill=False):
            config = load_config(config_path, overrides)
        pretrain(config, output_dir, resume=resume, init_from=init_from, device=device, progress=progress)
    except ElmoError as err:
        msg.fail("Pretraining failed", str(err), exits=1)
