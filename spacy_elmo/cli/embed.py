"""``python -m spacy_elmo embed OPTIONS WEIGHTS INPUT OUTPUT``: ELMo vectors of a text file, in HDF5.

The work is done by `spacy_elmo.embed.embed_file`; the names this module
used to hold are still served from there, with a DeprecationWarning.
"""
from pathlib import Path

import typer
from wasabi import msg

from .. import embed
from .._deprecated import moved
from ..errors import ElmoError
from ..training.run.distributed import Distributed
from . import app


@app.command("embed")
def embed_cli(
    # fmt: off
    options: Path = typer.Argument(..., metavar="OPTIONS", help="The biLM's options.json (AllenNLP/bilm-tf format)", exists=True, dir_okay=False),
    weights: Path = typer.Argument(..., metavar="WEIGHTS", help="The biLM's weights.hdf5", exists=True, dir_okay=False),
    input_path: Path = typer.Argument(..., metavar="INPUT", help="UTF-8 text: one sentence per line, tokens separated by whitespace", exists=True, dir_okay=False),
    output_path: str = typer.Argument(..., metavar="OUTPUT", help="The HDF5 file to create (never overwritten; not a folder)"),
    layers: str = typer.Option("all", "--layers", help="all: (layers, tokens, dim) per line; top: the last layer; average: the mean of the layers"),
    batch_size: int = typer.Option(64, "--batch-size", min=1, help="Sentences per batch"),
    device: str = typer.Option("cpu", "--device", help="Torch device, e.g. cpu or cuda:0 (under torchrun: cpu, or cuda for cuda:LOCAL_RANK)"),
    precision: str = typer.Option("fp32", "--precision", help="fp32; tf32 (GPU); bf16 (GPU, or a CPU with AMX or AVX-512 BF16)"),
    # fmt: on
):
    """ELMo vectors of every line of INPUT, written to a new HDF5 file OUTPUT.

    As `allennlp elmo` did: one dataset per line, named by its line number
    ("0", "1", ...), and a "sentence_to_index" dataset holding a JSON object
    from each line's text to its dataset name. Line numbers rather than
    sentences name the datasets because HDF5 names cannot contain "/": a
    sentence with "/" simply works. A blank line gives a dataset with 0 tokens.

    To use more processes or GPUs, start it with torchrun, e.g. `torchrun
    --nproc_per_node 2 -m spacy_elmo embed ... --device cuda`: each process
    embeds a share of the batches (on cuda:LOCAL_RANK) and process 0
    writes the one OUTPUT, the same as a single process's.
    """
    try:
        embed.embed_file(options, weights, input_path, output_path, layers=layers, batch_size=batch_size,
                         device=device, precision=precision)
    except ElmoError as err:
        msg.fail("Embedding failed", str(err), exits=1)
    if Distributed.from_env().is_main:
        msg.good(f"Saved to {output_path}")


# The library part moved to spacy_elmo.embed.
__getattr__, _ = moved(__name__, "spacy_elmo.embed")
