"""``python -m spacy_elmo embed [OPTIONS] MODEL [WEIGHTS] INPUT OUTPUT``: ELMo vectors of a text file, in HDF5.

The work is done by `spacy_elmo.embed.embed_file`.
"""

from pathlib import Path
from typing import List, Optional, Tuple, Union

import typer
from typer.core import TyperCommand
from wasabi import msg

from .. import embed
from ..distributed import Distributed
from ..errors import ElmoError
from .app import app
from .model_argument import model_name_or_folder

USAGE = "MODEL [WEIGHTS] INPUT OUTPUT"


class _EmbedCommand(TyperCommand):
    """The usage line names the arguments as they are written,
    ``[OPTIONS] MODEL [WEIGHTS] INPUT OUTPUT``: the optional WEIGHTS comes
    before two required arguments, which one list argument stands for."""

    def collect_usage_pieces(self, ctx: typer.Context) -> List[str]:
        return [self.options_metavar, USAGE]


@app.command("embed", cls=_EmbedCommand)
def embed_cli(
    # fmt: off
    model: str = typer.Argument(..., metavar="MODEL", hidden=True, show_default=False),
    paths: List[str] = typer.Argument(..., metavar="[WEIGHTS] INPUT OUTPUT", hidden=True, show_default=False),
    layers: str = typer.Option(
        "all",
        "--layers",
        metavar="all|top|average",
        help="all: (layers, tokens, dim) per line; top: the last layer; average: the mean of the layers",
    ),
    batch_size: int = typer.Option(64, "--batch-size", metavar="N", min=1, help="Sentences per batch"),
    device: str = typer.Option(
        "cpu",
        "--device",
        metavar="DEVICE",
        help="Torch device, e.g. cpu or cuda:0 (under torchrun: cpu, or cuda for cuda:LOCAL_RANK)",
    ),
    precision: str = typer.Option(
        "fp32",
        "--precision",
        metavar="fp32|tf32|bf16|int8|int8-always",
        help="fp32; tf32 (GPU); bf16 (GPU, or a CPU with AMX or AVX-512 BF16); int8 (CPU, where faster); "
        "int8-always (CPU, whatever the speed)",
    ),
    cuda_graphs: bool = typer.Option(
        False,
        "--cuda-graphs",
        help="On a GPU, run the LSTMs from CUDA graphs "
        "(fewer launches from Python; the same vectors within float32 rounding)",
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace OUTPUT if it exists (once the new file is whole)"
    ),
    # fmt: on
):
    """ELMo vectors of every line of INPUT, written to a new HDF5 file OUTPUT.

    \b
    MODEL    a biLM folder (options.json + weights.hdf5, as pretrain exports
             it), a model's name (elmo-en-small ships with the package; the
             models command lists the others), or an options.json
    WEIGHTS  after an options.json, its weights.hdf5 (AllenNLP's two files)
    INPUT    UTF-8 text, one sentence per line, tokens separated by
             whitespace: a file, a pipe or /dev/stdin
    OUTPUT   the HDF5 file to create (not a folder); an existing file is
             refused unless --overwrite is given

    For example `embed elmo-en-small in.txt out.hdf5`, `embed
    training/my_bilm/model in.txt out.hdf5`, `embed options.json
    weights.hdf5 in.txt out.hdf5`, or from a pipe, `... | embed
    MODEL /dev/stdin out.hdf5`.

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
    options, weights, input_path, output_path = _arguments(model, paths)
    try:
        embed.embed_file(
            options,
            weights,
            input_path,
            output_path,
            layers=layers,
            batch_size=batch_size,
            device=device,
            precision=precision,
            cuda_graphs=cuda_graphs,
            overwrite=overwrite,
        )
    except ElmoError as err:
        msg.fail("Embedding failed", str(err), exits=1)
    if Distributed.from_env().is_main:
        msg.good(f"Saved to {output_path}")


def _arguments(model: str, paths: List[str]) -> Tuple[Union[str, Path], Optional[Path], Path, str]:
    """(options, folder or a model's name; weights or None; input; output),
    each checked as typer checks an argument: a wrong one exits with status 2."""
    if len(paths) not in (2, 3):
        raise typer.BadParameter(
            f"expected MODEL INPUT OUTPUT or OPTIONS WEIGHTS INPUT OUTPUT; found {len(paths) + 1} arguments",
            param_hint=f"'{USAGE}'",
        )
    *weights, input_path, output_path = paths
    if weights:
        for path, hint in ((Path(model), "MODEL"), (Path(weights[0]), "WEIGHTS")):
            if not path.is_file():
                raise typer.BadParameter(
                    f"{path} is not a file (an options.json comes with a WEIGHTS file)", param_hint=f"'{hint}'"
                )
    else:
        _check_model(model)
    _check_input(Path(input_path))
    options = Path(model) if weights else model  # a name stays a str: BiLM.from_allennlp resolves it
    return options, Path(weights[0]) if weights else None, Path(input_path), output_path


def _check_model(model: str) -> None:
    """MODEL without WEIGHTS: a model's name or a folder."""
    try:
        model_name_or_folder(model)
    except typer.BadParameter as err:
        raise typer.BadParameter(
            f"{err.message}: give a biLM folder (options.json + weights.hdf5), a model's "
            "name, or an options.json followed by its weights.hdf5",
            param_hint="'MODEL'",
        )


def _check_input(path: Path) -> None:
    """INPUT is read once, from start to end: a file, a pipe (a FIFO,
    /dev/stdin) or anything else that reads, but not a folder."""
    if path.is_dir():
        raise typer.BadParameter(f"{path} is a folder: give a text file, a pipe or /dev/stdin", param_hint="'INPUT'")
    if not path.exists():
        raise typer.BadParameter(f"{path} does not exist", param_hint="'INPUT'")
