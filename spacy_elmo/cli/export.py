"""``python -m spacy_elmo export RUN_DIR OUTPUT [--dtype float16]``"""

from pathlib import Path

import typer
from wasabi import msg

from ..errors import ElmoError
from ..training.snapshot import export_checkpoint
from ..util import exit_on_sigterm
from .app import app


@app.command("export")
def export_cli(
    # fmt: off
    run_dir: Path = typer.Argument(
        ..., help="A pretrain run's OUTPUT_DIR, training or stopped", exists=True, file_okay=False
    ),
    output: Path = typer.Argument(..., help="A new folder for the model"),
    dtype: str = typer.Option(
        "float32", "--dtype", help="'float32', or 'float16' (half the size, loaded back as float32)"
    ),
    # fmt: on
):
    """Write the biLM of a pretrain run's last checkpoint to a new folder.

    The folder holds what the run's own export would hold at that step
    (options.json, weights.hdf5, vocab.txt, softmax.hdf5, pretrain.json), so
    the perplexity command, BiLM.from_allennlp and the elmo component read
    it. The run is only read: export while it trains, or after a stop.
    """
    try:
        with exit_on_sigterm():
            info = export_checkpoint(run_dir, output, dtype)
    except ElmoError as err:
        msg.fail("Export failed", str(err), exits=1)
    dev = info["dev"]
    at = f"dev perplexity {dev['mean']:.2f} at this step" if dev else "no dev perplexity logged at this step"
    msg.good(f"Exported step {info['steps']:,} of {run_dir} ({info['train_tokens']:,} tokens; {at}) to {output}")
