"""``python -m spacy_elmo perplexity MODEL TEXT [--output FILE.json]``

The typer command only: it prints and writes what
`spacy_elmo.training.perplexity.perplexity` computes.
"""

import json
from pathlib import Path
from typing import List, Optional

import typer
from wasabi import msg

from ..disk import writing
from ..errors import ElmoError, OutputError
from ..training import perplexity
from ..util import atomic_path, check_writable, exit_on_sigterm
from .app import app
from .model_argument import MODEL_HELP, model_name_or_folder


@app.command("perplexity")
def perplexity_cli(
    # fmt: off
    model: str = typer.Argument(
        ...,
        metavar="MODEL",
        help=f"A model exported by pretrain (OUTPUT_DIR/model): {MODEL_HELP}",
        callback=model_name_or_folder,
    ),
    text: List[Path] = typer.Argument(..., help="Text files or folders, tokenised as in pretraining", exists=True),
    output: Optional[Path] = typer.Option(
        None, "--output", "-o", help="Write {forward, backward, mean, tokens} to this new JSON file"
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace the --output file if it exists"),
    tokens_per_batch: int = typer.Option(4000, "--tokens-per-batch", min=1, help="Batch size in tokens"),
    device: str = typer.Option("cpu", "--device", help="'cpu' or 'cuda'"),
    cuda_graphs: bool = typer.Option(
        False,
        "--cuda-graphs",
        help="On a GPU, run the LSTMs from CUDA graphs "
        "(fewer launches from Python; the same figures within float32 rounding)",
    ),
    # fmt: on
):
    """Forward, backward and mean perplexity of a pretrained biLM over a text.

    Exact: every prediction is normalised over the whole vocabulary. Each
    sentence counts its words plus one boundary (</S> forward, <S> backward);
    a word outside the vocabulary is scored as <UNK>. An existing --output
    file is refused unless --overwrite is given.
    """
    try:
        if output is not None:
            _check_output(output, overwrite)
        with exit_on_sigterm():
            report = perplexity(model, text, tokens_per_batch=tokens_per_batch, device=device, cuda_graphs=cuda_graphs)
    except ElmoError as err:
        msg.fail("Perplexity failed", str(err), exits=1)
    ppl = report.perplexity
    msg.table(
        [
            ("forward", f"{ppl.forward:.2f}"),
            ("backward", f"{ppl.backward:.2f}"),
            ("mean", f"{ppl.mean:.2f}"),
            ("predictions per direction", f"{ppl.tokens:,}"),
            ("out of vocabulary (scored as <UNK>)", f"{report.oov:,} ({report.oov / max(1, ppl.tokens):.2%})"),
        ],
        title=f"Perplexity of {model}",
    )
    if report.read.binary_files:
        msg.warn(f"Skipped {report.read.binary_files:,} binary files (not text)")
    if report.read.skipped_lines:
        msg.warn(f"Skipped {report.read.skipped_lines:,} lines that were not UTF-8 text or held binary data")
    if output is not None:
        try:
            _check_output(output, overwrite)  # created by someone else while we ran
            _write_report(output, ppl.to_dict())
        except ElmoError as err:
            msg.fail("Perplexity failed", str(err), exits=1)
        msg.good(f"Saved to {output}")


def _check_output(output: Path, overwrite: bool) -> None:
    """Refuse an existing --output (E202) unless --overwrite, and one that
    cannot be written (E510, E514): before the perplexity is computed."""
    if output.exists() and not (overwrite and output.is_file()):
        raise OutputError("E202", path=output, extra=" To replace it, pass --overwrite.")
    check_writable(output)


def _write_report(output: Path, report: dict) -> None:
    """Write the JSON report atomically; a write that finds no room is E513
    (no permission E514), and `output` is left as it was."""
    with exit_on_sigterm(), writing(output), atomic_path(output) as tmp:
        tmp.write_text(json.dumps(report, indent=2, allow_nan=False) + "\n", encoding="utf8")
