"""Convert the WNUT-2016 Twitter NER file into spaCy ``DocBin`` train/dev/test sets.

Input format (``assets/wnut16/ner.txt``): one ``token<TAB>TAG`` line per token,
IOB2 tags such as ``O``, ``B-person``, ``I-geo-loc``; a tweet ends at a line
holding only a tab (a truly empty line is accepted too).

The file is only the WNUT-2016 *train* split, so this script makes a fixed
split by tweet: the tweet indices are shuffled with ``random.Random(seed)`` and
cut 80/10/10 into ``train.spacy``, ``dev.spacy`` and ``test.spacy``.
``--max-docs`` first takes a seeded subset of the tweets (for a quick demo).
Entity labels keep the dataset's own names (``person``, ``geo-loc``, ...).

Usage: python -m experiments.convert.ner assets/wnut16/ner.txt corpus/ner
    [--seed 0] [--max-docs N] [--lang en]
"""

from collections import Counter
from pathlib import Path
from typing import Annotated, Optional

import spacy
import typer
from spacy.tokens import Doc
from spacy.training import biluo_tags_to_spans, iob_to_biluo
from spacy.vocab import Vocab

from experiments.data.inputs import exit_on_bad_input
from experiments.data.splits import SPLIT_NAMES, seeded_subset, split_indices, write_splits
from experiments.data.tasks import read_iob_file


def make_doc(vocab: Vocab, tokens: list[str], iob_tags: list[str]) -> Doc:
    """A ``Doc`` with one token per word (space-separated) and gold entities.

    An ``I-`` tag that does not continue an entity of the same label starts a
    new entity, as in spaCy's own IOB conversion.
    """
    spaces = [True] * (len(tokens) - 1) + [False]
    doc = Doc(vocab, words=tokens, spaces=spaces)
    doc.ents = biluo_tags_to_spans(doc, iob_to_biluo(iob_tags))
    return doc


def convert_ner(
    input_path: Path,
    output_dir: Path,
    seed: int = 0,
    max_docs: Optional[int] = None,
    lang: str = "en",
) -> dict[str, list[Doc]]:
    """Write ``{train,dev,test}.spacy`` to ``output_dir``; return the docs per split."""
    sentences = read_iob_file(Path(input_path))
    if max_docs is not None:
        sentences = [sentences[i] for i in seeded_subset(len(sentences), max_docs, seed)]
    vocab = spacy.blank(lang).vocab
    docs = [make_doc(vocab, tokens, tags) for tokens, tags in sentences]
    splits = {name: [docs[i] for i in indices] for name, indices in split_indices(len(docs), seed=seed).items()}
    write_splits(output_dir, splits)
    return splits


def main(
    input_path: Annotated[Path, typer.Argument(help="WNUT-16 token<TAB>TAG file.")],
    output_dir: Annotated[Path, typer.Argument(help="Folder for {train,dev,test}.spacy.")],
    seed: Annotated[int, typer.Option("--seed", help="Seed of the subset and split.")] = 0,
    max_docs: Annotated[
        Optional[int], typer.Option("--max-docs", min=0, help="Keep a seeded subset of N tweets (0 = all).")
    ] = None,
    lang: Annotated[str, typer.Option("--lang", help="Language of the blank vocab.")] = "en",
) -> None:
    """Convert WNUT-16 IOB2 NER data into a seeded 80/10/10 split of spaCy DocBins."""
    max_docs = max_docs or None  # 0 keeps everything
    with exit_on_bad_input():
        splits = convert_ner(input_path, output_dir, seed, max_docs, lang)
    label_counts = {name: Counter(ent.label_ for doc in docs for ent in doc.ents) for name, docs in splits.items()}
    labels = sorted(set().union(*label_counts.values()))
    typer.echo(f"{'':<14}" + "".join(f"{name:>8}" for name in SPLIT_NAMES))
    rows = [
        ("tweets", {name: len(docs) for name, docs in splits.items()}),
        ("tokens", {name: sum(len(d) for d in docs) for name, docs in splits.items()}),
        ("entities", {name: sum(c.values()) for name, c in label_counts.items()}),
    ]
    rows += [(label, {name: label_counts[name][label] for name in splits}) for label in labels]
    for title, values in rows:
        typer.echo(f"{title:<14}" + "".join(f"{values[name]:>8,}" for name in SPLIT_NAMES))
    typer.echo(f"Wrote {', '.join(f'{n}.spacy' for n in SPLIT_NAMES)} to {output_dir}")


if __name__ == "__main__":
    typer.run(main)
