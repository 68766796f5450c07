"""Convert the Rotten Tomatoes snippets into a 5-class sentiment task (a stand-in for SST-5).

Input (``assets/rt_snippets/movieReviewSnippets_GroundTruth.txt``, from the
vaderSentiment 3.3.2 sdist, MIT): one snippet a line, ``id<TAB>mean
rating<TAB>text``, CRLF line ends, the rating the mean of about 20 raters on
-4 ... +4. These are the 10,605 sentences SST was built from, but not SST's
labels or splits: figures on this task are not SST-5 figures.

The mean rating is binned into five exclusive classes by the cut points
``CUT_POINTS = (-2, -1, 1, 2)``; a rating on a cut point goes to the more
extreme class:

===============  ======================  ====================
class            rating                  count (all 10,605)
===============  ======================  ====================
VERY_NEGATIVE    r <= -2                 2,052
NEGATIVE         -2 < r <= -1            2,523
NEUTRAL          -1 < r < 1              1,432
POSITIVE         1 <= r < 2              2,411
VERY_POSITIVE    r >= 2                  2,187
===============  ======================  ====================

(The cuts -2, -0.5, 0.5, 2 leave only 548 neutral snippets; with +-1 the
smallest class still has 14% of the data, close to SST-5's neutral share.)

Each snippet becomes a ``Doc`` tokenised by ``spacy.blank(lang)`` with
``doc.cats`` one-hot over the five classes (exclusive classes, as spaCy's
``textcat`` expects). The split is **stratified** by class: each class is cut
80/10/10 by ``_split.split_indices`` with the seed, so every split has the
same class shares; ``--max-docs`` first takes a seeded subset (not
stratified). Writes ``train.spacy``, ``dev.spacy`` and ``test.spacy``.

Usage: python -m experiments.convert.sentiment5
    assets/rt_snippets/movieReviewSnippets_GroundTruth.txt corpus/sentiment5
    [--seed 0] [--max-docs N] [--lang en]
"""

from pathlib import Path
from typing import Annotated, Optional

import spacy
import typer
from spacy.tokens import Doc

from experiments.data.inputs import exit_on_bad_input
from experiments.data.splits import SPLIT_NAMES, seeded_subset, split_indices, write_splits
from experiments.data.tasks import CATEGORIES, CUT_POINTS, rating_to_label, read_rated_snippets


def stratified_split(labels: list[str], seed: int = 0) -> dict[str, list[int]]:
    """80/10/10 split of ``range(len(labels))``, each class cut by ``split_indices``."""
    by_class: dict[str, list[int]] = {}
    for index, label in enumerate(labels):
        by_class.setdefault(label, []).append(index)
    splits: dict[str, list[int]] = {name: [] for name in SPLIT_NAMES}
    for label in sorted(by_class):
        members = by_class[label]
        for name, positions in split_indices(len(members), seed=seed).items():
            splits[name].extend(members[i] for i in positions)
    return {name: sorted(indices) for name, indices in splits.items()}


def convert_sentiment5(
    input_path: Path,
    output_dir: Path,
    seed: int = 0,
    max_docs: Optional[int] = None,
    lang: str = "en",
) -> dict[str, list[Doc]]:
    """Write ``{train,dev,test}.spacy`` to ``output_dir``; return the docs per split."""
    rows = read_rated_snippets(Path(input_path))
    if max_docs is not None:
        rows = [rows[i] for i in seeded_subset(len(rows), max_docs, seed)]
    nlp = spacy.blank(lang)
    docs, labels = [], []
    for _id, rating, text in rows:
        label = rating_to_label(rating)
        doc = nlp.make_doc(text)
        doc.cats = {category: float(category == label) for category in CATEGORIES}
        docs.append(doc)
        labels.append(label)
    splits = {name: [docs[i] for i in indices] for name, indices in stratified_split(labels, seed=seed).items()}
    write_splits(output_dir, splits)
    return splits


def label_of(doc: Doc) -> str:
    """The one class a converted doc has (its 1.0 in ``doc.cats``)."""
    return max(CATEGORIES, key=lambda category: doc.cats[category])


def main(
    input_path: Annotated[Path, typer.Argument(help="File of id<TAB>rating<TAB>text rows.")],
    output_dir: Annotated[Path, typer.Argument(help="Folder for {train,dev,test}.spacy.")],
    seed: Annotated[int, typer.Option("--seed", help="Seed of the subset and split.")] = 0,
    max_docs: Annotated[
        Optional[int], typer.Option("--max-docs", min=0, help="Keep a seeded subset of N rows (0 = all).")
    ] = None,
    lang: Annotated[str, typer.Option("--lang", help="Language of the tokenizer.")] = "en",
) -> None:
    """Bin rated movie-review snippets into 5 classes; write a stratified 80/10/10 split."""
    max_docs = max_docs or None  # 0 keeps everything
    with exit_on_bad_input():
        splits = convert_sentiment5(input_path, output_dir, seed, max_docs, lang)
    cuts = ", ".join(f"{cut:g}" for cut in CUT_POINTS)
    typer.echo(f"Cut points {cuts} (a rating on a cut goes to the more extreme class)")
    typer.echo(f"{'split':<6} {'docs':>6} " + " ".join(f"{c:>13}" for c in CATEGORIES))
    totals = {category: 0 for category in CATEGORIES}
    for name in SPLIT_NAMES:
        counts = {category: 0 for category in CATEGORIES}
        for doc in splits[name]:
            counts[label_of(doc)] += 1
        for category, n in counts.items():
            totals[category] += n
        cells = " ".join(f"{counts[c]:>13,}" for c in CATEGORIES)
        typer.echo(f"{name:<6} {len(splits[name]):>6,} {cells}")
    cells = " ".join(f"{totals[c]:>13,}" for c in CATEGORIES)
    typer.echo(f"{'total':<6} {sum(totals.values()):>6,} {cells}")
    typer.echo(f"Wrote {', '.join(f'{n}.spacy' for n in SPLIT_NAMES)} to {output_dir}")


if __name__ == "__main__":
    typer.run(main)
