"""Build corpus v1, the raw-text corpus the shipped biLM is pretrained on, from the fetched assets.

Sources (``experiments.data.sources.ASSET_SOURCES``, under ASSETS_DIR as
``python -m experiments.data.fetch`` writes them): Wikipedia lead sections (``wiki``),
BBC News articles (``bbc``), the 1,500 full Pang & Lee movie reviews (``reviews``) and the
tagged OANC sample, tags stripped (``oanc``).

Deliberately left out: the downstream task sets (``experiments.data.tasks.DOWNSTREAM``:
the WNUT-16 tweets, the 4,000 sentence-polarity snippets and the 10,605 Rotten Tomatoes
snippets). Every sentence of every one of them, all splits, is also removed from the
sources' text (``experiments.data.leakage``); the counts per source go to
``OUTPUT_DIR/leakage.json``.

Output, plain UTF-8 with one paragraph per line (no tokenisation; the
pretraining step tokenises with spaCy):

* ``OUTPUT_DIR/train.txt``: the training text;
* ``OUTPUT_DIR/dev.txt``: all held-out text, and ``OUTPUT_DIR/dev_<source>.txt``
  the held-out text of each source, for a perplexity per source;
* ``OUTPUT_DIR/stats.json``: documents, lines and whitespace tokens per split
  and source; ``OUTPUT_DIR/leakage.json``: what the leakage filter removed.

Documents are de-duplicated (exact copies), cleaned of leakage, shuffled with
a seed, optionally capped at ``--max-docs``, and then each source holds out
``round(n * dev_fraction)`` of its documents (at least one) as dev
(``experiments.data.splits.split_documents``). Train and dev are whole documents,
so no document straddles the two files. A damaged source file (a cut JSON, a list
where an object belongs, bytes that are not UTF-8) ends the command in one line naming it.

Usage: python -m experiments.data.corpus assets corpus/pretrain
    [--max-docs N (0 = all)] [--dev-fraction 0.02] [--seed 0]
"""

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Optional

import typer

from experiments.data.inputs import exit_on_bad_input
from experiments.data.leakage import (
    MIN_SENTENCE_WORDS,
    MIN_SUBSTRING_WORDS,
    downstream_filter,
    leakage_json,
    remove_leakage,
)
from experiments.data.sources import ASSET_SOURCES
from experiments.data.splits import count_by_source, split_documents, to_text
from experiments.data.tasks import DOWNSTREAM
from experiments.data.text import Document
from experiments.errors import ExperimentError
from experiments.files import write_atomic


def load_documents(assets_dir: Path) -> tuple[list[tuple[str, Document]], int]:
    """Every ``(source, document)`` pair, exact duplicates dropped (first kept).

    Returns the documents and the number of duplicates dropped.
    """
    seen: set[tuple[str, ...]] = set()
    docs: list[tuple[str, Document]] = []
    duplicates = 0
    for source, (rel_path, reader) in ASSET_SOURCES.items():
        path = assets_dir / rel_path
        if not path.exists():
            raise ExperimentError(
                path,
                expected=f"the {source} source",
                found="nothing (it is missing)",
                fix=f"run `python -m experiments.data.fetch {assets_dir}` first",
            )
        for doc in reader(path):
            key = tuple(doc)
            if key in seen:
                duplicates += 1
            else:
                seen.add(key)
                docs.append((source, doc))
    return docs, duplicates


@dataclass
class CorpusReport:
    """What ``prepare_corpus`` wrote: counts per split and source, and the leakage removed."""

    counts: dict[str, dict[str, Counter]] = field(default_factory=dict)
    leakage: dict[str, Counter] = field(default_factory=dict)
    duplicates: int = 0
    # The sources reported on, in this order (corpus v2 adds its own after these).
    sources: tuple[str, ...] = tuple(ASSET_SOURCES)
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
        return leakage_json(self.leakage, self.sources)


def corpus_split(assets_dir: Path, max_docs: Optional[int] = None, dev_fraction: float = 0.02, seed: int = 0):
    """The documents of the pretraining text, cleaned of downstream sentences and split.

    Returns (train, dev, leakage, duplicates). ``experiments.convert.pos`` reads the OANC
    documents this holds out (with the shipped biLM's settings) as its test text.
    """
    assets_dir = Path(assets_dir)
    leakage_filter = downstream_filter(assets_dir)
    docs, duplicates = load_documents(assets_dir)
    docs, leakage = remove_leakage(docs, leakage_filter)
    train, dev = split_documents(docs, dev_fraction, seed, max_docs, source_order=tuple(ASSET_SOURCES))
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
    for source in ASSET_SOURCES:
        source_dev = [item for item in dev if item[0] == source]
        write_atomic(output_dir / f"dev_{source}.txt", to_text(source_dev))
    write_atomic(output_dir / "stats.json", json.dumps(report.stats_json(), indent=2) + "\n")
    write_atomic(output_dir / "leakage.json", json.dumps(report.leakage_json(), indent=2) + "\n")
    return report


def main(
    assets_dir: Annotated[Path, typer.Argument(help="Folder `experiments.data.fetch` wrote into.")],
    output_dir: Annotated[Path, typer.Argument(help="Folder for train.txt, dev*.txt and the stats.")],
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
    with exit_on_bad_input():
        report = prepare_corpus(assets_dir, output_dir, max_docs, dev_fraction, seed)
    echo_report(report, output_dir)


def echo_report(report: CorpusReport, output_dir: Path) -> None:
    """Print the duplicates, the leakage removed and the counts per split and source."""
    leakage = report.leakage_json()
    typer.echo(f"Exact duplicate documents removed: {report.duplicates:,}")
    typer.echo(
        f"Leakage removed (downstream: {', '.join(DOWNSTREAM)}; all their splits; "
        f">= {MIN_SENTENCE_WORDS} words per sentence, >= {MIN_SUBSTRING_WORDS} per substring):"
    )
    typer.echo(f"{'source':<8} {'exact':>7} {'normal.':>8} {'substr.':>8} {'tokens':>8} {'docs':>5}")
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
            typer.echo(f"{split:<6} {source:<8} {row['docs']:>8,} {row['lines']:>8,} {row['tokens']:>10,}")
    typer.echo(
        f"Wrote train.txt, dev.txt, {', '.join(f'dev_{s}.txt' for s in report.sources)}, "
        f"stats.json and leakage.json to {output_dir}"
    )


if __name__ == "__main__":
    typer.run(main)
