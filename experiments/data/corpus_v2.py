"""Build corpus v2: corpus v1 plus the sources of ``experiments.data.sources``.

1. Corpus v1 exactly as ``experiments.data.corpus`` builds it from the same assets
   with the same dev fraction and seed (``corpus_split``): its train and dev
   documents are v1's, so v1's dev text is still dev here and a biLM trained on
   v2 can be compared with one trained on v1 on v1's dev files.
2. The new sources, read straight out of their package files (sha256 checked,
   see ``read_sources``), in ``SOURCES`` order:

   * a document equal to an earlier one (in v1 or before it in v2) is dropped;
   * a line of at least ``MIN_DEDUP_WORDS`` words whose normalised form
     (``normalize_for_match``: case, punctuation and spaces ignored) equals a line
     seen before, in v1 or earlier in v2, is dropped (``duplicate_lines`` in
     stats.json): WikiText paragraphs that repeat v1's Wikipedia leads, repeated
     tweets and snippets. Shorter lines ("what?" in dialogue) may repeat;
   * v1's leakage filter, with the same rules and every text of every downstream
     set (WNUT-16 tweets, sentence-polarity and Rotten Tomatoes snippets), counts
     per source in leakage.json;
   * ``split_documents`` with the same dev fraction and seed holds out
     ``round(n * dev_fraction)`` of each new source's documents (at least one).
3. train.txt is v1's and the new training documents shuffled together (seeded);
   dev.txt is v1's dev text followed by each new source's, and
   ``dev_<source>.txt`` holds each source's (v1's four files are byte-identical
   to v1's).

Output, in the format of corpus v1: ``train.txt``, ``dev.txt``, ``train_<source>.txt``,
``dev_<source>.txt``, ``stats.json`` (documents, lines, whitespace tokens per
split and source), ``leakage.json``.

Usage: python -m experiments.data.corpus_v2 assets corpus/v2/pretrain
    [--packages assets/packages] [--dev-fraction 0.02] [--seed 0]
"""

import hashlib
import json
import random
from collections import Counter
from pathlib import Path
from typing import Annotated, Iterable, Optional

import typer

from experiments.data.corpus import CorpusReport, corpus_split, echo_report
from experiments.data.inputs import exit_on_bad_input
from experiments.data.leakage import downstream_filter, remove_leakage
from experiments.data.sources import ASSET_SOURCES, SOURCES, Source, read_sources
from experiments.data.splits import count_by_source, split_documents, to_text
from experiments.data.text import Document, count_words, normalize_for_match
from experiments.files import write_atomic

# Where weasel puts the package files, relative to the assets folder.
PACKAGES_DIR = "packages"
# Lines shorter than this (in words with a letter or digit) may repeat.
MIN_DEDUP_WORDS = 4


def _line_key(line: str) -> bytes:
    """A fixed-size key of a line's normalised form (8 bytes instead of the line)."""
    return hashlib.blake2b(normalize_for_match(line).encode("utf-8"), digest_size=8).digest()


class Deduplicator:
    """Drops repeated documents and repeated long lines, counting both per source."""

    def __init__(self, seen_docs: Iterable[Document]):
        self.docs: set[tuple[str, ...]] = set()
        self.lines: set[bytes] = set()
        for doc in seen_docs:
            self.docs.add(tuple(doc))
            self.lines.update(_line_key(line) for line in doc if count_words(line) >= MIN_DEDUP_WORDS)
        self.duplicate_docs = 0
        self.duplicate_lines: Counter = Counter()

    def __call__(self, source: str, doc: Document) -> Optional[Document]:
        """The document without its repeated long lines; None if it was seen or is emptied."""
        if tuple(doc) in self.docs:
            self.duplicate_docs += 1
            return None
        self.docs.add(tuple(doc))
        kept = []
        for line in doc:
            if count_words(line) >= MIN_DEDUP_WORDS:
                key = _line_key(line)
                if key in self.lines:
                    self.duplicate_lines[source] += 1
                    continue
                self.lines.add(key)
            kept.append(line)
        return kept or None


def corpus_v2_split(
    assets_dir: Path,
    packages_dir: Optional[Path] = None,
    dev_fraction: float = 0.02,
    seed: int = 0,
    sources: tuple[Source, ...] = SOURCES,
):
    """Train and dev documents of corpus v2, and what was removed.

    Returns ``(train, dev, report)``: ``(source, document)`` lists and a
    ``CorpusReport`` whose ``duplicates`` counts documents, with the removed
    duplicate lines per source in ``duplicate_lines``.
    """
    assets_dir = Path(assets_dir)
    packages_dir = Path(packages_dir) if packages_dir is not None else assets_dir / PACKAGES_DIR
    v1_train, v1_dev, leakage, v1_duplicates = corpus_split(assets_dir, None, dev_fraction, seed)
    dedup = Deduplicator(doc for _source, doc in v1_train + v1_dev)
    new_docs = []
    for name, docs in read_sources(packages_dir, sources):
        for doc in docs:
            kept = dedup(name, doc)
            if kept is not None:
                new_docs.append((name, kept))
    new_docs, new_leakage = remove_leakage(new_docs, downstream_filter(assets_dir))
    new_train, new_dev = split_documents(new_docs, dev_fraction=dev_fraction, seed=seed)
    names = [source.name for source in sources]
    new_dev.sort(key=lambda item: names.index(item[0]))  # stable: keeps the order within a source
    train = v1_train + new_train
    random.Random(seed).shuffle(train)
    dev = v1_dev + new_dev
    for name in names:
        leakage[name] = new_leakage.get(name, Counter())
    report = CorpusReport(
        counts={"train": count_by_source(train), "dev": count_by_source(dev)},
        leakage=leakage,
        duplicates=v1_duplicates + dedup.duplicate_docs,
        sources=(*ASSET_SOURCES, *names),
        duplicate_lines={name: dedup.duplicate_lines[name] for name in names},
    )
    return train, dev, report


def prepare_corpus_v2(
    assets_dir: Path,
    output_dir: Path,
    packages_dir: Optional[Path] = None,
    dev_fraction: float = 0.02,
    seed: int = 0,
    sources: tuple[Source, ...] = SOURCES,
) -> CorpusReport:
    """Write train.txt, dev.txt, train_<source>.txt and dev_<source>.txt (each source's share:
    unlabelled in-domain text for tuning a biLM, and its held-out part), stats.json and
    leakage.json."""
    train, dev, report = corpus_v2_split(assets_dir, packages_dir, dev_fraction, seed, sources)
    output_dir = Path(output_dir)
    write_atomic(output_dir / "train.txt", to_text(train))
    write_atomic(output_dir / "dev.txt", to_text(dev))
    for source in report.sources:
        write_atomic(output_dir / f"train_{source}.txt", to_text(item for item in train if item[0] == source))
        write_atomic(output_dir / f"dev_{source}.txt", to_text(item for item in dev if item[0] == source))
    stats = report.stats_json()
    stats["duplicate_lines_removed"] = report.duplicate_lines
    write_atomic(output_dir / "stats.json", json.dumps(stats, indent=2) + "\n")
    write_atomic(output_dir / "leakage.json", json.dumps(report.leakage_json(), indent=2) + "\n")
    return report


def main(
    assets_dir: Annotated[Path, typer.Argument(help="Folder `experiments.data.fetch` wrote into.")],
    output_dir: Annotated[Path, typer.Argument(help="Folder for train.txt, dev*.txt and the stats.")],
    packages_dir: Annotated[
        Optional[Path], typer.Option("--packages", help="The package files (default: ASSETS_DIR/packages).")
    ] = None,
    dev_fraction: Annotated[
        float, typer.Option("--dev-fraction", help="Share of each source's documents held out as dev.")
    ] = 0.02,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the document shuffle.")] = 0,
) -> None:
    """Write corpus v2 (corpus v1 plus the package sources) for pretraining the biLM."""
    with exit_on_bad_input():
        report = prepare_corpus_v2(assets_dir, output_dir, packages_dir, dev_fraction, seed)
    lines = ", ".join(f"{name} {n:,}" for name, n in report.duplicate_lines.items())
    typer.echo(f"Repeated lines of >= {MIN_DEDUP_WORDS} words removed from the new sources: {lines}")
    echo_report(report, output_dir)
    typer.echo(f"and each source's training text: {', '.join(f'train_{s}.txt' for s in report.sources)}")


if __name__ == "__main__":
    typer.run(main)
