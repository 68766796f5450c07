"""``python -m spacy_elmo convert EFML_FOLDER OUTPUT [--dtype float16]``"""

from pathlib import Path

import typer
from wasabi import msg

from ..bilm.conversion import convert_efml
from ..errors import ElmoError
from .app import app


@app.command("convert")
def convert_cli(
    # fmt: off
    source: Path = typer.Argument(
        ..., help="An ELMoForManyLangs model's folder, as its zip unpacks", exists=True, file_okay=False
    ),
    output: Path = typer.Argument(..., help="A folder for the converted model (new, or without its files)"),
    dtype: str = typer.Option(
        "float32", "--dtype", help="'float32', or 'float16' (half the size, loaded back as float32)"
    ),
    # fmt: on
):
    """Convert an ELMoForManyLangs model (config.json, char.dic, word.dic,
    token_embedder.pkl, encoder.pkl) to options.json, weights.hdf5, chars.json
    and words.json, which BiLM.from_allennlp, embed and the elmo component
    read with no pickle. The pickles are read as state dicts of tensors only,
    never unpickled in general."""
    try:
        options = convert_efml(source, output, dtype)
    except ElmoError as err:
        msg.fail("Conversion failed", str(err), exits=1)
    words = "no word table" if options.word_table is None else f"{len(options.word_table.entries):,} words"
    msg.good(f"Converted {source} ({len(options.char_table.entries):,} characters, {words}) to {output}")
