"""A table of biLMs' dev perplexities, one row per held-out text, one column per biLM.

Usage: python -m experiments.report.perplexity v1=metrics/v1 v2=metrics/v2 [--output table.md]

Each folder holds the JSON files that ``python -m spacy_elmo perplexity --output`` wrote, one per
dev text (``dev.json`` for all of them, ``dev_<source>.json`` for one source). A row is printed
for every text that each biLM was measured on; the mean of the forward and backward perplexity
is shown, with the relative change of the last column against the first.
"""

import json
from pathlib import Path
from typing import Dict, List, Optional

import typer
from wasabi import MarkdownRenderer

from experiments.files import write_atomic


def read_perplexities(folder: Path) -> Dict[str, dict]:
    """``{text name: the perplexity JSON}`` of every ``*.json`` in ``folder``."""
    found = {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))}
    if not found:
        raise typer.BadParameter(f"{folder} holds no perplexity JSON files: measure them first")
    return found


def perplexity_table(models: Dict[str, Dict[str, dict]]) -> str:
    """Markdown: a row per text measured for every model (``dev`` last, as the total)."""
    names = list(models)
    texts = sorted(set.intersection(*(set(m) for m in models.values())), key=lambda t: (t == "dev", t))
    md = MarkdownRenderer()
    header = ["held-out text", "tokens", *names]
    if len(names) > 1:
        header.append(f"{names[-1]} vs {names[0]}")
    rows = []
    for text in texts:
        values = [models[name][text]["mean"] for name in names]
        row = ["all" if text == "dev" else text.removeprefix("dev_"), f"{models[names[0]][text]['tokens']:,}"]
        row += [f"{value:.1f}" for value in values]
        if len(names) > 1:
            row.append(f"{100 * (values[-1] / values[0] - 1):+.1f}%")
        rows.append(row)
    md.add(md.table(rows, header, aligns=("l", "r", *["r"] * (len(header) - 2))))
    return md.text


def main(
    models: List[str] = typer.Argument(..., help="NAME=FOLDER of perplexity JSON files, in column order"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Also write the table to this file"),
) -> None:
    pairs = [model.split("=", 1) for model in models]
    if any(len(pair) != 2 for pair in pairs):
        raise typer.BadParameter("expected NAME=FOLDER, e.g. v1=metrics/v1")
    table = perplexity_table({name: read_perplexities(Path(folder)) for name, folder in pairs})
    typer.echo(table)
    if output is not None:
        write_atomic(output, table + "\n")


if __name__ == "__main__":
    typer.run(main)
