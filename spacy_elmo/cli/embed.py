"""``python -m spacy_elmo embed OPTIONS WEIGHTS INPUT OUTPUT``: ELMo vectors of a text file, in HDF5.

The replacement for ``allennlp elmo``, with the same output layout.
"""
import json
from pathlib import Path
from typing import Dict, List, Union

import h5py
import torch
import typer
from tqdm import tqdm
from wasabi import msg

from ..bilm import BiLM, batch_to_ids, length_sorted_batches
from ..bilm.precision import precision as in_precision
from ..device import check_device
from ..errors import ElmoError, Errors
from ..util import atomic_path, exit_on_sigterm, make_parent_dir
from . import app

PathLike = Union[str, Path]
LAYER_CHOICES = ("all", "top", "average")
SENTENCE_TO_INDEX = "sentence_to_index"


def embed_file(
    options: PathLike,
    weights: PathLike,
    input_path: PathLike,
    output_path: PathLike,
    layers: str = "all",
    batch_size: int = 64,
    device: str = "cpu",
    precision: str = "fp32",
) -> None:
    """Write the ELMo vectors of every line of a text file to a new HDF5 file.

    options, weights: the biLM's ``options.json`` and ``weights.hdf5``
        (AllenNLP/bilm-tf format).
    input_path: UTF-8 text, one sentence per line, tokens separated by
        whitespace. A blank line is an empty sentence; a byte-order mark at
        the start is not text.
    output_path: the HDF5 file to create; an existing file is never
        overwritten. It holds one float32 dataset per input line, named by the
        line number ("0", "1", ...): ``(n_layers + 1, n_tokens, dim)`` for
        layers="all", ``(n_tokens, dim)`` for "top" (the last layer) and
        "average" (the mean of all layers); a blank line gives 0 tokens. The
        dataset "sentence_to_index" holds one string, a JSON object mapping each
        line's text (stripped) to its dataset name, the last line winning for
        repeated sentences; read it with
        ``json.loads(f["sentence_to_index"][0])``. Datasets are named by line
        number because HDF5 names cannot hold "/", so sentences with "/" (or
        any other text) work.
    layers: "all", "top" or "average".
    batch_size: sentences per batch. Sentences are batched by length, which
        only changes the speed: a sentence's vectors never depend on the others
        in its batch.
    device: the torch device to run on, e.g. "cpu" or "cuda:0".
    precision: on a GPU, "fp32", "tf32" or "bf16" (see spacy_elmo.bilm.precision).

    The file is written beside `output_path` under a temporary name and moved
    into place at the end, so an interrupted run (an error, Ctrl-C or
    SIGTERM) leaves no partial output; a temporary left by a killed run is
    removed by the next run for the same output.
    """
    if layers not in LAYER_CHOICES:
        raise ElmoError("E201", Errors.E201.format(found=layers))
    torch_device = check_device(str(device))
    output_path = Path(output_path)
    _refuse_existing(output_path)
    lines = _read_lines(Path(input_path))
    sentences = [line.split() for line in lines]
    make_parent_dir(output_path)
    model = BiLM.from_allennlp(options, weights).to(torch_device).eval()
    batches = length_sorted_batches([len(s) for s in sentences], batch_size)
    with exit_on_sigterm(), atomic_path(output_path) as tmp:
        with h5py.File(tmp, "w") as fout, torch.inference_mode(), in_precision(torch_device, precision), tqdm(
            total=len(sentences), unit="sentence", desc="embed"
        ) as progress:
            for rows in batches:
                output = model(batch_to_ids([sentences[i] for i in rows]).to(torch_device))
                for k, i in enumerate(rows):
                    vectors = output.layers[:, k, : len(sentences[i])]  # (n_layers + 1, n_tokens, dim)
                    if layers == "top":
                        vectors = vectors[-1]
                    elif layers == "average":
                        vectors = vectors.mean(dim=0)
                    fout.create_dataset(str(i), data=vectors.float().cpu().numpy())
                progress.update(len(rows))
            sentence_to_index: Dict[str, str] = {line.strip(): str(i) for i, line in enumerate(lines)}
            fout.create_dataset(SENTENCE_TO_INDEX, data=[json.dumps(sentence_to_index)], dtype=h5py.string_dtype())
        _refuse_existing(output_path)  # created by someone else while we ran


def _refuse_existing(path: Path) -> None:
    if path.exists():
        raise ElmoError("E202", Errors.E202.format(path=path))


def _read_lines(path: Path) -> List[str]:
    """The file's lines, split as text files are (\\n, \\r\\n or \\r), without line
    ends and without a byte-order mark."""
    try:
        with path.open(encoding="utf-8-sig") as fin:
            return [line.rstrip("\n") for line in fin]
    except (OSError, UnicodeDecodeError) as err:
        raise ElmoError("E203", Errors.E203.format(path=path, reason=err)) from err


@app.command("embed")
def embed_cli(
    # fmt: off
    options: Path = typer.Argument(..., metavar="OPTIONS", help="The biLM's options.json (AllenNLP/bilm-tf format)", exists=True, dir_okay=False),
    weights: Path = typer.Argument(..., metavar="WEIGHTS", help="The biLM's weights.hdf5", exists=True, dir_okay=False),
    input_path: Path = typer.Argument(..., metavar="INPUT", help="UTF-8 text: one sentence per line, tokens separated by whitespace", exists=True, dir_okay=False),
    output_path: Path = typer.Argument(..., metavar="OUTPUT", help="The HDF5 file to create (never overwritten)"),
    layers: str = typer.Option("all", "--layers", help="all: (layers, tokens, dim) per line; top: the last layer; average: the mean of the layers"),
    batch_size: int = typer.Option(64, "--batch-size", min=1, help="Sentences per batch"),
    device: str = typer.Option("cpu", "--device", help="Torch device, e.g. cpu or cuda:0"),
    precision: str = typer.Option("fp32", "--precision", help="On a GPU: fp32, tf32 or bf16"),
    # fmt: on
):
    """ELMo vectors of every line of INPUT, written to a new HDF5 file OUTPUT.

    As `allennlp elmo` did: one dataset per line, named by its line number
    ("0", "1", ...), and a "sentence_to_index" dataset holding a JSON object
    from each line's text to its dataset name. Line numbers rather than
    sentences name the datasets because HDF5 names cannot contain "/": a
    sentence with "/" simply works. A blank line gives a dataset with 0 tokens.
    """
    try:
        embed_file(options, weights, input_path, output_path, layers=layers, batch_size=batch_size, device=device,
                   precision=precision)
    except ElmoError as err:
        msg.fail("Embedding failed", str(err), exits=1)
    msg.good(f"Saved to {output_path}")
