"""Build the raw-text corpus the biLM is pretrained on from the fetched assets.

Sources (all under ASSETS_DIR, as written by ``fetch_data.py``):

* ``wiki/summaries_en-us.json``: Wikipedia lead sections, one document each;
* ``bbc/<label>/NNN.txt``: BBC News articles, title line plus paragraphs;
* ``reviews/pang_lee_reviews.csv``: the 1,500 full Pang & Lee movie reviews;
* ``oanc/tagged-en-oanc.txt``: OANC prose as ``word/TAG`` tokens, tags stripped.

Deliberately left out: the 4,000 sentence-polarity snippets and the WNUT
tweets, which are the downstream evaluation sets.

Output: ``OUTPUT_DIR/train.txt`` and ``OUTPUT_DIR/dev.txt``, plain UTF-8 with
one paragraph per line (no tokenisation; the pretraining step tokenises with
spaCy). Documents are de-duplicated, shuffled with a seed and split into
train and dev as whole documents, so no document straddles the two files.

Usage: python scripts/prepare_corpus.py assets corpus/pretrain
    [--max-docs N] [--dev-fraction 0.02] [--seed 0]
"""
import csv
import json
import random
from collections import Counter
from pathlib import Path
from typing import Annotated, Iterable, Optional

import typer

from _split import write_atomic

# A document is a list of paragraphs; each paragraph becomes one output line.
Document = list[str]

# The reviews and the OANC sample come one sentence per line with no paragraph
# marks; consecutive sentences are joined into paragraph-sized lines of this
# many sentences (which also mends OANC's frequent bad splits, "Ms ." | "X").
SENTENCES_PER_LINE = 5
# The OANC sample is one running text with no document boundaries: it is cut
# into pseudo-documents of this many consecutive sentences for the shuffle.
OANC_SENTENCES_PER_DOC = 20


def normalize_space(text: str) -> str:
    """Collapse every run of whitespace to one space and trim the ends."""
    return " ".join(text.split())


def group_lines(sentences: list[str], size: int) -> list[str]:
    """Join consecutive non-empty sentences into lines of ``size`` sentences."""
    sentences = [s for s in (normalize_space(s) for s in sentences) if s]
    return [" ".join(sentences[i : i + size]) for i in range(0, len(sentences), size)]


def strip_pos_tag(token: str) -> str:
    """``word/TAG`` -> ``word``. Only the last ``/TAG`` goes (``and/or/CC`` -> ``and/or``).

    A token without a slash, or whose word part would be empty, is kept as is.
    OANC writes a literal slash inside a word as ``&slash;``; it is restored.
    """
    word, slash, _tag = token.rpartition("/")
    if not slash or not word:
        word = token
    return word.replace("&slash;", "/")


def strip_tagged_line(line: str) -> str:
    """A line of ``word/TAG`` tokens as plain text, tokens joined by spaces."""
    return " ".join(strip_pos_tag(token) for token in line.split())


def read_wiki(path: Path) -> list[Document]:
    """One document per Wikipedia article: the paragraphs of its lead extract."""
    articles = json.loads(path.read_text(encoding="utf-8"))
    docs = []
    for article in articles.values():
        extract = str(article.get("extract") or "")
        paragraphs = [normalize_space(p) for p in extract.split("\n")]
        paragraphs = [p for p in paragraphs if p]
        if paragraphs:
            docs.append(paragraphs)
    return docs


def read_text_file(path: Path) -> str:
    """A text file as UTF-8, falling back to Windows-1252 for legacy bytes."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252")


def read_bbc(folder: Path) -> list[Document]:
    """One document per BBC article: its title line followed by its paragraphs."""
    docs = []
    for path in sorted(folder.glob("*/*.txt")):
        lines = [normalize_space(line) for line in read_text_file(path).splitlines()]
        lines = [line for line in lines if line]
        if lines:
            docs.append(lines)
    return docs


def read_reviews(path: Path) -> list[Document]:
    """One document per full movie review (CSV ``label,text``; the label is dropped)."""
    docs = []
    with open(path, encoding="utf-8-sig", newline="") as handle:
        for row in csv.reader(handle):
            if len(row) < 2:
                continue
            lines = group_lines(row[1].splitlines(), SENTENCES_PER_LINE)
            if lines:
                docs.append(lines)
    return docs


def read_oanc(path: Path) -> list[Document]:
    """The tagged OANC sample, tags stripped, cut into pseudo-documents."""
    sentences = [
        strip_tagged_line(line)
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    docs = []
    for start in range(0, len(sentences), OANC_SENTENCES_PER_DOC):
        block = sentences[start : start + OANC_SENTENCES_PER_DOC]
        docs.append(group_lines(block, SENTENCES_PER_LINE))
    return docs


SOURCES = {
    "wiki": ("wiki/summaries_en-us.json", read_wiki),
    "bbc": ("bbc", read_bbc),
    "reviews": ("reviews/pang_lee_reviews.csv", read_reviews),
    "oanc": ("oanc/tagged-en-oanc.txt", read_oanc),
}


def load_documents(assets_dir: Path) -> list[tuple[str, Document]]:
    """Every ``(source, document)`` pair, exact duplicates dropped (first kept)."""
    seen: set[tuple[str, ...]] = set()
    docs: list[tuple[str, Document]] = []
    for source, (rel_path, reader) in SOURCES.items():
        path = assets_dir / rel_path
        if not path.exists():
            raise FileNotFoundError(
                f"{path} is missing: run scripts/fetch_data.py {assets_dir} first"
            )
        for doc in reader(path):
            key = tuple(doc)
            if key not in seen:
                seen.add(key)
                docs.append((source, doc))
    return docs


def split_documents(
    docs: list[tuple[str, Document]],
    dev_fraction: float = 0.02,
    seed: int = 0,
    max_docs: Optional[int] = None,
) -> tuple[list[tuple[str, Document]], list[tuple[str, Document]]]:
    """Shuffle whole documents with ``seed``, cap at ``max_docs``, cut off dev.

    Dev gets ``round(n * dev_fraction)`` documents, but at least one when
    ``dev_fraction > 0`` and there are two or more documents.
    """
    if not 0 <= dev_fraction < 1:
        raise ValueError(f"dev_fraction must be in [0, 1), got {dev_fraction}")
    if max_docs is not None and max_docs < 1:
        raise ValueError(f"max_docs must be at least 1, got {max_docs}")
    docs = list(docs)
    random.Random(seed).shuffle(docs)
    if max_docs is not None:
        docs = docs[:max_docs]
    n_dev = round(len(docs) * dev_fraction)
    if dev_fraction > 0 and len(docs) >= 2:
        n_dev = max(n_dev, 1)
    return docs[n_dev:], docs[:n_dev]


def to_text(docs: Iterable[tuple[str, Document]]) -> str:
    """One paragraph per line, documents one after another."""
    return "".join(line + "\n" for _source, doc in docs for line in doc)


def count_by_source(docs: Iterable[tuple[str, Document]]) -> dict[str, Counter]:
    """Documents, lines and whitespace-separated words per source."""
    counts: dict[str, Counter] = {}
    for source, doc in docs:
        counter = counts.setdefault(source, Counter())
        counter["docs"] += 1
        counter["lines"] += len(doc)
        counter["words"] += sum(len(line.split()) for line in doc)
    return counts


def prepare_corpus(
    assets_dir: Path,
    output_dir: Path,
    max_docs: Optional[int] = None,
    dev_fraction: float = 0.02,
    seed: int = 0,
) -> dict[str, dict[str, Counter]]:
    """Write ``train.txt`` and ``dev.txt``; return the counts per split and source."""
    docs = load_documents(Path(assets_dir))
    train, dev = split_documents(docs, dev_fraction=dev_fraction, seed=seed, max_docs=max_docs)
    output_dir = Path(output_dir)
    write_atomic(output_dir / "train.txt", to_text(train))
    write_atomic(output_dir / "dev.txt", to_text(dev))
    return {"train": count_by_source(train), "dev": count_by_source(dev)}


def main(
    assets_dir: Annotated[Path, typer.Argument(help="Folder fetch_data.py wrote into.")],
    output_dir: Annotated[Path, typer.Argument(help="Folder for train.txt and dev.txt.")],
    max_docs: Annotated[
        Optional[int], typer.Option("--max-docs", help="Keep at most this many documents (0 = all).")
    ] = None,
    dev_fraction: Annotated[
        float, typer.Option("--dev-fraction", help="Share of documents held out as dev.")
    ] = 0.02,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the document shuffle.")] = 0,
) -> None:
    """Write the biLM pretraining text (train.txt, dev.txt) from the assets."""
    max_docs = max_docs or None  # 0 keeps everything
    try:
        counts = prepare_corpus(assets_dir, output_dir, max_docs, dev_fraction, seed)
    except (FileNotFoundError, ValueError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(code=1)
    header = f"{'split':<6} {'source':<8} {'docs':>8} {'lines':>8} {'words':>10}"
    typer.echo(header)
    for split, by_source in counts.items():
        total: Counter = Counter()
        for source in SOURCES:
            counter = by_source.get(source, Counter())
            total.update(counter)
            typer.echo(
                f"{split:<6} {source:<8} {counter['docs']:>8,} {counter['lines']:>8,} "
                f"{counter['words']:>10,}"
            )
        typer.echo(
            f"{split:<6} {'total':<8} {total['docs']:>8,} {total['lines']:>8,} "
            f"{total['words']:>10,}"
        )
    typer.echo(f"Wrote {output_dir / 'train.txt'} and {output_dir / 'dev.txt'}")


if __name__ == "__main__":
    typer.run(main)
