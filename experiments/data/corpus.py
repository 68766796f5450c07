"""Build the raw-text corpus the biLM is pretrained on from the fetched assets.

Sources (all under ASSETS_DIR, as written by ``fetch_data.py``):

* ``wiki/summaries_en-us.json``: Wikipedia lead sections, one document each;
* ``bbc/<label>/NNN.txt``: BBC News articles, title line plus paragraphs;
* ``reviews/pang_lee_reviews.csv``: the 1,500 full Pang & Lee movie reviews;
* ``oanc/tagged-en-oanc.txt``: OANC prose as ``word/TAG`` tokens, tags stripped.

Deliberately left out: the downstream data sets (``DOWNSTREAM`` below), the
WNUT-16 tweets, the 4,000 sentence-polarity snippets and the 10,605 Rotten
Tomatoes snippets. Leaving their files out is not enough: the same sentences
can occur inside the sources (a review quoted on Wikipedia, a snippet taken
from one of the full reviews). So every sentence of every downstream set,
train, dev and test alike (stricter than needed: only dev and test matter
for a fair evaluation), is removed from the corpus:

* a corpus line is split into sentences by ``SENTENCE_BREAK`` (after ``.``,
  ``!`` or ``?``, possibly followed by a closing quote or bracket);
* a sentence is dropped when it equals a downstream text, or a sentence of
  one, either exactly (after whitespace collapsing: counted as ``exact``) or
  in normalised form (``normalize_for_match``: lower-cased, punctuation
  removed and whitespace removed entirely, so that the tokenised ``does n't``
  and ``doesn't`` agree: counted as ``normalised``). Only downstream texts
  and sentences of at least ``MIN_SENTENCE_WORDS`` = 4 words take part, so a
  snippet such as "Great ." does not remove every "Great ." in the corpus;
* a whole line is dropped when its normalised form contains the normalised
  form of a downstream text of at least ``MIN_SUBSTRING_WORDS`` = 8 words
  (counted as ``substring``): this catches a snippet quoted inside a longer
  sentence.

A word, for these thresholds, is a whitespace token with a letter or digit.
The counts per source go to ``OUTPUT_DIR/leakage.json``.

Output, plain UTF-8 with one paragraph per line (no tokenisation; the
pretraining step tokenises with spaCy):

* ``OUTPUT_DIR/train.txt``: the training text;
* ``OUTPUT_DIR/dev.txt``: all held-out text, and ``OUTPUT_DIR/dev_<source>.txt``
  the held-out text of each source (``wiki``, ``bbc``, ``reviews``,
  ``oanc``), for a perplexity per source;
* ``OUTPUT_DIR/stats.json``: documents, lines and whitespace tokens per split
  and source; ``OUTPUT_DIR/leakage.json``: what the leakage filter removed.

Documents are de-duplicated (exact copies), cleaned of leakage, shuffled with
a seed, optionally capped at ``--max-docs``, and then each source holds out
``round(n * dev_fraction)`` of its documents (at least one) as dev. Train and
dev are whole documents, so no document straddles the two files.

Usage: python -m experiments.data.corpus assets corpus/pretrain
    [--max-docs N (0 = all)] [--dev-fraction 0.02] [--seed 0]
"""
import csv
import json
import random
import re
from collections import Counter
from pathlib import Path
from dataclasses import dataclass, field
from typing import Annotated, Iterable, Optional

import typer

from experiments.files import write_atomic

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


# --------------------------------------------------------------------------
# The downstream data sets, and removing their sentences from the corpus
# --------------------------------------------------------------------------


def read_wnut_texts(path: Path) -> list[str]:
    """The tweets of a WNUT ``token<TAB>TAG`` file, tokens joined by spaces."""
    texts, tokens = [], []
    for line in read_text_file(path).splitlines():
        token = line.split("\t", 1)[0].strip()
        if token:
            tokens.append(token)
        elif tokens:  # a blank line or a lone tab ends a tweet
            texts.append(" ".join(tokens))
            tokens = []
    if tokens:
        texts.append(" ".join(tokens))
    return texts


def read_polarity_texts(path: Path) -> list[str]:
    """The texts of the ``label,text`` sentence-polarity CSV (BOM-tolerant)."""
    with open(path, encoding="utf-8-sig", newline="") as handle:
        return [row[1] for row in csv.reader(handle) if len(row) >= 2]


def read_rt_texts(path: Path) -> list[str]:
    """The texts of the ``id<TAB>rating<TAB>text`` Rotten Tomatoes file (CRLF)."""
    texts = []
    for line in read_text_file(path).lstrip("\ufeff").splitlines():
        fields = line.split("\t", 2)
        if len(fields) == 3 and fields[2].strip():
            texts.append(fields[2])
    return texts


DOWNSTREAM = {
    "wnut16": ("wnut16/ner.txt", read_wnut_texts),
    "sentence_polarity": ("sentence_polarity/snippets.csv", read_polarity_texts),
    "rt_snippets": ("rt_snippets/movieReviewSnippets_GroundTruth.txt", read_rt_texts),
}

# Downstream texts (and their sentences) shorter than this many words do not
# take part in the sentence match: "Great ." must not remove every "Great .".
MIN_SENTENCE_WORDS = 4
# Downstream texts of at least this many words also remove every corpus line
# that contains them (normalised) as a substring.
MIN_SUBSTRING_WORDS = 8
# Sentence boundary: whitespace after ., ! or ?, or after one of them followed
# by a closing quote or bracket.
SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"'\u201d\u2019)\]])\s+")
_NOT_ALNUM = re.compile(r"[\W_]+")
_HAS_ALNUM = re.compile(r"[^\W_]")


def split_sentences(text: str) -> list[str]:
    """Sentences of a line by ``SENTENCE_BREAK``; empty pieces dropped."""
    return [s for s in SENTENCE_BREAK.split(text.strip()) if s]


def normalize_for_match(text: str) -> str:
    """Lower-cased, with punctuation and all whitespace removed.

    Removing the whitespace too (rather than collapsing it to one space) makes
    tokenised and untokenised copies agree: ``it 's`` / ``it's`` -> ``its``.
    """
    return _NOT_ALNUM.sub("", text.lower())


def count_words(text: str) -> int:
    """Whitespace tokens holding at least one letter or digit."""
    return sum(1 for token in text.split() if _HAS_ALNUM.search(token))


class LeakageFilter:
    """Removes the sentences of the downstream texts from corpus lines.

    See the module docstring for the rules. ``clean_line`` returns the line
    without its leaked sentences (``""`` when nothing is left or the line
    contains a long downstream text) and adds what it removed to ``counts``.
    """

    def __init__(self, texts: Iterable[str]):
        self.exact: set[str] = set()
        self.normalised: set[str] = set()
        long_keys: set[str] = set()
        for text in texts:
            text = normalize_space(text)
            for piece in {text, *split_sentences(text)}:
                if count_words(piece) >= MIN_SENTENCE_WORDS:
                    self.exact.add(piece)
                    self.normalised.add(normalize_for_match(piece))
            if count_words(text) >= MIN_SUBSTRING_WORDS:
                long_keys.add(normalize_for_match(text))
        self.normalised.discard("")
        long_keys.discard("")
        # Substring search: every long key is indexed by its first
        # ``window`` characters; a line is scanned window by window.
        self.window = min((len(key) for key in long_keys), default=0)
        self.by_prefix: dict[str, list[str]] = {}
        for key in sorted(long_keys):
            self.by_prefix.setdefault(key[: self.window], []).append(key)

    def contains_long_text(self, line: str) -> bool:
        """Whether the normalised line contains a normalised long downstream text."""
        if not self.window:
            return False
        norm = normalize_for_match(line)
        get, window = self.by_prefix.get, self.window
        for start in range(len(norm) - window + 1):
            keys = get(norm[start : start + window])
            if keys and any(norm.startswith(key, start) for key in keys):
                return True
        return False

    def clean_line(self, line: str, counts: Counter) -> str:
        kept = []
        for sentence in split_sentences(line):
            if sentence in self.exact:
                counts["exact_sentences"] += 1
                counts["removed_tokens"] += len(sentence.split())
            elif normalize_for_match(sentence) in self.normalised:
                counts["normalised_sentences"] += 1
                counts["removed_tokens"] += len(sentence.split())
            else:
                kept.append(sentence)
        cleaned = " ".join(kept)
        if cleaned and self.contains_long_text(cleaned):
            counts["substring_lines"] += 1
            counts["removed_tokens"] += len(cleaned.split())
            return ""
        return cleaned


def load_downstream_texts(assets_dir: Path) -> dict[str, list[str]]:
    """Every text of every downstream set, all splits, by set name."""
    texts = {}
    for name, (rel_path, reader) in DOWNSTREAM.items():
        path = assets_dir / rel_path
        if not path.exists():
            raise FileNotFoundError(
                f"{path} is missing (needed to keep downstream sentences out of the "
                f"corpus): run experiments/data/fetch.py {assets_dir} first"
            )
        texts[name] = reader(path)
    return texts


def remove_leakage(
    docs: list[tuple[str, Document]], leakage_filter: LeakageFilter
) -> tuple[list[tuple[str, Document]], dict[str, Counter]]:
    """Docs with downstream sentences removed (empty lines and docs dropped).

    Returns the cleaned docs and, per source, the counts of removed exact and
    normalised sentence matches, substring lines, tokens and emptied docs.
    """
    counts: dict[str, Counter] = {source: Counter() for source in SOURCES}
    cleaned_docs = []
    for source, doc in docs:
        counter = counts.setdefault(source, Counter())
        lines = [leakage_filter.clean_line(line, counter) for line in doc]
        lines = [line for line in lines if line]
        if lines:
            cleaned_docs.append((source, lines))
        else:
            counter["emptied_docs"] += 1
    return cleaned_docs, counts


def load_documents(assets_dir: Path) -> tuple[list[tuple[str, Document]], int]:
    """Every ``(source, document)`` pair, exact duplicates dropped (first kept).

    Returns the documents and the number of duplicates dropped.
    """
    seen: set[tuple[str, ...]] = set()
    docs: list[tuple[str, Document]] = []
    duplicates = 0
    for source, (rel_path, reader) in SOURCES.items():
        path = assets_dir / rel_path
        if not path.exists():
            raise FileNotFoundError(
                f"{path} is missing: run experiments/data/fetch.py {assets_dir} first"
            )
        for doc in reader(path):
            key = tuple(doc)
            if key in seen:
                duplicates += 1
            else:
                seen.add(key)
                docs.append((source, doc))
    return docs, duplicates


def split_documents(
    docs: list[tuple[str, Document]],
    dev_fraction: float = 0.02,
    seed: int = 0,
    max_docs: Optional[int] = None,
) -> tuple[list[tuple[str, Document]], list[tuple[str, Document]]]:
    """Shuffle whole documents with ``seed``, cap at ``max_docs``, hold out dev per source.

    Each source's dev set is its first ``round(n * dev_fraction)`` documents
    in the shuffled order (``n`` its documents after the cap), but at least
    one when ``dev_fraction > 0`` and the source has two or more documents.
    Train keeps the shuffled order; dev is grouped by source (``SOURCES`` order).
    """
    if not 0 <= dev_fraction < 1:
        raise ValueError(f"dev_fraction must be in [0, 1), got {dev_fraction}")
    if max_docs is not None and max_docs < 1:
        raise ValueError(f"max_docs must be at least 1, got {max_docs}")
    docs = list(docs)
    random.Random(seed).shuffle(docs)
    if max_docs is not None:
        docs = docs[:max_docs]
    n_docs = Counter(source for source, _doc in docs)
    n_dev = {}
    for source, n in n_docs.items():
        n_dev[source] = round(n * dev_fraction)
        if dev_fraction > 0 and n >= 2:
            n_dev[source] = max(n_dev[source], 1)
    train, dev_by_source = [], {}
    for source, doc in docs:
        held_out = dev_by_source.setdefault(source, [])
        if len(held_out) < n_dev[source]:
            held_out.append((source, doc))
        else:
            train.append((source, doc))
    order = list(SOURCES) + sorted(set(dev_by_source) - set(SOURCES))
    dev = [item for source in order for item in dev_by_source.get(source, [])]
    return train, dev


def to_text(docs: Iterable[tuple[str, Document]]) -> str:
    """One paragraph per line, documents one after another."""
    return "".join(line + "\n" for _source, doc in docs for line in doc)


def count_by_source(docs: Iterable[tuple[str, Document]]) -> dict[str, Counter]:
    """Documents, lines and whitespace tokens per source."""
    counts: dict[str, Counter] = {}
    for source, doc in docs:
        counter = counts.setdefault(source, Counter())
        counter["docs"] += 1
        counter["lines"] += len(doc)
        counter["tokens"] += sum(len(line.split()) for line in doc)
    return counts


@dataclass
class CorpusReport:
    """What ``prepare_corpus`` wrote: counts per split and source, and the leakage removed."""

    counts: dict[str, dict[str, Counter]] = field(default_factory=dict)
    leakage: dict[str, Counter] = field(default_factory=dict)
    duplicates: int = 0
    # The sources reported on, in this order (corpus v2 adds its own after these).
    sources: tuple[str, ...] = tuple(SOURCES)
    # Repeated lines dropped per source (corpus v2's new sources only).
    duplicate_lines: dict[str, int] = field(default_factory=dict)

    def stats_json(self) -> dict:
        stats: dict = {}
        for split, by_source in self.counts.items():
            total: Counter = Counter()
            stats[split] = {}
            for source in self.sources:
                counter = by_source.get(source, Counter())
                total.update(counter)
                stats[split][source] = {k: counter[k] for k in ("docs", "lines", "tokens")}
            stats[split]["total"] = {k: total[k] for k in ("docs", "lines", "tokens")}
        stats["duplicate_docs_removed"] = self.duplicates
        return stats

    def leakage_json(self) -> dict:
        keys = (
            "exact_sentences", "normalised_sentences", "substring_lines",
            "removed_tokens", "emptied_docs",
        )  # fmt: skip
        per_source = {
            source: {k: self.leakage.get(source, Counter())[k] for k in keys}
            for source in self.sources
        }
        total = {k: sum(c[k] for c in per_source.values()) for k in keys}
        return {
            "rules": {
                "downstream_sets": list(DOWNSTREAM),
                "splits_checked": "all (train, dev and test)",
                "min_sentence_words": MIN_SENTENCE_WORDS,
                "min_substring_words": MIN_SUBSTRING_WORDS,
                "normalisation": "lower-case, punctuation and whitespace removed",
            },
            "per_source": per_source,
            "total": total,
        }


def corpus_split(assets_dir: Path, max_docs: Optional[int] = None, dev_fraction: float = 0.02, seed: int = 0):
    """The documents of the pretraining text, cleaned of downstream sentences and split.

    Returns (train, dev, leakage, duplicates). `convert_pos.py` reads the OANC
    documents this holds out (with the shipped biLM's settings) as its test text.
    """
    assets_dir = Path(assets_dir)
    downstream = load_downstream_texts(assets_dir)
    docs, duplicates = load_documents(assets_dir)
    leakage_filter = LeakageFilter(text for texts in downstream.values() for text in texts)
    docs, leakage = remove_leakage(docs, leakage_filter)
    train, dev = split_documents(docs, dev_fraction=dev_fraction, seed=seed, max_docs=max_docs)
    return train, dev, leakage, duplicates


def prepare_corpus(
    assets_dir: Path,
    output_dir: Path,
    max_docs: Optional[int] = None,
    dev_fraction: float = 0.02,
    seed: int = 0,
) -> CorpusReport:
    """Write train.txt, dev.txt, dev_<source>.txt, stats.json and leakage.json."""
    train, dev, leakage, duplicates = corpus_split(assets_dir, max_docs, dev_fraction, seed)
    report = CorpusReport(
        counts={"train": count_by_source(train), "dev": count_by_source(dev)},
        leakage=leakage,
        duplicates=duplicates,
    )
    output_dir = Path(output_dir)
    write_atomic(output_dir / "train.txt", to_text(train))
    write_atomic(output_dir / "dev.txt", to_text(dev))
    for source in SOURCES:
        source_dev = [item for item in dev if item[0] == source]
        write_atomic(output_dir / f"dev_{source}.txt", to_text(source_dev))
    write_atomic(output_dir / "stats.json", json.dumps(report.stats_json(), indent=2) + "\n")
    write_atomic(output_dir / "leakage.json", json.dumps(report.leakage_json(), indent=2) + "\n")
    return report


def main(
    assets_dir: Annotated[Path, typer.Argument(help="Folder fetch_data.py wrote into.")],
    output_dir: Annotated[
        Path, typer.Argument(help="Folder for train.txt, dev*.txt and the stats.")
    ],
    max_docs: Annotated[
        Optional[int],
        typer.Option("--max-docs", help="Keep at most this many documents (0 = all)."),
    ] = None,
    dev_fraction: Annotated[
        float,
        typer.Option("--dev-fraction", help="Share of each source's documents held out as dev."),
    ] = 0.02,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the document shuffle.")] = 0,
) -> None:
    """Write the biLM pretraining text (train.txt, dev.txt, dev_<source>.txt) from the assets."""
    max_docs = max_docs or None  # 0 keeps everything
    try:
        report = prepare_corpus(assets_dir, output_dir, max_docs, dev_fraction, seed)
    except (FileNotFoundError, ValueError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(code=1)
    echo_report(report, output_dir)


def echo_report(report: CorpusReport, output_dir: Path) -> None:
    """Print the duplicates, the leakage removed and the counts per split and source."""
    leakage = report.leakage_json()
    typer.echo(f"Exact duplicate documents removed: {report.duplicates:,}")
    typer.echo(
        f"Leakage removed (downstream: {', '.join(DOWNSTREAM)}; all their splits; "
        f">= {MIN_SENTENCE_WORDS} words per sentence, >= {MIN_SUBSTRING_WORDS} per substring):"
    )
    typer.echo(
        f"{'source':<8} {'exact':>7} {'normal.':>8} {'substr.':>8} {'tokens':>8} {'docs':>5}"
    )
    for source, row in [*leakage["per_source"].items(), ("total", leakage["total"])]:
        typer.echo(
            f"{source:<8} {row['exact_sentences']:>7,} {row['normalised_sentences']:>8,} "
            f"{row['substring_lines']:>8,} {row['removed_tokens']:>8,} {row['emptied_docs']:>5,}"
        )
    typer.echo(f"{'split':<6} {'source':<8} {'docs':>8} {'lines':>8} {'tokens':>10}")
    for split, by_source in report.stats_json().items():
        if not isinstance(by_source, dict):
            continue
        for source, row in by_source.items():
            typer.echo(
                f"{split:<6} {source:<8} {row['docs']:>8,} {row['lines']:>8,} {row['tokens']:>10,}"
            )
    typer.echo(
        f"Wrote train.txt, dev.txt, {', '.join(f'dev_{s}.txt' for s in report.sources)}, "
        f"stats.json and leakage.json to {output_dir}"
    )


if __name__ == "__main__":
    typer.run(main)
