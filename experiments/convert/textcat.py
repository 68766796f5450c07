"""Convert the Pang & Lee sentence-polarity snippets into spaCy ``DocBin`` sets.

Input (``assets/sentence_polarity/snippets.csv``): CSV rows ``label,text``
with label ``1`` (positive) or ``-1`` (negative). The file starts with a
byte-order mark, so it is read as ``utf-8-sig``.

Each snippet becomes a ``Doc`` tokenised by ``spacy.blank(lang)`` with
``doc.cats = {"POSITIVE": 1.0, "NEGATIVE": 0.0}`` (or the reverse). The same
seeded 80/10/10 split as ``convert_ner.py`` gives ``train.spacy``,
``dev.spacy`` and ``test.spacy``; ``--max-docs`` first takes a seeded subset.

Usage: python -m experiments.convert.textcat assets/sentence_polarity/snippets.csv
    corpus/textcat [--seed 0] [--max-docs N] [--lang en]
"""

from pathlib import Path
from typing import Annotated, Optional

import spacy
import typer
from spacy.tokens import Doc

from experiments.data.inputs import exit_on_bad_input
from experiments.data.splits import SPLIT_NAMES, seeded_subset, split_indices, write_splits
from experiments.data.tasks import read_polarity_csv

CATEGORIES = ("POSITIVE", "NEGATIVE")


def convert_textcat(
    input_path: Path,
    output_dir: Path,
    seed: int = 0,
    max_docs: Optional[int] = None,
    lang: str = "en",
) -> dict[str, list[Doc]]:
    """Write ``{train,dev,test}.spacy`` to ``output_dir``; return the docs per split."""
    rows = read_polarity_csv(Path(input_path))
    if max_docs is not None:
        rows = [rows[i] for i in seeded_subset(len(rows), max_docs, seed)]
    nlp = spacy.blank(lang)
    docs = []
    for label, text in rows:
        doc = nlp.make_doc(text)
        doc.cats = {category: float(category == label) for category in CATEGORIES}
        docs.append(doc)
    splits = {name: [docs[i] for i in indices] for name, indices in split_indices(len(docs), seed=seed).items()}
    write_splits(output_dir, splits)
    return splits


def main(
    input_path: Annotated[Path, typer.Argument(help="CSV of label,text rows.")],
    output_dir: Annotated[Path, typer.Argument(help="Folder for {train,dev,test}.spacy.")],
    seed: Annotated[int, typer.Option("--seed", help="Seed of the subset and split.")] = 0,
    max_docs: Annotated[
        Optional[int], typer.Option("--max-docs", min=0, help="Keep a seeded subset of N rows (0 = all).")
    ] = None,
    lang: Annotated[str, typer.Option("--lang", help="Language of the tokenizer.")] = "en",
) -> None:
    """Convert sentence-polarity CSV rows into a seeded 80/10/10 split of spaCy DocBins."""
    max_docs = max_docs or None  # 0 keeps everything
    with exit_on_bad_input():
        splits = convert_textcat(input_path, output_dir, seed, max_docs, lang)
    typer.echo(f"{'split':<6} {'docs':>6} {'POSITIVE':>9} {'NEGATIVE':>9} {'% pos':>6}")
    for name in SPLIT_NAMES:
        docs = splits[name]
        n_pos = sum(1 for doc in docs if doc.cats["POSITIVE"] == 1.0)
        share = 100 * n_pos / len(docs) if docs else 0.0
        typer.echo(f"{name:<6} {len(docs):>6,} {n_pos:>9,} {len(docs) - n_pos:>9,} {share:>6.1f}")
    typer.echo(f"Wrote {', '.join(f'{n}.spacy' for n in SPLIT_NAMES)} to {output_dir}")


if __name__ == "__main__":
    typer.run(main)
